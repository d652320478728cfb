"""st.viz.timeline(spans, marks): work on device streams as bars against time, one row per stream.

A span is ``(stream, label, start_ms, end_ms)``: something that ran on a stream (a copy, a kernel), timed
by the device (CUDA events recorded around it on that stream, ``Event.elapsed_time`` from one reference
event). A mark is ``(stream, label, at_ms)``: a moment on a stream's row (an allocation, a cache hit, an
event being recorded or waited on). Rows appear in the order their streams are first named.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ._mpl import new_figure
from ._style import tensor_colour

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LABEL_PT = 8.0
PLOT_INCHES = 8.3  # the plot's width in the 9.5 in figure, to tell whether a label fits in its bar
MARK_COLOUR = "#d62728"


def _checked(items: Iterable[Sequence], n: int, what: str) -> list[tuple]:
    out = []
    for k, item in enumerate(items):
        if not isinstance(item, Sequence) or isinstance(item, str) or len(item) != n:
            raise TypeError(f"timeline(): {what}[{k}] must be a tuple of {n} items, got {item!r}")
        for v in item[2:]:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"timeline(): {what}[{k}] has a time {v!r}; times are numbers (ms)")
        out.append(tuple(item))
    return out


def timeline(spans: Iterable[Sequence], marks: Iterable[Sequence] = (), *, title: str = "streams") -> Figure:
    """Bars of the spans on one row per stream against time in ms, marks as red ticks with their labels."""
    span_list = _checked(spans, 4, "spans")
    mark_list = _checked(marks, 3, "marks")
    for k, (_, label, t0, t1) in enumerate(span_list):
        if t1 < t0:
            raise ValueError(
                f"timeline(): spans[{k}] ({label!r}) ends at {t1} ms, before it starts at {t0} ms"
            )
    streams = list(dict.fromkeys([s[0] for s in span_list] + [m[0] for m in mark_list]))
    row = {name: k for k, name in enumerate(streams)}
    fig = new_figure(9.5, 1.2 + 0.9 * max(len(streams), 1))
    ax = fig.add_subplot()
    lo = min([s[2] for s in span_list] + [m[2] for m in mark_list], default=0.0)
    hi = max([s[3] for s in span_list] + [m[2] for m in mark_list], default=1.0)
    inches_per_ms = PLOT_INCHES / max(hi - lo, 1e-9)
    key = []  # spans too short for their label: numbered on the bar, named under the plot
    for k, (stream, label, t0, t1) in enumerate(span_list):
        y = row[stream]
        ax.barh(y, t1 - t0, left=t0, height=0.5, color=tensor_colour(k), edgecolor="#333333", linewidth=0.5)
        fits = (t1 - t0) * inches_per_ms >= (len(label) + 2) * (LABEL_PT - 0.5) * 0.6 / 72
        if fits:
            ax.text((t0 + t1) / 2, y, label, ha="center", va="center", fontsize=LABEL_PT - 0.5, clip_on=True)
        else:
            key.append(f"{len(key) + 1}: {label} ({stream}, {t1 - t0:.3f} ms)")
            above = y - 0.3 - 0.17 * (len(key) % 2)  # neighbours alternate heights
            ax.text((t0 + t1) / 2, above, str(len(key)), ha="center", va="bottom", fontsize=LABEL_PT - 1)
    for stream, label, at in mark_list:
        y = row[stream]
        ax.plot([at, at], [y - 0.38, y + 0.38], color=MARK_COLOUR, linewidth=1.2)
        ax.text(at, y + 0.42, " " + label, ha="left", va="top", fontsize=LABEL_PT - 1, color=MARK_COLOUR)
    ax.set_yticks(range(len(streams)), [str(s) for s in streams], fontsize=LABEL_PT + 1)
    ax.set_ylim(len(streams) - 0.2, -0.8)
    ax.set_xlabel("ms since the reference event", fontsize=LABEL_PT + 1)
    ax.tick_params(axis="x", labelsize=LABEL_PT)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(title, fontsize=10, loc="left")
    if key:
        fig.supxlabel(
            "short spans: " + " · ".join(key), fontsize=LABEL_PT - 0.5, x=0.01, ha="left", wrap=True
        )
    if not span_list and not mark_list:
        ax.text(0.5, 0.5, "nothing to draw", transform=ax.transAxes, ha="center")
    return fig

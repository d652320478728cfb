"""st.viz.lifetimes(tr): a timeline of storages, the tensors that kept them alive, and copies between them.

Note [Lifetime picture]
Every bar (a storage, or a tensor, view or AOTI handle on it) has a row of its own, and its label sits in
a column to the right of the plot at that row's height, so no two labels can overlap and none is cut by
the plot's edge; copies are arrows between storage rows, described in the destination storage's label.
The x axis is either the order of events (event k at x = k) or wall time. Wall time is honest but often
mostly idle (gc.collect() alone takes tens of milliseconds and squeezes everything else into a sliver), so
``axis="auto"`` picks the event order when one quiet stretch takes half the trace or half the events
crowd into a tenth of it, and then marks the wall time of the events on a second axis along the top.
"""

from __future__ import annotations

import dataclasses
import textwrap
from typing import TYPE_CHECKING, Literal

from ..trace import Event, StorageLife, TensorLife, Trace
from ._mpl import new_figure
from ._style import GRID_EDGE, UNREACHED_HATCH, tensor_colour

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MAX_STORAGES = 60  # storage rows drawn; the rest are counted in the title
MAX_TENSORS_PER_ROW = 10  # tensor bars drawn under one storage; the rest are counted in its label
ROW_INCHES = 0.2
MAX_WIDTH_INCHES = 9.5  # height of one row (a storage or a tensor bar)
LABEL_PT = 8.0  # font size of the labels
IDLE_SHARE = 0.5  # axis="auto" picks the event order when one gap between events is this share of the trace,
CROWDED_SHARE = 0.1  # or when half of the events happen within this share of it
TENSOR_COLOUR, HANDLE_COLOUR, COPY_COLOUR = "#555555", "#b8860b", "#d62728"
# A device plugin's allocator events (op of a device_event -> marker, colour, words), drawn on a row of their
# own at the top of the device's lane: device memory beside host memory (Note [Lifetime picture]).
DEVICE_MARKS = {
    "malloc": ("^", "#d62728", "▲ cudaMalloc"),
    "cache_hit": ("o", "#2ca02c", "● cache hit"),
    "free": ("v", "#7f7f7f", "▼ back to the cache"),
    "free_deferred": ("D", "#ff7f0e", "◆ freed, waiting for another stream"),
    "cudaFree": ("x", "#000000", "× cudaFree"),
}

# Names the core records for how a tensor was made, in the words of the call the user wrote.
USER_OPS = {
    "from_buffer": "from_numpy",
    "share": "reference (an export, a copy source)",
    "_to": "to",
    "view_dtype": "view(dtype)",
    "copy result": "copy (contiguous, clone, to or reshape)",
}


def user_op(op: str) -> str:
    """The user-level name of an operation the core recorded (``from_buffer`` -> ``from_numpy``)."""
    return USER_OPS.get(op, op)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 copy``, ``2 copies``, ``0 storages``."""
    if n == 1:
        return f"1 {word}"
    if many is None:
        many = word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"
    return f"{n} {many}"


def lifetimes(
    tr: Trace, *, axis: Literal["auto", "events", "time"] = "auto", max_storages: int = MAX_STORAGES
) -> Figure:
    """Draw a finished trace as a timeline and return a matplotlib Figure.

    One lane per device; in it one thick bar per storage from allocation to free (a bar whose end is
    hatched existed before the trace or outlived it), and under it one thin bar per tensor, view or AOTI
    handle on that storage. Copies are red arrows from the source storage to the destination storage.
    Every bar is labelled in the column on the right (Note [Lifetime picture]).

    ``axis``: "events" spaces events evenly in the order they happened (the wall time of each is marked
    along the top), "time" uses wall time, "auto" (the default) picks "events" when one idle stretch takes
    at least half of the trace or half of the events happen within a tenth of it, and "time" otherwise.
    """
    if not isinstance(tr, Trace):
        raise TypeError(
            f"lifetimes(): expected a finished slimtensor Trace (from `with st.trace() as tr:`),"
            f" got {type(tr).__name__}"
        )
    if isinstance(max_storages, bool) or not isinstance(max_storages, int) or max_storages < 1:
        raise ValueError(f"lifetimes(): max_storages must be a positive int, got {max_storages!r}")
    if axis not in ("auto", "events", "time"):
        raise ValueError(f"lifetimes(): axis must be 'auto', 'events' or 'time', got {axis!r}")
    events = tr.events  # raises while recording
    storages = tr.storages()
    shown, hidden = storages[:max_storages], len(storages) - min(len(storages), max_storages)
    clock = _Clock(events, tr.start_ns or 0, tr.stop_ns or 0, axis)

    # Rows, top to bottom: per device a lane; per storage its row, then one row per tensor under it.
    copies_into: dict[int, list[Event]] = {}
    for e in events:
        if e.kind == "copy":
            copies_into.setdefault(e.storage_id, []).append(e)
    rows: list[tuple[float, str, str, str]] = []  # (y, label, colour, role)
    storage_y: dict[int, float] = {}
    lanes: list[tuple[str, float, float]] = []
    y = 0.0
    bars: list[tuple[str, float, float, float, str, bool, bool]] = []  # role, y, x0, x1, colour, open0, open1
    device_events: dict[str, list[Event]] = {}
    for e in events:
        if e.kind == "device_event" and e.op in DEVICE_MARKS:
            device_events.setdefault(e.device, []).append(e)
    allocator_y: dict[str, float] = {}
    for device in dict.fromkeys([*(s.device for s in shown), *device_events]):
        top = y
        if device in device_events:
            allocator_y[device] = y
            rows.append((y, _allocator_label(device, device_events[device]), "black", "allocator-label"))
            y += 1.0
        for s in (s for s in shown if s.device == device):
            colour = tensor_colour(len(storage_y))
            storage_y[s.id] = y
            x0, x1 = clock.x(s.allocated_ns, start=True), clock.x(s.freed_ns, start=False)
            bars.append(("storage", y, x0, x1, colour, s.allocated_ns is None, s.freed_ns is None))
            rows.append((y, _storage_label(s, copies_into.get(s.id, [])), "black", "storage-label"))
            y += 1.0
            users = [(t, "tensor") for t in s.tensors] + [(h, "handle") for h in s.handles]
            copied_at = [clock.index[c.time_ns] for c in copies_into.get(s.id, [])]
            for t, what in users[:MAX_TENSORS_PER_ROW]:
                t0, t1 = clock.x(t.created_ns, start=True), clock.x(t.destroyed_ns, start=False)
                if (
                    t.op == "empty_strided"
                    and t.created_ns is not None
                    and any(0 < at - clock.index[t.created_ns] <= 3 for at in copied_at)
                ):  # the new tensor of contiguous(), clone(), to() or a copying reshape(): the copy follows
                    t = dataclasses.replace(t, op="copy result")
                bars.append(
                    (
                        what,
                        y,
                        t0,
                        t1,
                        TENSOR_COLOUR if what == "tensor" else HANDLE_COLOUR,
                        t.created_ns is None,
                        t.destroyed_ns is None,
                    )
                )
                rows.append((y, "    " + _tensor_label(t, what), "#333333", f"{what}-label"))
                y += 1.0
            y += 0.35
        lanes.append((device, top, y))
        y += 0.25
    n_rows = max(y, 1.0)

    longest = max((len(label) for _, label, _, _ in rows), default=20)
    # The whole picture stays within a notebook's output width (about 9.5 in, 900 px): the label column takes
    # what its longest label needs (DejaVu Sans: about 0.6 em per character), the plot the rest.
    label_w = min(5.0, 0.3 + longest * LABEL_PT * 0.6 / 72)
    plot_w = max(4.0, MAX_WIDTH_INCHES - label_w)
    height = n_rows * ROW_INCHES + (1.7 if clock.mode == "events" else 1.3)
    fig = new_figure(plot_w + label_w, max(2.4, height))
    grid = fig.add_gridspec(1, 2, width_ratios=[plot_w, label_w], wspace=0.0)
    ax = fig.add_subplot(grid[0, 0])
    ax.set_label("lifetimes")
    lab = fig.add_subplot(grid[0, 1], sharey=ax)
    lab.set_label("labels")

    for k, (_device, top, bottom) in enumerate(lanes):
        for a in (ax, lab):
            a.axhspan(top - 0.2, bottom - 0.2, color="#f2f2f2" if k % 2 == 0 else "white", zorder=0)
    ax.set_yticks(
        [(top + bottom) / 2 - 0.2 for _, top, bottom in lanes],
        [device for device, _, _ in lanes],
        fontsize=9,
        fontweight="bold",
    )
    ax.tick_params(axis="y", length=0)
    for role, by, x0, x1, colour, open0, open1 in bars:
        _draw_bar(ax, role, by, x0, x1, colour, open0, open1, clock)
    for device, evs in device_events.items():
        for op, (marker, colour, words) in DEVICE_MARKS.items():
            xs = [clock.x(e.time_ns, start=True) for e in evs if e.op == op]
            if xs:
                ax.scatter(
                    xs,
                    [allocator_y[device] + 0.4] * len(xs),
                    marker=marker,
                    color=colour,
                    s=22,
                    zorder=3,
                    label=words,
                    gid=f"device-{op}",
                )
    for e in events:
        if e.kind == "copy" and e.src_storage_id in storage_y and e.storage_id in storage_y:
            _draw_copy(
                ax, clock.x(e.time_ns, start=True), storage_y[e.src_storage_id], storage_y[e.storage_id]
            )
    for by, label, colour, role in rows:
        lab.text(
            0.02,
            by + 0.4,
            label,
            ha="left",
            va="center",
            fontsize=LABEL_PT,
            color=colour,
            gid=role,
            clip_on=False,
            transform=lab.get_yaxis_transform(),
        )
    lab.set_xlim(0, 1)
    lab.axis("off")
    ax.set_xlim(clock.lo, clock.hi)
    ax.set_ylim(n_rows, -0.6)
    clock.decorate(ax)
    for side in ("right", "top") if clock.mode == "time" else ("right",):
        ax.spines[side].set_visible(False)

    n_t = sum(len(s.tensors) for s in storages)
    n_h = sum(len(s.handles) for s in storages)
    n_c = sum(1 for e in events if e.kind == "copy")
    parts = [plural(len(storages), "storage"), plural(n_t, "tensor or view", "tensors and views")]
    if n_h:
        parts.append(plural(n_h, "AOTI handle"))
    parts.append(plural(n_c, "copy"))
    title = "memory lifetimes: " + ", ".join(parts)
    if hidden:
        title += f" ({hidden} not drawn; max_storages={max_storages})"
    fig.suptitle(title, fontsize=10, x=0.01, ha="left")
    key = (
        "thick bar: a storage, from allocation to free · thin bars: the tensors, views (grey) and AOTI "
        "handles (gold) on it · red arrow: a copy · hatched end: before or after the trace"
    )
    if device_events:
        key += " · allocator row: " + " ".join(words for _, _, words in DEVICE_MARKS.values())
    per_line = int((plot_w + label_w) * 72 / (8 * 0.56))
    fig.supxlabel("\n".join(textwrap.wrap(key, per_line)), fontsize=8, color="#444444", x=0.01, ha="left")
    if not storages:
        ax.text(0.5, 0.5, "the trace saw no storage", transform=ax.transAxes, ha="center", fontsize=9)
    fig.slimtensor_axis = clock.mode  # which axis the picture uses, for tests and tooling
    return fig


class _Clock:
    """Maps event times to x: the event's index (mode "events") or microseconds/ms/s since the start."""

    def __init__(self, events: list[Event], start: int, stop: int, axis: str) -> None:
        self.start, self.stop = start, max(stop, start)
        times = sorted(e.time_ns for e in events)
        self.times = times
        span = max(self.stop - self.start, 1)
        points = [self.start, *times, self.stop]
        idle = max((b - a for a, b in zip(points, points[1:], strict=False)), default=0)
        if axis == "auto":
            half = len(times) // 2  # the busiest half of the events: the narrowest window that holds it
            busiest = min((times[k + half] - times[k] for k in range(len(times) - half)), default=span)
            crowded = len(times) >= 8 and busiest < CROWDED_SHARE * span
            axis = "events" if len(times) >= 3 and (idle >= IDLE_SHARE * span or crowded) else "time"
        self.mode = axis
        self.index = {}  # time -> first event index with that time
        for k, t in enumerate(times):
            self.index.setdefault(t, k)
        self.scale, self.unit = (1e3, "µs") if span < 5e6 else ((1e6, "ms") if span < 5e9 else (1e9, "s"))
        if self.mode == "events":
            self.lo, self.hi = -0.8, len(times) - 0.2
        else:
            end = span / self.scale
            self.lo, self.hi = -0.02 * end, end * 1.02

    def x(self, t_ns: int | None, *, start: bool) -> float:
        """x of a moment; None is the trace's start (start=True) or its stop."""
        if self.mode == "events":
            if t_ns is None:
                return -0.6 if start else len(self.times) - 0.4
            return float(self.index.get(t_ns, 0))
        return (
            (self.start if t_ns is None and start else self.stop if t_ns is None else t_ns) - self.start
        ) / self.scale

    def decorate(self, ax) -> None:
        ax.tick_params(axis="x", labelsize=8.5)
        if self.mode == "time":
            ax.set_xlabel(f"wall time since the trace started ({self.unit})", fontsize=9)
            return
        n = len(self.times)
        step = max(1, -(-n // 12))
        ticks = list(range(0, n, step))
        ax.set_xticks(ticks, [str(k) for k in ticks])
        ax.set_xlabel("event order (evenly spaced; wall time along the top)", fontsize=9)
        top = ax.secondary_xaxis("top")
        wall_step = max(1, -(-n // 6))
        wall_ticks = list(range(0, n, wall_step))
        if n and n - 1 - wall_ticks[-1] >= wall_step:
            wall_ticks.append(n - 1)
        labels: list[str] = []
        kept: list[int] = []
        for k in wall_ticks:  # the same moment twice (a burst of events) is marked once
            label = self.wall(self.times[k])
            if not labels or label != labels[-1]:
                kept.append(k)
                labels.append(label)
        top.set_xticks(kept, labels)
        top.tick_params(labelsize=8, colors="#555555")
        top.set_xlabel("wall time since the trace started", fontsize=8.5, color="#555555")

    def wall(self, t_ns: int) -> str:
        us = (t_ns - self.start) / 1e3
        return f"{us:.0f} µs" if us < 1e4 else (f"{us / 1e3:.1f} ms" if us < 1e7 else f"{us / 1e6:.2f} s")


def _storage_label(s: StorageLife, copies: list[Event]) -> str:
    if s.owning is None:
        how = "made before the trace"
    else:
        how = "owning" if s.owning else f"borrowed from {user_op(s.owner) or 'an owner'}"
    size = f" {s.bytes} B" if s.bytes or s.owning is not None else ""
    words = [f"storage #{s.id}{size} {s.device}, {how}"]
    if s.freed_ns is None:
        words.append("alive at end")
    for c in copies[:2]:
        conv = f", {c.src_dtype}→{c.dtype}" if c.src_dtype and c.dtype and c.src_dtype != c.dtype else ""
        words.append(f"copied from #{c.src_storage_id}{conv}")
    if len(copies) > 2:
        words.append(f"+{plural(len(copies) - 2, 'copy')} more")
    extra = len(s.tensors) + len(s.handles) - MAX_TENSORS_PER_ROW
    if extra > 0:
        words.append(f"+{plural(extra, 'tensor')} not drawn")
    return " · ".join(words)


def _allocator_label(device: str, evs: list[Event]) -> str:
    counts = [
        f"{words.split(' ', 1)[1]} {n}"
        for op, (_, _, words) in DEVICE_MARKS.items()
        if (n := sum(1 for e in evs if e.op == op))
    ]
    return f"{device} allocator: " + ", ".join(counts)


def _tensor_label(t: TensorLife, what: str) -> str:
    shape = "(" + ", ".join(map(str, t.sizes)) + ("," if len(t.sizes) == 1 else "") + ")"
    made = user_op(t.op) if t.op else "made before the trace"
    if what == "handle":
        return f"AOTI handle {made} {shape}"
    return f"t{t.id} {made} {shape}"


def _draw_bar(
    ax, role: str, y: float, x0: float, x1: float, colour: str, open0: bool, open1: bool, clock: _Clock
) -> None:
    from matplotlib.patches import Rectangle

    thick = role == "storage"
    h = 0.8 if thick else 0.45
    top = y + (0.0 if thick else 0.175)
    min_w = 0.25 if clock.mode == "events" else (clock.hi - clock.lo) * 0.004
    width = max(x1 - x0, min_w)
    ax.add_patch(
        Rectangle(
            (x0, top),
            width,
            h,
            facecolor=colour,
            edgecolor=GRID_EDGE if thick else "none",
            linewidth=0.6,
            alpha=0.85 if thick else 1.0,
            gid=f"{role}-bar",
        )
    )
    stub = min(width * 0.3, 0.5 if clock.mode == "events" else (clock.hi - clock.lo) * 0.03)
    for is_open, at in ((open0, x0), (open1, x0 + width - stub)):
        if is_open:  # existed before the trace, or outlived it
            ax.add_patch(
                Rectangle(
                    (at, top),
                    stub,
                    h,
                    facecolor="white",
                    edgecolor=GRID_EDGE,
                    linewidth=0.6,
                    hatch=UNREACHED_HATCH,
                    gid=f"{role}-open-end",
                )
            )


def _draw_copy(ax, at: float, y_src: float, y_dst: float) -> None:
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(
        FancyArrowPatch(
            (at, y_src + 0.4),
            (at, y_dst + 0.4),
            arrowstyle="-|>",
            mutation_scale=11,
            color=COPY_COLOUR,
            linewidth=1.3,
            connectionstyle="arc3,rad=0.25",
            gid="copy-arrow",
        )
    )

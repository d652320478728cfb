"""Helpers the viz tests use to look inside a matplotlib Figure (patches by role, texts)."""

from __future__ import annotations


def axes(fig, label: str):
    found = [ax for ax in fig.axes if ax.get_label() == label]
    assert len(found) == 1, f"expected one axes labelled {label!r}, found {[a.get_label() for a in fig.axes]}"
    return found[0]


def patches(ax, gid: str) -> list:
    return [p for p in ax.patches if p.get_gid() == gid]


def hatched(ax) -> list:
    return [p for p in ax.patches if p.get_hatch()]


def texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def renderer(fig):
    """Draw ``fig`` with Agg and return the renderer (for text and patch extents in pixels)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def drawn_texts(fig):
    """Every text a reader sees: figure and axes texts, titles, axis labels and the tick labels inside the
    axis limits (matplotlib keeps Text objects for ticks outside the view, which are never drawn)."""
    found = [t for t in fig.texts]
    for name in ("_suptitle", "_supxlabel", "_supylabel"):
        if getattr(fig, name, None) is not None:
            found.append(getattr(fig, name))
    for ax in fig.axes:
        found += [*ax.texts, ax.title, ax._left_title, ax._right_title]
        if not ax.axison:
            continue
        for axis, lim in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            lo, hi = min(lim), max(lim)
            found.append(axis.label)
            for tick in axis.get_major_ticks():
                if lo <= tick.get_loc() <= hi:
                    found += [lab for lab in (tick.label1, tick.label2) if lab.get_visible()]
        for child in ax.child_axes:
            lo, hi = sorted(child.get_xlim())
            found.append(child.xaxis.label)
            for tick in child.xaxis.get_major_ticks():
                if lo <= tick.get_loc() <= hi:
                    found += [lab for lab in (tick.label1, tick.label2) if lab.get_visible()]
    seen, out = set(), []
    for t in found:
        if id(t) not in seen and t.get_visible() and t.get_text().strip():
            seen.add(id(t))
            out.append(t)
    return out

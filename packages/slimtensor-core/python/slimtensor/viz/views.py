"""st.viz.views(a, b, ...): several tensors over one storage, one colour each, overlaps marked."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._geometry import describe_tensor
from ._grid import GridPlan, draw_grid
from ._mpl import new_figure
from ._style import (
    CELL_INCHES,
    GRID_EDGE,
    MAX_STORAGE_CELLS,
    OVERLAP_EDGE,
    STRIP_WRAP,
    UNREACHED_HATCH,
    font_size,
    tensor_colour,
)
from .layout import check_limit

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .._C import Tensor

MAX_VIEW_CELLS = 64  # logical cells drawn per tensor before its grid is summarised


def views(
    *tensors: Tensor | Iterable[Tensor],
    names: Iterable[str] | None = None,
    max_cells: int = MAX_VIEW_CELLS,
    max_storage: int = MAX_STORAGE_CELLS,
) -> Figure:
    """Draw tensors that share one storage and return a matplotlib Figure.

    Top: each tensor's logical grid in its own colour, cells labelled with the storage element they map
    to, titled ``name  shape:strides @ offset``. Bottom: the storage, one lane per tensor (its colour
    where it reaches, hatched where not) and an overlap row marking in red each storage element that two
    or more of the tensors reach, with how many. ``names`` labels the tensors (default a, b, c, ...).
    """
    if not tensors:
        raise TypeError("views(): expected one or more tensors that share a storage, got none")
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    check_limit("views", "max_cells", max_cells)
    check_limit("views", "max_storage", max_storage)
    lays = [describe_tensor(t, function="views") for t in tensors]
    if names is None:
        names = [chr(ord("a") + i) if i < 26 else f"t{i}" for i in range(len(lays))]
    elif not isinstance(names, str):
        try:
            names = list(names)
        except TypeError:
            raise TypeError(
                f"views(): names must be a sequence of strings, got {type(names).__name__}"
            ) from None
    if isinstance(names, str) or len(names) != len(lays):
        raise ValueError(
            f"views(): names must be a sequence of {len(lays)} strings, one per tensor, got {names!r}"
        )
    names = [str(n) for n in names]
    storage_ids = {lay.storage_id for lay in lays}
    if len(storage_ids) != 1:
        which = ", ".join(f"{n} on #{lay.storage_id}" for n, lay in zip(names, lays, strict=True))
        raise ValueError(
            f"views(): the tensors must share one storage, got {which}; draw each one with "
            f"st.viz.layout() instead"
        )
    bytes_per_storage = lays[0].storage_elements * lays[0].itemsize
    itemsizes = {lay.itemsize for lay in lays}
    if len(itemsizes) != 1:
        raise ValueError(
            f"views(): the tensors must have one itemsize to share a storage strip, got "
            f"{sorted(itemsizes)} bytes"
        )
    n_storage = lays[0].storage_elements
    if n_storage > max_storage:
        raise ValueError(
            f"views(): the storage holds {n_storage} elements, more than max_storage="
            f"{max_storage}; pass a larger max_storage or draw smaller tensors"
        )

    plans = [GridPlan.make(lay, max_cells) for lay in lays]
    hits = [lay.hits() for lay in lays]
    wrap = min(max(n_storage, 1), STRIP_WRAP)
    blocks = -(-max(n_storage, 1) // wrap)
    block_h = len(lays) + 1.8
    grid_w = sum(p.size[0] for p in plans)
    grid_h = max(p.size[1] for p in plans) + 1.6
    strip_h = blocks * block_h + 0.8
    units = max(grid_w, wrap + 4, 18)
    fig = new_figure(units * CELL_INCHES, (grid_h + strip_h) * CELL_INCHES + 0.6)
    top, bottom = fig.subfigures(2, 1, height_ratios=[grid_h, strip_h])
    axes = top.subplots(1, len(lays), width_ratios=[p.size[0] for p in plans], squeeze=False)[0]
    for k, (ax, plan, lay, name) in enumerate(zip(axes, plans, lays, names, strict=True)):
        ax.set_label(f"logical {name}")
        colour = tensor_colour(k)
        draw_grid(ax, plan, lambda index, e, c=colour: {"facecolor": c, "alpha": 0.55}, gid="logical-cell")
        w, h = plan.size
        ax.set_xlim(-0.2, w + 0.2)
        ax.set_ylim(h + 0.2, -0.2)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(f"{name}  {lay.notation}", fontsize=9.5, family="monospace", color=colour)

    ax = bottom.subplots()
    ax.set_label("storage")
    overlaps = _draw_lanes(ax, names, hits, n_storage, wrap, block_h)
    ax.set_xlim(-2.5, units - 2.3)
    ax.set_ylim(blocks * block_h + 0.3, -0.9)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(
        f"storage #{lays[0].storage_id}: {n_storage} elements ({bytes_per_storage} B); "
        f"{overlaps} reached by more than one view",
        fontsize=9,
        loc="left",
    )
    return fig


def _draw_lanes(ax, names, hits, n_storage: int, wrap: int, block_h: float) -> int:
    """One lane per tensor and an overlap row, wrapped every ``wrap`` elements; returns the overlap count."""
    from matplotlib.patches import Rectangle

    overlaps = 0
    for e in range(n_storage):
        bx, by = e % wrap, (e // wrap) * block_h
        ax.text(
            bx + 0.5,
            by - 0.35,
            str(e),
            ha="center",
            va="center",
            fontsize=font_size(str(e)),
            color="#555555",
        )
        users = 0
        for k, h in enumerate(hits):
            count = h.get(e, 0)
            users += count > 0
            style = (
                {"facecolor": tensor_colour(k), "alpha": 0.8, "gid": "lane-reached"}
                if count
                else {"facecolor": "white", "hatch": UNREACHED_HATCH, "gid": "lane-unreached"}
            )
            ax.add_patch(Rectangle((bx, by + k), 1, 1, edgecolor="#999999", linewidth=0.5, **style))
            if count > 1:
                ax.text(bx + 0.5, by + k + 0.5, f"×{count}", ha="center", va="center", fontsize=8)
        if users > 1:
            overlaps += 1
            ax.add_patch(
                Rectangle(
                    (bx, by + len(hits) + 0.15),
                    1,
                    0.7,
                    facecolor=OVERLAP_EDGE,
                    edgecolor=GRID_EDGE,
                    linewidth=0.5,
                    gid="overlap-cell",
                )
            )
            ax.text(
                bx + 0.5,
                by + len(hits) + 0.5,
                str(users),
                ha="center",
                va="center",
                fontsize=8,
                color="white",
            )
    for block in range(-(-max(n_storage, 1) // wrap)):
        by = block * block_h
        for k, name in enumerate(names):
            ax.text(-0.3, by + k + 0.5, name, ha="right", va="center", fontsize=9, color=tensor_colour(k))
        ax.text(
            -0.3, by + len(names) + 0.5, "overlap", ha="right", va="center", fontsize=8.5, color=OVERLAP_EDGE
        )
    return overlaps

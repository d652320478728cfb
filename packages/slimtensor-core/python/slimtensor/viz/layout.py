"""st.viz.layout(t): a tensor's logical grid above the storage strip it maps to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._geometry import Layout, describe_tensor
from ._grid import GridPlan, draw_grid
from ._mpl import new_figure
from ._style import (
    CAPTION_PT,
    CELL_INCHES,
    GRID_EDGE,
    MAX_LOGICAL_CELLS,
    MAX_STORAGE_CELLS,
    MIN_PT,
    OVERLAP_EDGE,
    STRIP_WRAP,
    TITLE_PT,
    UNREACHED_HATCH,
    element_colour,
    font_size,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .._C import Tensor

MIN_WIDTH_CELLS = 14  # narrower pictures cannot hold their captions
MAX_WALK_CELLS = 64  # the memory-order line is drawn on grids up to this many cells


def check_limit(function: str, name: str, value: object) -> int:
    """Validate a size limit keyword: a positive int."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{function}(): {name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{function}(): {name} must be at least 1, got {value}")
    return value


def layout(t: Tensor, *, max_cells: int = MAX_LOGICAL_CELLS, max_storage: int = MAX_STORAGE_CELLS) -> Figure:
    """Draw ``t``'s layout and return a matplotlib Figure.

    Top: the logical grid (rows x columns; rank 3 and above as small multiples, one per leading index),
    each cell labelled with the storage element it maps to and coloured by it. Bottom: the storage strip,
    the elements the view reaches in the same colours, the others hatched; an element reached more than
    once (self-overlap, as after ``expand``) is outlined in red with its count. Title: ``shape:strides @
    offset``. A grid of more than ``max_cells`` elements, or a storage of more than ``max_storage``
    elements, is summarised instead of drawn cell by cell.
    """
    check_limit("layout", "max_cells", max_cells)
    check_limit("layout", "max_storage", max_storage)
    return draw_layout(describe_tensor(t, function="layout"), max_cells=max_cells, max_storage=max_storage)


def draw_layout(lay: Layout, *, max_cells: int, max_storage: int) -> Figure:
    plan = GridPlan.make(lay, max_cells)
    strip_summarised = lay.storage_elements > max_storage
    hits = None if strip_summarised else lay.hits()
    grid_w, grid_h = plan.size
    wrap = min(max(lay.storage_elements, 1), STRIP_WRAP)
    strip_w = 24.0 if strip_summarised else float(wrap)
    strip_rows = 1 if strip_summarised else -(-max(lay.storage_elements, 1) // wrap)
    strip_h = strip_rows * (1.6 if hits and max(hits.values(), default=1) > 1 else 1.0) + 1.6

    units = max(grid_w, strip_w + 2, MIN_WIDTH_CELLS)  # both panels share one scale: a cell is a cell
    fig = new_figure(units * CELL_INCHES, (grid_h + strip_h) * CELL_INCHES + 0.9)
    ax_grid, ax_strip = fig.subplots(2, 1, height_ratios=[grid_h, strip_h])
    ax_grid.set_label("logical")
    ax_strip.set_label("storage")

    def cell_style(index, element):
        return {"facecolor": element_colour(element)}

    draw_grid(ax_grid, plan, cell_style, gid="logical-cell")
    walked = _draw_memory_walk(ax_grid, plan)
    _frame(ax_grid, units, grid_h)
    title = "logical view" + (" (summarised)" if plan.summarised else "")
    if walked:
        title += " · the line visits the cells in memory order"
    ax_grid.set_title(title, fontsize=CAPTION_PT, loc="left")

    if strip_summarised:
        _draw_summarised_strip(ax_strip, lay)
    else:
        _draw_strip(ax_strip, lay, hits, wrap)
    _frame(ax_strip, units, strip_h)
    fig.suptitle(lay.notation, fontsize=TITLE_PT, family="monospace")
    fig.text(0.5, 0.0, lay.describe(), ha="center", va="bottom", fontsize=CAPTION_PT, color="#444444")
    fig.slimtensor_layout = lay  # what the picture shows, for tests and tooling
    return fig


def _draw_memory_walk(ax, plan: GridPlan) -> bool:
    """A line through the cell centres in storage order, for small grids of rank 1 or 2.

    Row by row for a contiguous tensor, column by column after a transpose, and so on: contiguity you
    can see. Cells that share an element (expand) are visited once, at their first logical index.
    """
    lay = plan.layout
    if plan.summarised or not 2 <= lay.numel <= MAX_WALK_CELLS or lay.ndim not in (1, 2):
        return False
    first: dict[int, tuple[float, float]] = {}
    for ri, r in enumerate(plan.rows):
        for ci, c in enumerate(plan.cols):
            element = lay.element(plan.index((), r, c))
            first.setdefault(element, (1.0 + (ci + 0.22) * plan.cell_w, 1.0 + ri + 0.8))  # clear of the label
    if len(first) < 2:
        return False
    xs, ys = zip(*(first[e] for e in sorted(first)), strict=True)
    ax.plot(xs, ys, color="#222222", linewidth=0.8, alpha=0.45, zorder=3, gid="memory-walk")
    ax.plot(xs[:1], ys[:1], marker="o", markersize=3, color="#333333", alpha=0.6, zorder=3)
    ax.annotate(
        "",
        xy=(xs[-1], ys[-1]),
        xytext=(xs[-2], ys[-2]),
        zorder=3,
        arrowprops={"arrowstyle": "-|>", "color": "#333333", "alpha": 0.6, "linewidth": 1.0},
    )
    return True


def _frame(ax, w: float, h: float) -> None:
    ax.set_xlim(-0.2, w + 0.2)
    ax.set_ylim(h + 0.2, -0.2)
    ax.set_aspect("equal")
    ax.axis("off")


def _draw_strip(ax, lay: Layout, hits, wrap: int) -> None:
    """Every storage element: reached ones coloured as in the grid, the others hatched."""
    from matplotlib.patches import Rectangle

    overlapping = max(hits.values(), default=1) > 1
    row_h = 1.6 if overlapping else 1.0
    n = lay.storage_elements
    if n == 0:
        ax.text(0.5, 0.5, "empty storage (0 elements)", fontsize=8, va="center")
    for e in range(n):
        x, y = 1.0 + e % wrap, 1.0 + (e // wrap) * row_h
        count = hits.get(e, 0)
        if count:
            style = {
                "facecolor": element_colour(e),
                "edgecolor": GRID_EDGE,
                "linewidth": 0.6,
                "gid": "storage-reached",
            }
            if count > 1:
                style.update(edgecolor=OVERLAP_EDGE, linewidth=2.0, gid="storage-overlap")
                ax.text(
                    x + 0.5,
                    y + 1.3,
                    f"×{count}",
                    ha="center",
                    va="center",
                    fontsize=MIN_PT,
                    color=OVERLAP_EDGE,
                )
        else:
            style = {
                "facecolor": "white",
                "edgecolor": "#999999",
                "linewidth": 0.6,
                "hatch": UNREACHED_HATCH,
                "gid": "storage-unreached",
            }
        ax.add_patch(Rectangle((x, y), 1, 1, **style))
        ax.text(
            x + 0.5,
            y + 0.5,
            str(e),
            ha="center",
            va="center",
            fontsize=font_size(str(e)),
            color="black" if count else "#777777",
            bbox={
                "boxstyle": "square,pad=0.05",
                "facecolor": "white",
                "edgecolor": "none",
                "alpha": 0.0 if count else 0.8,
            },
        )
    reached = len(hits)
    lo, hi = lay.span()
    ax.text(
        1.0,
        0.35,
        f"storage #{lay.storage_id}: {n} × {lay.itemsize} B · reached {reached} · "
        f"hatched {n - reached} · span [{lo}, {hi})",
        fontsize=CAPTION_PT,
        va="center",
    )


def _draw_summarised_strip(ax, lay: Layout) -> None:
    """A storage too long to draw cell by cell: one bar, the view's span marked on it to scale."""
    from matplotlib.patches import Rectangle

    n = lay.storage_elements
    scale = 24.0 / n
    lo, hi = lay.span()
    ax.add_patch(
        Rectangle(
            (1.0, 1.0),
            24.0,
            1.0,
            facecolor="white",
            edgecolor="#999999",
            hatch=UNREACHED_HATCH,
            gid="storage-summary",
        )
    )
    exhaustive = lay.is_exhaustive()
    width = max((hi - lo) * scale, 0.15) if hi > lo else 0.0
    if width:
        ax.add_patch(
            Rectangle(
                (1.0 + lo * scale, 1.0),
                width,
                1.0,
                facecolor=element_colour(0),
                edgecolor=GRID_EDGE,
                hatch=None if exhaustive else "..",
                gid="storage-span",
            )
        )
    ax.text(1.0, 2.6, "0", fontsize=MIN_PT, ha="left", va="center")
    ax.text(25.0, 2.6, str(n), fontsize=MIN_PT, ha="right", va="center")
    how = (
        "every element once"
        if exhaustive
        else (f"{lay.numel} logical elements" + ("" if lay.is_unique() else ", self-overlapping"))
    )
    ax.text(
        1.0,
        0.35,
        f"storage #{lay.storage_id}: {n} × {lay.itemsize} B (summarised) · span [{lo}, {hi}) · reaches {how}",
        fontsize=CAPTION_PT,
        va="center",
    )

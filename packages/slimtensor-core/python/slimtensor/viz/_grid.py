"""Drawing a tensor's logical grid: rows x columns, higher ranks as small multiples, summarised when large."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

from ._geometry import Layout
from ._style import CELL_PT, GRID_EDGE, INDEX_PT, cell_width, font_size

EDGE_ITEMS = 3  # cells kept at each end of a summarised row or column (numpy prints 3 too)
EDGE_PANELS = 1  # small multiples kept at each end of a summarised leading dimension
PANEL_ROW_UNITS = 28  # small multiples wrap onto a new row beyond this width (in cells)


def shown_indices(n: int, edge: int, summarise: bool) -> list[int | None]:
    """The indices of a dimension that are drawn; None stands for the elided middle."""
    if not summarise or n <= 2 * edge + 1:
        return list(range(n))
    return [*range(edge), None, *range(n - edge, n)]


@dataclass
class GridPlan:
    """Where every drawn cell of a tensor's logical grid goes (units: cells, y grows downward)."""

    layout: Layout
    summarised: bool
    rows: list[int | None]
    cols: list[int | None]
    panels: list[tuple[int | None, ...]]  # leading indices of each small multiple (() below rank 3)
    per_row: int
    cell_w: float = 1.0  # width of one cell, in cells: wider when the element labels are long

    @classmethod
    def make(cls, lay: Layout, max_cells: int) -> GridPlan:
        summarise = lay.numel > max_cells
        if lay.ndim == 0:
            rows, cols = [0], [0]
        elif lay.ndim == 1:
            rows, cols = [0], shown_indices(lay.shape[0], EDGE_ITEMS, summarise)
        else:
            rows = shown_indices(lay.shape[-2], EDGE_ITEMS, summarise)
            cols = shown_indices(lay.shape[-1], EDGE_ITEMS, summarise)
        leading = [shown_indices(n, EDGE_PANELS, summarise) for n in lay.shape[:-2]]
        panels = [tuple(p) for p in itertools.product(*leading)] if lay.ndim > 2 else [()]
        lo, hi = lay.span()
        cell_w = cell_width(max(len(str(max(hi - 1, 0))), len(str(lo))))
        width = len(cols) * cell_w + 1.5
        per_row = max(1, min(len(panels), int(PANEL_ROW_UNITS // width)))
        return cls(lay, summarise, rows, cols, panels, per_row, cell_w)

    @property
    def panel_size(self) -> tuple[float, float]:
        """Width and height of one small multiple with its headers and title."""
        title = 1.0 if self.layout.ndim > 2 else 0.0
        return (len(self.cols) * self.cell_w + 1.5, len(self.rows) + 1.2 + title)

    @property
    def size(self) -> tuple[float, float]:
        w, h = self.panel_size
        return (w * self.per_row, h * math.ceil(len(self.panels) / self.per_row))

    def index(self, lead: tuple[int | None, ...], r: int, c: int) -> tuple[int, ...]:
        if self.layout.ndim == 0:
            return ()
        if self.layout.ndim == 1:
            return (c,)
        return (*lead, r, c)  # type: ignore[return-value]


def draw_grid(ax, plan: GridPlan, style: Callable[[tuple[int, ...], int], dict], *, gid: str) -> int:
    """Draw every panel of ``plan`` on ``ax``; ``style(index, element)`` gives each cell's Rectangle kwargs
    (plus an optional "label"). Returns the number of cells drawn."""
    from matplotlib.patches import Rectangle

    lay = plan.layout
    pw, ph = plan.panel_size
    cw = plan.cell_w
    title_h = 1.0 if lay.ndim > 2 else 0.0
    drawn = 0
    for k, lead in enumerate(plan.panels):
        x0 = (k % plan.per_row) * pw + 1.0
        y0 = (k // plan.per_row) * ph + title_h + 1.0
        if lay.ndim > 2:
            where = ", ".join("⋯" if i is None else str(i) for i in lead)
            ax.text(
                x0 + len(plan.cols) * cw / 2,
                y0 - 1.35,
                f"[{where}, :, :]",
                ha="center",
                va="center",
                fontsize=INDEX_PT + 0.5,
                family="monospace",
            )
        if any(i is None for i in lead):
            ax.text(
                x0 + len(plan.cols) * cw / 2,
                y0 + len(plan.rows) / 2,
                "⋯",
                ha="center",
                va="center",
                fontsize=14,
            )
            continue
        for ci, c in enumerate(plan.cols):
            if lay.ndim >= 1:
                ax.text(
                    x0 + (ci + 0.5) * cw,
                    y0 - 0.42,
                    "⋯" if c is None else str(c),
                    ha="center",
                    va="center",
                    fontsize=INDEX_PT,
                    color="#555555",
                )
        for ri, r in enumerate(plan.rows):
            if lay.ndim >= 2:
                ax.text(
                    x0 - 0.15,
                    y0 + ri + 0.5,
                    "⋮" if r is None else str(r),
                    ha="right",
                    va="center",
                    fontsize=INDEX_PT,
                    color="#555555",
                )
            for ci, c in enumerate(plan.cols):
                if r is None or c is None:
                    ax.text(
                        x0 + (ci + 0.5) * cw,
                        y0 + ri + 0.5,
                        "⋮" if r is None else "⋯",
                        ha="center",
                        va="center",
                        fontsize=CELL_PT + 1,
                    )
                    continue
                index = plan.index(lead, r, c)
                element = lay.element(index)
                kwargs = {"edgecolor": GRID_EDGE, "linewidth": 0.6, **style(index, element)}
                label = kwargs.pop("label", str(element))
                ax.add_patch(Rectangle((x0 + ci * cw, y0 + ri), cw, 1, gid=gid, **kwargs))
                ax.text(
                    x0 + (ci + 0.5) * cw,
                    y0 + ri + 0.5,
                    label,
                    ha="center",
                    va="center",
                    fontsize=font_size(label),
                    gid="cell-label",
                )
                drawn += 1
    return drawn

"""Shared colours, hatches and sizes, so every picture speaks the same visual language."""

from __future__ import annotations

# Storage element e is drawn in ELEMENT_COLOURS[e % 24], in the logical grid and in the storage strip
# alike, so a cell and the memory it maps to have the same colour. 24 light colours (black labels stay
# readable), none close to white (the hatched unreached cells) or to the overlap red, chosen greedily so
# that each is as far as possible from the ones before it: the first 8 differ most, and no two of the 24
# are alike (tests/viz/test_viz_layout.py measures it). Every cell also carries its element's number.
ELEMENT_COLOURS = (
    "#a8cce6",
    "#e96793",
    "#67e967",
    "#e9d467",
    "#677de9",
    "#f19df1",
    "#be67e9",
    "#b2f19d",
    "#67e9be",
    "#d1a79f",
    "#eddac0",
    "#8ac78f",
    "#67b3e9",
    "#9e8ac7",
    "#e99367",
    "#dccef8",
    "#b8f5f5",
    "#b99df1",
    "#82eded",
    "#9de967",
    "#ed82c1",
    "#82ed94",
    "#8ab7c7",
    "#bdc78a",
)
# One colour per tensor in views() and per device lane in lifetimes().
TENSOR_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#7b4173",
)
# (no red among them: red marks overlaps)

UNREACHED_HATCH = "//"  # storage the view does not reach
OVERLAP_EDGE = "#d62728"  # outline of a storage element reached more than once (self-overlap)
GRID_EDGE = "#333333"
CELL_INCHES = 0.36  # side of one drawn cell
STRIP_WRAP = 24  # storage elements per row of the storage strip (keeps pictures within 9.5 in)

# Limits beyond which a picture summarises instead of drawing every cell.
MAX_LOGICAL_CELLS = 256
MAX_STORAGE_CELLS = 512


def element_colour(e: int) -> str:
    return ELEMENT_COLOURS[e % len(ELEMENT_COLOURS)]


def tensor_colour(i: int) -> str:
    return TENSOR_COLOURS[i % len(TENSOR_COLOURS)]


# Font sizes (points), chosen to stay readable in a notebook (the inline display scales them by 1.2).
TITLE_PT = 12.0
CAPTION_PT = 9.0
INDEX_PT = 8.5
CELL_PT = 9.0
MIN_PT = 8.0  # nothing in a picture is smaller


def font_size(label: str) -> float:
    """A font size at which ``label`` fits inside one cell (cells widen for longer labels: GridPlan)."""
    return max(MIN_PT, min(CELL_PT, 30.0 / max(len(label), 1)))


def cell_width(longest_label: int) -> float:
    """Width of a grid cell, in cells, that holds a label of this many characters at a readable size."""
    return max(1.0, 0.3 + 0.19 * longest_label)

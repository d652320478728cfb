"""Shared colours, hatches and sizes, so every picture speaks the same visual language."""

from __future__ import annotations

# Storage element e is drawn in ELEMENT_COLOURS[e % 8] (CuTe's print_latex convention), in the logical grid
# and in the storage strip alike, so a cell and the memory it maps to have the same colour.
ELEMENT_COLOURS = ("#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#ffff99", "#8dd3c7", "#d9d9d9")
# One colour per tensor in views() and per device lane in lifetimes().
TENSOR_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
# (no red among them: red marks overlaps)

UNREACHED_HATCH = "//"  # storage the view does not reach
OVERLAP_EDGE = "#d62728"  # outline of a storage element reached more than once (self-overlap)
GRID_EDGE = "#333333"
CELL_INCHES = 0.36  # side of one drawn cell
STRIP_WRAP = 32  # storage elements per row of the storage strip

# Limits beyond which a picture summarises instead of drawing every cell.
MAX_LOGICAL_CELLS = 256
MAX_STORAGE_CELLS = 512


def element_colour(e: int) -> str:
    return ELEMENT_COLOURS[e % len(ELEMENT_COLOURS)]


def tensor_colour(i: int) -> str:
    return TENSOR_COLOURS[i % len(TENSOR_COLOURS)]


def font_size(label: str) -> float:
    """A font size at which ``label`` fits inside one cell."""
    return max(4.0, min(8.0, 22.0 / max(len(label), 1)))

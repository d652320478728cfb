"""Rich display in Jupyter: a tensor shows its layout picture (SVG) next to its text repr."""

from __future__ import annotations

import html
import math
import os
import re
from dataclasses import dataclass

from ._style import MAX_LOGICAL_CELLS, MAX_STORAGE_CELLS

_MODES = ("picture", "text")
DISPLAY_SCALE = 1.2  # the inline picture: type as large as the text repr next to it (8 pt -> 12.8 px)
MAX_DISPLAY_PT = 640.0  # ... but never wider than a notebook's output area (~850 px of its ~1000)
MAX_BESIDE_TEXT_PX = 700  # wider pictures put the text repr below them (else it is squeezed to a sliver)


@dataclass
class DisplayOptions:
    """What ``Tensor._repr_html_`` shows; changed with ``st.set_display``."""

    mode: str = "picture"
    max_elements: int = MAX_LOGICAL_CELLS  # above this many elements: text only
    max_storage: int = MAX_STORAGE_CELLS  # storage strip summarised above this many elements


options = DisplayOptions(mode="text" if os.environ.get("SLIMTENSOR_DISPLAY", "") == "text" else "picture")


def set_display(
    mode: str | None = None, *, max_elements: int | None = None, max_storage: int | None = None
) -> DisplayOptions:
    """Choose how tensors display in Jupyter and return the previous options.

    ``mode``: "picture" (the layout picture as SVG next to the text repr, the default) or "text" (the
    text repr only; also ``SLIMTENSOR_DISPLAY=text`` in the environment). ``max_elements``: tensors with
    more elements display as text only. ``max_storage``: longer storages are summarised in the picture.
    """
    if mode is not None and not isinstance(mode, str):
        raise TypeError(f"set_display(): mode must be a str, got {type(mode).__name__}")
    if mode is not None and mode not in _MODES:
        raise ValueError(f"set_display(): mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
    for name, value in (("max_elements", max_elements), ("max_storage", max_storage)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"set_display(): {name} must be an int, got {type(value).__name__}")
        if value < 1:
            raise ValueError(f"set_display(): {name} must be a positive int, got {value!r}")
    previous = DisplayOptions(options.mode, options.max_elements, options.max_storage)
    if mode is not None:
        options.mode = mode
    if max_elements is not None:
        options.max_elements = max_elements
    if max_storage is not None:
        options.max_storage = max_storage
    return previous


def repr_html(t) -> str | None:
    """``Tensor._repr_html_``: the picture and the text repr side by side, or None for text only.

    None (IPython then shows ``repr(t)``) when the display mode is "text", the tensor has more than
    ``max_elements`` elements, or matplotlib is not installed.
    """
    if options.mode != "picture":
        return None
    try:
        numel = math.prod(int(n) for n in t.shape)
    except Exception:  # a broken tensor still gets its text repr
        return None
    if numel > options.max_elements:
        return None
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return None
    from ._geometry import describe_tensor
    from ._mpl import to_svg
    from .layout import draw_layout

    fig = draw_layout(
        describe_tensor(t, function="_repr_html_"),
        max_cells=options.max_elements,
        max_storage=options.max_storage,
    )
    svg = to_svg(fig)
    svg = _scaled(svg, min(DISPLAY_SCALE, MAX_DISPLAY_PT / max(_width_pt(svg), 1.0)))
    # A table, not CSS flex: JupyterLab's HTML sanitizer keeps tables but may drop layout styles. The
    # picture's cell has the picture's width (a td attribute, which the sanitizer keeps): without it the
    # browser's table layout shrank wide pictures to share the row with the text (7 px labels). A picture
    # too wide to leave the text a readable column beside it gets the text on a row below instead.
    width_px = round(_width_pt(svg) * 4 / 3)
    text = f'<pre class="slimtensor-repr" style="margin:0">{html.escape(repr(t))}</pre>'
    picture = (
        f'<td class="slimtensor-layout" valign="top" align="left" width="{width_px}" '
        f'style="text-align:left">{svg}</td>'
    )
    row = '<tr style="background:none">'
    text_cell = '<td valign="top" align="left" style="text-align:left">' + text + "</td>"
    body = (
        f"{row}{picture}{text_cell}</tr>"
        if width_px <= MAX_BESIDE_TEXT_PX
        else f"{row}{picture}</tr>{row}{text_cell}</tr>"
    )
    return f'<table class="slimtensor-display" style="border:none">{body}</table>'


def _width_pt(svg: str) -> float:
    m = re.search(r'\bwidth="([\d.]+)pt"', svg.partition(">")[0])
    return float(m.group(1)) if m else 0.0


def _scaled(svg: str, scale: float) -> str:
    """Scale an SVG's width and height attributes (its viewBox keeps the drawing intact)."""

    def shrink(m: re.Match) -> str:
        return f'{m.group(1)}="{float(m.group(2)) * scale:.1f}pt"'

    head, sep, rest = svg.partition(">")
    return re.sub(r'\b(width|height)="([\d.]+)pt"', shrink, head) + sep + rest


def install(tensor_type) -> None:
    """Give ``tensor_type`` its ``_repr_html_`` (called once at import of slimtensor.viz)."""
    if getattr(tensor_type, "_repr_html_", None) is not _repr_html_:
        tensor_type._repr_html_ = _repr_html_


def _repr_html_(self) -> str | None:
    return repr_html(self)

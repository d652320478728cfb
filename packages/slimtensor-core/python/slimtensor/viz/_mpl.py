"""matplotlib on demand: slimtensor imports without it, and the pictures say how to install it."""

from __future__ import annotations

import io
import re


def figure_class():
    """The Figure subclass every picture returns (imports matplotlib on first use)."""
    try:
        from ._figure import VizFigure
    except ImportError as e:  # pragma: no cover - exercised only without matplotlib
        raise ImportError(
            "slimtensor.viz needs matplotlib: pip install 'slimtensor-core[viz]' (or pip install matplotlib)"
        ) from e
    return VizFigure


def new_figure(width: float, height: float):
    """A new Agg-safe Figure (no pyplot state, nothing shown) sized in inches."""
    return figure_class()(figsize=(max(width, 1.0), max(height, 1.0)), layout="constrained")


_XML_PREAMBLE = re.compile(r"^.*?(?=<svg)", re.S)


def to_svg(fig) -> str:
    """The figure as an inline SVG element (no XML declaration or DOCTYPE, so it can sit inside HTML)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.05)
    return _XML_PREAMBLE.sub("", buf.getvalue(), count=1)

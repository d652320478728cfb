"""VizFigure: the matplotlib Figure every picture returns; Jupyter shows it as SVG without pyplot."""

from __future__ import annotations

from matplotlib.figure import Figure


class VizFigure(Figure):
    """A plain matplotlib Figure (save it, add to it, embed it) that also displays itself as SVG.

    No pyplot figure manager holds it, so it is shown only where it is the value of a cell or passed to
    ``display()``, and it is freed like any other object.
    """

    def _repr_svg_(self) -> str:
        from ._mpl import to_svg

        return to_svg(self)

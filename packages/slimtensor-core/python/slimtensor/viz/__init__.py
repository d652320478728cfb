"""slimtensor.viz: pictures of layouts, views and memory lifetimes (matplotlib Figures, made on demand)."""

from __future__ import annotations

from ._display import set_display
from .benchmark import benchmark
from .layout import layout
from .lifetimes import lifetimes
from .timeline import timeline
from .views import views

__all__ = ["layout", "views", "lifetimes", "timeline", "set_display", "benchmark"]


def _install_display() -> None:
    """Give slimtensor.Tensor its rich display, when the compiled core is importable."""
    try:
        from .._C import Tensor
    except ImportError:
        return
    from ._display import install

    install(Tensor)


_install_display()

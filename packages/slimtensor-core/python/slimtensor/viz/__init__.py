"""slimtensor.viz: pictures of layouts, views and memory lifetimes (matplotlib Figures, made on demand)."""

from __future__ import annotations

from ._display import set_display
from .layout import layout
from .lifetimes import lifetimes
from .views import views

# st.viz.benchmark(results) belongs to the benchmark issue (issue 5): it will live in viz/benchmark.py and
# be exported here next to the others.

__all__ = ["layout", "views", "lifetimes", "set_display"]


def _install_display() -> None:
    """Give slimtensor.Tensor its rich display, when the compiled core is importable."""
    try:
        from .._C import Tensor
    except ImportError:
        return
    from ._display import install

    install(Tensor)


_install_display()

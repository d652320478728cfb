"""slimtensor: a tiny tensor runtime whose strides, views and memory lifetimes you can see."""

from __future__ import annotations

from . import _C
from ._C import (
    Device,
    Storage,
    Tensor,
    current_device,
    dtype,
    empty,
    empty_like,
    empty_strided,
    from_blob,
    from_dlpack,
    full,
    get_num_threads,
    memory_format,
    ones,
    reset_peak_memory_stats,
    set_device,
    synchronize,
    zeros,
)
from ._dtypes import *  # noqa: F403  (float32, bfloat16, ...: one object per dtype)
from ._dtypes import dtypes
from ._interop import arange, asarray, from_numpy
from ._devices import devices, memory_stats, set_num_threads
from . import _plugins
from ._plugins import load_plugins

# Device plugins load lazily: on st.devices(), or when the core first meets an unknown device name.
_plugins.install_autoload_hook(_C)
import os as _os

# The typing-stub generator must see the compiled module alone (stubgen_patterns.txt adds these methods).
if _os.environ.get("SLIMTENSOR_STUBGEN") != "1":
    from . import _tensor_methods  # noqa: F401  (repr, numpy(), tolist(), to(), pickling)

__version__ = "0.1.0"


def cmake_prefix() -> str:
    """The prefix for CMake's find_package(slimtensor): pass it as -DCMAKE_PREFIX_PATH=...

    It is the folder of the compiled module, which holds include/ and lib/ (in an editable install the
    Python sources live elsewhere).
    """
    import os

    return os.path.dirname(os.path.abspath(_C.__file__))


def include_dir() -> str:
    """The directory holding slimtensor's C and C++ headers (slimtensor/c/device_plugin.h, ...)."""
    import os

    return os.path.join(cmake_prefix(), "include")

contiguous_format = memory_format.contiguous_format
preserve_format = memory_format.preserve_format
channels_last = memory_format.channels_last
channels_last_3d = memory_format.channels_last_3d

from . import viz  # pictures; sets Tensor._repr_html_; matplotlib is imported on first use  # noqa: E402
from .trace import trace  # noqa: E402
from .viz import set_display  # noqa: E402


def __getattr__(name: str):
    # st.aoti loads on first use: it is the only part that needs ctypes, ELF reading and the model runtime.
    if name == "aoti":
        import importlib

        return importlib.import_module(".aoti", __name__)
    # st.cuda is the CUDA plugin's module (slimtensor_cuda: streams, events, the allocator), imported on first
    # use: `import slimtensor` never imports it. AttributeError when it is missing, so hasattr(st, "cuda") works.
    if name == "cuda":
        import importlib

        try:
            module = importlib.import_module("slimtensor_cuda")
        except ImportError as exc:
            raise AttributeError(
                f"st.cuda needs the CUDA device plugin, which is not installed ({type(exc).__name__}: {exc}); "
                "install it with 'pip install slimtensor-cuda' (or build packages/slimtensor-cuda where nvcc exists)"
            ) from exc
        globals()["cuda"] = module
        return module
    raise AttributeError(f"module 'slimtensor' has no attribute {name!r}")

"""slimtensor: a tiny tensor runtime whose strides, views and memory lifetimes you can see."""

from __future__ import annotations

import os as _os
import sys as _sys
from typing import TYPE_CHECKING

if _sys.platform == "darwin":  # Note [Out of the flat namespace] in aoti/_macho.py: before _C loads the core
    import ctypes as _ctypes
    import importlib.util as _importlib_util

    _spec = _importlib_util.find_spec(f"{__name__}._C")
    _core = _os.path.join(_os.path.dirname(_spec.origin or ""), "lib", "libslimtensor.dylib") if _spec else ""
    _HIDDEN_CORE = _ctypes.CDLL(_core, mode=_os.RTLD_LOCAL | _os.RTLD_NOW) if _os.path.isfile(_core) else None

from . import _C, _dtypes, _plugins
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
from ._devices import devices, memory_stats, set_num_threads
from ._dtypes import *  # noqa: F403  (float32, bfloat16, ...: one object per dtype)
from ._dtypes import dtypes
from ._factories import full_like, ones_like, zeros_like
from ._interop import arange, asarray, from_numpy, tensor
from ._plugins import load_plugins

# Device plugins load lazily: on st.devices(), or when the core first meets an unknown device name.
_plugins.install_autoload_hook(_C)

# The typing-stub generator must see the compiled module alone (stubgen_patterns.txt adds these methods).
if _os.environ.get("SLIMTENSOR_STUBGEN") != "1":
    from . import _tensor_methods  # noqa: F401  (repr, numpy(), tolist(), to(), pickling, torch habits)
    from ._tensor_methods import equal

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

if TYPE_CHECKING:
    from . import aoti as aoti  # loaded on first use (module __getattr__ below); typed all the same

__all__ = [
    "Device",
    "Storage",
    "Tensor",
    "dtype",
    "memory_format",
    "contiguous_format",
    "preserve_format",
    "channels_last",
    "channels_last_3d",
    "empty",
    "empty_like",
    "empty_strided",
    "zeros",
    "ones",
    "full",
    "arange",
    "tensor",
    "zeros_like",
    "ones_like",
    "full_like",
    "asarray",
    "from_numpy",
    "from_dlpack",
    "from_blob",
    "equal",
    "devices",
    "memory_stats",
    "reset_peak_memory_stats",
    "synchronize",
    "current_device",
    "set_device",
    "set_num_threads",
    "get_num_threads",
    "load_plugins",
    "trace",
    "viz",
    "aoti",
    "set_display",
    "dtypes",
    "cmake_prefix",
    "include_dir",
]
# the dtype objects: one list, _dtypes' own (pyright and mypy follow this form of re-export)
__all__ += _dtypes.__all__

# torch functions that compute values: slimtensor has none of them, and says where to go instead.
_ARITHMETIC_FUNCTIONS = frozenset(
    "cat concat concatenate stack hstack vstack sum mean prod max min amax amin argmax argmin std var norm "
    "add sub subtract mul multiply div divide matmul mm bmm dot einsum pow exp log sqrt abs neg sin cos tanh "
    "sigmoid relu softmax clamp clip round floor ceil sign flip roll sort argsort topk all any where eq ne lt "
    "le gt ge allclose isclose".split()
)


def __getattr__(name: str):
    # st.aoti loads on first use: it is the only part that needs ctypes, ELF reading and the model runtime.
    if name == "aoti":
        import importlib

        return importlib.import_module(".aoti", __name__)
    if name in _ARITHMETIC_FUNCTIONS:
        from ._tensor_methods import _ARITHMETIC_HINT

        raise AttributeError(f"module 'slimtensor' has no function {name}(): {_ARITHMETIC_HINT}")
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

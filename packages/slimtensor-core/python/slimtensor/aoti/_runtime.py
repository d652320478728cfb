"""The non-shim libraries a model .so needs: SLEEF vector math (no DT_NEEDED in the model) and OpenMP.

Note [SLEEF]
Kernels compiled with vector math call ``Sleef_*`` functions but the model has no ``DT_NEEDED`` for them
(in torch they come from libtorch_cpu). slimtensor loads Debian's ``libsleef.so.3`` (bundled in the wheel
when it was built with it, else the system's; ``apt-get install libsleef3``) with ``RTLD_GLOBAL`` before
the model, after checking that it defines every ``Sleef_*`` name the model uses. This is the one library
slimtensor puts in the global scope: it defines only ``Sleef_*`` names, never ``aoti_torch_*``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

from . import _elf

_SLEEF = None
_SLEEF_PATH = None
_GOMP = None


def _sleef_candidates():
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib", "libsleef.so.3")
    yield here
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"):
        yield os.path.join(d, "libsleef.so.3")
    found = ctypes.util.find_library("sleef")
    if found:
        yield found


def ensure_sleef(needed: set[str], model: str) -> None:
    """Loads SLEEF globally if the model needs ``Sleef_*`` names; raises if it is missing or incomplete."""
    global _SLEEF, _SLEEF_PATH
    if not needed:
        return
    if _SLEEF is None:
        for path in _sleef_candidates():
            if os.path.exists(path) or "/" not in path:
                try:
                    _SLEEF = ctypes.CDLL(path, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
                    _SLEEF_PATH = path
                    break
                except OSError:
                    continue
    if _SLEEF is None:
        raise RuntimeError(
            f"slimtensor.aoti.load(): {model} uses SLEEF vector math ({len(needed)} Sleef_* "
            "functions, e.g. " + ", ".join(sorted(needed)[:3]) + ") but libsleef.so.3 is not "
            "installed; run 'apt-get install libsleef3' or compile the model with cpp.simdlen=0"
        )
    have = _elf.defined_symbols(_SLEEF_PATH) if os.path.exists(_SLEEF_PATH) else set()
    missing = sorted(needed - have) if have else []
    if missing:
        raise RuntimeError(
            f"slimtensor.aoti.load(): {_SLEEF_PATH} lacks {len(missing)} SLEEF functions the model "
            f"needs: {missing[:10]}; install a newer libsleef3"
        )


def sleef_path() -> str | None:
    return _SLEEF_PATH


def set_openmp_threads(n: int) -> None:
    """omp_set_num_threads(n) in the process's libgomp (the one models link), if it is loaded or loadable."""
    global _GOMP
    if _GOMP is None:
        try:
            _GOMP = ctypes.CDLL("libgomp.so.1", mode=os.RTLD_LOCAL | os.RTLD_NOW)
        except OSError:
            return
    _GOMP.omp_set_num_threads(ctypes.c_int(max(1, int(n))))


# Note [Sanitizer binding]
# AddressSanitizer and ThreadSanitizer refuse RTLD_DEEPBIND (it would bind the model's malloc and pthread calls
# past their interceptors). In a process running under either (make test-asan preloads libasan, make
# test-tsan libtsan) the model is opened RTLD_LOCAL without it.
# Its aoti_torch_* are then looked up in the global scope first, then in its own dependencies, where the
# DT_NEEDED entry added by _elf.add_needed puts libslimtensor. So the binding is exactly the same as with
# RTLD_DEEPBIND unless some library in the global scope defines aoti_torch_* (a libtorch loaded
# RTLD_GLOBAL): that is checked, and refused rather than letting the model bind to it.
def under_sanitizer() -> bool:
    process = ctypes.CDLL(None)
    return hasattr(process, "__asan_init") or hasattr(process, "__tsan_init")


def model_dlopen_mode() -> int:
    """RTLD_LOCAL | RTLD_NOW, plus RTLD_DEEPBIND except under ASan or TSan (Note [Sanitizer binding])."""
    if not under_sanitizer():
        return os.RTLD_LOCAL | os.RTLD_NOW | os.RTLD_DEEPBIND
    if hasattr(ctypes.CDLL(None), "aoti_torch_empty_strided"):
        raise OSError(
            "under AddressSanitizer or ThreadSanitizer models are opened without RTLD_DEEPBIND, and a library in the global "
            "scope (a libtorch loaded RTLD_GLOBAL) defines aoti_torch_*: the model would bind to it"
        )
    return os.RTLD_LOCAL | os.RTLD_NOW

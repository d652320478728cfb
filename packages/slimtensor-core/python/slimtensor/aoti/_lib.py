"""ctypes access to libslimtensor's C functions that slimtensor.aoti needs (the shim ABI and the model owner).

libslimtensor is opened ``RTLD_LOCAL`` (never global: DESIGN.md "Symbols"); when the Python module
``slimtensor._C`` is present it has already loaded the same file, and ``dlopen`` returns that instance.
``SLIMTENSOR_LIBRARY`` overrides the path (tests, C-only installs).
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
from ctypes import c_char_p, c_int32, c_void_p

from . import _cdecl

_LIB = None
_PATH = None
_PROTOTYPES: dict[str, _cdecl.Prototype] | None = None

H = c_void_p  # AtenTensorHandle
RELEASE_FN = ctypes.CFUNCTYPE(c_int32, c_void_p)


def library_path() -> str:
    """The path of libslimtensor this process uses."""
    global _PATH
    if _PATH:
        return _PATH
    env = os.environ.get("SLIMTENSOR_LIBRARY")
    if env:
        _PATH = env
        return env
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    candidates = []
    try:  # the extension module's neighbour is authoritative (editable installs put it elsewhere)
        from slimtensor import _C  # noqa: F401

        candidates.append(os.path.join(os.path.dirname(os.path.abspath(_C.__file__)), "lib"))
    except ImportError:
        pass
    candidates.append(os.path.join(here, "lib"))
    for d in candidates:
        if sys.platform == "darwin":  # one file, libslimtensor.dylib (no versioned names: CMakeLists.txt)
            found = sorted(glob.glob(os.path.join(d, "libslimtensor*.dylib")), key=len)
            if found:
                _PATH = found[0]
                return _PATH
            continue
        found = sorted(glob.glob(os.path.join(d, "libslimtensor.so*")), key=len)
        if found:
            # Wheels hold copies, not symlinks: libslimtensor.so, .so.0 and .so.0.1.0 are different files.
            # The one the extension module loaded is the file named by the soname; opening another copy would
            # give a second libslimtensor with its own counters and handles.
            from . import _elf

            try:
                name = _elf.soname(found[0])
            except _elf.ElfError:
                name = None
            by_soname = [f for f in found if os.path.basename(f) == name]
            _PATH = by_soname[0] if by_soname else found[0]
            return _PATH
    raise RuntimeError(
        "slimtensor.aoti: libslimtensor was not found next to the slimtensor package "
        f"(looked in {candidates}); reinstall slimtensor-core or set SLIMTENSOR_LIBRARY"
    )


# Note [One source for the C prototypes] (_cdecl.py): the C headers shipped beside the library declare every
# function this module calls.
HEADERS = ("shim.h", "shim_cpu.h", "aoti_host.h")


def header_dir() -> str:
    """The folder of slimtensor's C headers (slimtensor/c/) belonging to library_path()."""
    return os.path.join(os.path.dirname(os.path.dirname(library_path())), "include", "slimtensor", "c")


def prototypes() -> dict[str, _cdecl.Prototype]:
    """The C functions the shipped headers declare (aoti_torch_* and slimtensor_*), parsed once."""
    global _PROTOTYPES
    if _PROTOTYPES is None:
        paths = [os.path.join(header_dir(), h) for h in HEADERS]
        absent = [p for p in paths if not os.path.isfile(p)]
        if absent:
            raise RuntimeError(
                f"slimtensor.aoti: the C headers {absent} are missing next to {library_path()}; they ship with "
                "slimtensor-core (reinstall it), and with SLIMTENSOR_LIBRARY set they must lie in ../include/"
            )
        _PROTOTYPES = _cdecl.parse_files(paths)
    return _PROTOTYPES


def lib() -> ctypes.CDLL:
    """libslimtensor through ctypes, every function of the headers declared (restype and argtypes)."""
    global _LIB
    if _LIB is not None:
        return _LIB
    lib_ = ctypes.CDLL(library_path(), mode=os.RTLD_LOCAL | os.RTLD_NOW)
    missing = _cdecl.declare(lib_, prototypes())
    if missing:
        raise RuntimeError(
            f"slimtensor.aoti: {library_path()} does not export {missing}, which its headers declare; the "
            "library and the headers come from different builds (reinstall slimtensor-core)"
        )
    _LIB = lib_
    return lib_


_CAP_NAME = b"dltensor"
_USED_NAME = b"used_dltensor"


def _capi():
    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype, api.PyCapsule_GetPointer.argtypes = (
        c_void_p,
        [ctypes.py_object, c_char_p],
    )
    api.PyCapsule_SetName.restype, api.PyCapsule_SetName.argtypes = ctypes.c_int, [ctypes.py_object, c_char_p]
    api.PyCapsule_New.restype, api.PyCapsule_New.argtypes = ctypes.py_object, [c_void_p, c_char_p, c_void_p]
    api.PyCapsule_IsValid.restype, api.PyCapsule_IsValid.argtypes = ctypes.c_int, [ctypes.py_object, c_char_p]
    return api


_VERSIONED_NAME = b"dltensor_versioned"
_USED_VERSIONED_NAME = b"used_dltensor_versioned"


class BridgeError(RuntimeError):
    """A call of the C DLPack bridge (slimtensor/c/aoti_host.h) failed; the message is its last error."""


def handle_from_capsule(capsule) -> int:
    """Consumes a DLPack capsule (legacy or versioned) through the C bridge; returns a new AOTI handle over its
    memory. The bridge owns the managed tensor from then on (on failure it has called its deleter)."""
    api = _capi()
    if api.PyCapsule_IsValid(capsule, _VERSIONED_NAME):
        name, used, take = (
            _VERSIONED_NAME,
            _USED_VERSIONED_NAME,
            lib().slimtensor_aoti_handle_from_dlpack_versioned,
        )
    elif api.PyCapsule_IsValid(capsule, _CAP_NAME):
        name, used, take = _CAP_NAME, _USED_NAME, lib().slimtensor_aoti_handle_from_dlpack
    else:
        raise ValueError("expected an unconsumed DLPack capsule ('dltensor' or 'dltensor_versioned')")
    managed = api.PyCapsule_GetPointer(capsule, name)
    api.PyCapsule_SetName(capsule, used)  # the handle (or, on failure, the deleter call) owns it now
    h = H()
    if take(managed, ctypes.byref(h)) != 0:
        raise BridgeError(last_error())
    return h.value


def capsule_from_handle(handle: int):
    """Steals a handle; returns (capsule, managed pointer). The capsule has no destructor: hand it to a
    consumer at once, and call dlpack_delete(managed) if the consumer refused it."""
    managed = lib().slimtensor_aoti_handle_to_dlpack(handle)
    if not managed:
        raise BridgeError(last_error())
    return _capi().PyCapsule_New(managed, _CAP_NAME, None), managed


def capsule_consumed(capsule) -> bool:
    return not _capi().PyCapsule_IsValid(capsule, _CAP_NAME)


def last_error() -> str:
    """The message of the last failed shim call on this thread ('' if none)."""
    msg = lib().slimtensor_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def live_handles() -> int:
    """AOTI handles alive in the process (all devices)."""
    return int(lib().slimtensor_aoti_live_handles())

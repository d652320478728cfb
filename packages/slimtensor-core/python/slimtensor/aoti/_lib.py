"""ctypes access to libslimtensor's C functions that slimtensor.aoti needs (the shim ABI and the model owner).

libslimtensor is opened ``RTLD_LOCAL`` (never global: DESIGN.md "Symbols"); when the Python module
``slimtensor._C`` is present it has already loaded the same file, and ``dlopen`` returns that instance.
``SLIMTENSOR_LIBRARY`` overrides the path (tests, C-only installs).
"""

from __future__ import annotations

import ctypes
import glob
import os
from ctypes import POINTER, c_char_p, c_int32, c_int64, c_uint8, c_void_p

_LIB = None
_PATH = None

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


def _proto(lib, name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)


def lib() -> ctypes.CDLL:
    global _LIB
    if _LIB is not None:
        return _LIB
    path = library_path()
    lib_ = ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
    P64 = POINTER(c_int64)
    _proto(lib_, "slimtensor_last_error", c_char_p)
    _proto(lib_, "slimtensor_clear_last_error", None)
    _proto(lib_, "slimtensor_aoti_live_handles", c_int64)
    _proto(lib_, "slimtensor_aoti_debug_handles", c_int32)
    _proto(lib_, "aoti_torch_delete_tensor_object", c_int32, H)
    _proto(
        lib_,
        "aoti_torch_create_tensor_from_blob_v2",
        c_int32,
        c_void_p,
        c_int64,
        P64,
        P64,
        c_int64,
        c_int32,
        c_int32,
        c_int32,
        POINTER(H),
        c_int32,
        POINTER(c_uint8),
        c_int64,
    )
    _proto(lib_, "aoti_torch_get_data_ptr", c_int32, H, POINTER(c_void_p))
    _proto(lib_, "aoti_torch_get_sizes", c_int32, H, POINTER(P64))
    _proto(lib_, "aoti_torch_get_strides", c_int32, H, POINTER(P64))
    _proto(lib_, "aoti_torch_get_dim", c_int32, H, P64)
    _proto(lib_, "aoti_torch_get_dtype", c_int32, H, POINTER(c_int32))
    _proto(lib_, "aoti_torch_get_device_type", c_int32, H, POINTER(c_int32))
    _proto(lib_, "aoti_torch_get_storage_offset", c_int32, H, P64)
    _proto(lib_, "slimtensor_aoti_owner_new", c_void_p, c_void_p, c_void_p)
    _proto(lib_, "slimtensor_aoti_owner_set_container", None, c_void_p, c_void_p)
    _proto(lib_, "slimtensor_aoti_owner_enter", None, c_void_p)
    _proto(lib_, "slimtensor_aoti_owner_release", None, c_void_p)
    _proto(lib_, "slimtensor_aoti_owner_adopt_output", c_int32, c_void_p, H)
    _proto(lib_, "slimtensor_aoti_owner_refs", c_int64, c_void_p)
    _proto(lib_, "slimtensor_aoti_handle_from_dlpack", c_int32, c_void_p, POINTER(H))
    _proto(lib_, "slimtensor_aoti_handle_to_dlpack", c_void_p, H)
    _proto(lib_, "slimtensor_aoti_dlpack_delete", None, c_void_p)
    _proto(lib_, "slimtensor_blas_set_num_threads", None, c_int32)
    _proto(lib_, "slimtensor_blas_get_num_threads", c_int32)
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


def handle_from_capsule(capsule) -> int:
    """Consumes a legacy DLPack capsule ("dltensor"); returns a new AOTI handle over its memory."""
    api = _capi()
    if not api.PyCapsule_IsValid(capsule, _CAP_NAME):
        raise ValueError("expected an unconsumed legacy DLPack capsule ('dltensor')")
    managed = api.PyCapsule_GetPointer(capsule, _CAP_NAME)
    api.PyCapsule_SetName(capsule, _USED_NAME)  # the handle (or, on failure, the deleter call) owns it now
    h = H()
    if lib().slimtensor_aoti_handle_from_dlpack(managed, ctypes.byref(h)) != 0:
        raise ValueError(last_error())
    return h.value


def capsule_from_handle(handle: int):
    """Steals a handle; returns (capsule, managed pointer). The capsule has no destructor: hand it to a
    consumer at once, and call dlpack_delete(managed) if the consumer refused it."""
    managed = lib().slimtensor_aoti_handle_to_dlpack(handle)
    if not managed:
        raise ValueError(last_error())
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

"""numpy arrays <-> AOTI handles through the C ABI alone (run_numpy and C-level tests; no slimtensor._C)."""

from __future__ import annotations

import ctypes

import numpy as np

from . import _lib

# c10 dtype codes of the numpy dtypes (bfloat16 through ml_dtypes when installed).
_CODES = {
    np.dtype(np.uint8): 0,
    np.dtype(np.int8): 1,
    np.dtype(np.int16): 2,
    np.dtype(np.int32): 3,
    np.dtype(np.int64): 4,
    np.dtype(np.float16): 5,
    np.dtype(np.float32): 6,
    np.dtype(np.float64): 7,
    np.dtype(np.complex64): 9,
    np.dtype(np.complex128): 10,
    np.dtype(np.bool_): 11,
    np.dtype(np.uint16): 27,
    np.dtype(np.uint32): 28,
    np.dtype(np.uint64): 29,
}
try:
    import ml_dtypes

    _CODES[np.dtype(ml_dtypes.bfloat16)] = 15
except ImportError:
    pass
_DTYPES = {v: k for k, v in _CODES.items()}


def dtype_code(dt) -> int:
    dt = np.dtype(dt)
    if dt not in _CODES:
        raise TypeError(f"numpy dtype {dt} has no c10 code slimtensor knows")
    return _CODES[dt]


def handle_from_array(a: np.ndarray) -> int:
    """A borrowed handle over a's memory (a must outlive it). Strides must be multiples of the itemsize."""
    lib = _lib.lib()
    n = a.ndim
    sizes = (ctypes.c_int64 * max(1, n))(*a.shape)
    strides = []
    for s in a.strides:
        if s % a.itemsize:
            raise ValueError("array strides must be multiples of the itemsize")
        strides.append(s // a.itemsize)
    st = (ctypes.c_int64 * max(1, n))(*strides)
    h = ctypes.c_void_p()
    data = a.ctypes.data if a.size else None
    rc = lib.aoti_torch_create_tensor_from_blob_v2(
        data, n, sizes, st, 0, dtype_code(a.dtype), 0, 0, ctypes.byref(h), 0, None, 0
    )
    if rc != 0:
        raise ValueError(_lib.last_error())
    return h.value


def array_from_handle(h: int) -> np.ndarray:
    """A numpy view of the handle's memory (valid while the handle lives)."""
    lib = _lib.lib()
    ptr, dim, dt = ctypes.c_void_p(), ctypes.c_int64(), ctypes.c_int32()
    sizes, strides = ctypes.POINTER(ctypes.c_int64)(), ctypes.POINTER(ctypes.c_int64)()
    for rc in (
        lib.aoti_torch_get_data_ptr(h, ctypes.byref(ptr)),
        lib.aoti_torch_get_dim(h, ctypes.byref(dim)),
        lib.aoti_torch_get_dtype(h, ctypes.byref(dt)),
        lib.aoti_torch_get_sizes(h, ctypes.byref(sizes)),
        lib.aoti_torch_get_strides(h, ctypes.byref(strides)),
    ):
        if rc != 0:
            raise ValueError(_lib.last_error())
    dtype = _DTYPES[dt.value]
    shape = tuple(sizes[i] for i in range(dim.value))
    st = tuple(strides[i] * dtype.itemsize for i in range(dim.value))
    if not ptr.value or 0 in shape:
        return np.empty(shape, dtype)
    steps = strides[: dim.value] if dim.value else []
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, steps, strict=True))
    buf = (ctypes.c_char * (extent * dtype.itemsize)).from_address(ptr.value)
    return np.ndarray(shape, dtype, buffer=buf, strides=st)

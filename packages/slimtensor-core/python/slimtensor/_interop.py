"""Getting data in: from_numpy (zero-copy), asarray (anything array-like), arange."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from . import _C
from ._dtypes import from_numpy_dtype

# numpy scalar types whose buffer format names the element type (ml_dtypes' types have none, even where
# their numpy kind is 'f', as float8_e5m2's is).
_BUFFER_TYPES = frozenset(
    np.dtype(n).type
    for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
              "float32", "float64", "complex64", "complex128")
)


def from_numpy(array: np.ndarray) -> _C.Tensor:
    """A tensor sharing the memory of a numpy array (no copy); the array is kept alive by the tensor.

    Read-only arrays give read-only tensors. Negative strides, and byte strides that are not a multiple of
    the itemsize, are rejected with ValueError (pass ``np.ascontiguousarray(a)``).
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected a numpy.ndarray but got {type(array).__name__}")
    if array.dtype.type in _BUFFER_TYPES:
        return _C._from_buffer(array)  # the buffer format names the dtype
    # ml_dtypes types (bfloat16, float8) have no buffer format: view the bytes as unsigned ints.
    dt = from_numpy_dtype(array.dtype)
    raw = array.view(np.dtype(f"u{array.dtype.itemsize}"))
    return _C._from_buffer(raw, dt)


def _python_default(obj: Any, arr: np.ndarray) -> np.ndarray:
    """torch's defaults for Python scalars and lists: float -> float32, complex -> complex64."""
    if isinstance(obj, np.ndarray | np.generic):
        return arr
    if arr.dtype == np.float64:
        return arr.astype(np.float32)
    if arr.dtype == np.complex128:
        return arr.astype(np.complex64)
    return arr


def asarray(obj: Any, dtype: Any = None, device: Any = None, copy: bool | None = None) -> _C.Tensor:
    """A tensor from a tensor, a DLPack producer, an object with __cuda_array_interface__, a numpy array, a
    buffer, or (nested) Python numbers.

    Shares memory when it can (copy=None), always copies with copy=True, and raises ValueError with
    copy=False when a copy would be needed.
    """
    fresh = False  # t is already a new tensor (made from Python objects)
    if isinstance(obj, _C.Tensor):
        t = obj
    elif isinstance(obj, np.ndarray):
        try:
            t = from_numpy(obj)
        except ValueError:
            if copy is False:
                raise
            t = from_numpy(np.require(obj, requirements="C"))
    elif hasattr(obj, "__dlpack__"):
        t = _C.from_dlpack(obj)
    elif hasattr(obj, "__cuda_array_interface__"):  # numba, older cupy: CUDA memory without DLPack
        from ._cai import from_cuda_array_interface

        t = from_cuda_array_interface(obj)
    else:
        if copy is False and not isinstance(obj, bytes | bytearray | memoryview):
            raise ValueError("asarray(): copy=False but a Python object can only be converted with a copy")
        try:
            arr = _python_default(obj, np.asarray(obj))
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"asarray(): cannot convert {type(obj).__name__} to a tensor: {exc}") from exc
        if arr.dtype == object:
            raise TypeError(f"asarray(): cannot convert an object of type {type(obj).__name__} to a tensor")
        # np.require keeps 0-d arrays 0-d (np.ascontiguousarray would make them 1-d).
        t = from_numpy(np.require(arr, requirements="C"))
        fresh = True
    if dtype is not None or device is not None:
        converted = t._to(device, dtype, builtins.bool(copy) and not fresh)
        if copy is False and not converted._is_same(t):
            raise ValueError(
                f"asarray(): copy=False but converting to dtype={dtype}, device={device} needs a copy"
            )
        t = converted
    elif copy and not fresh:
        t = t.clone()
    return t


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None) -> _C.Tensor:
    """Values from start (inclusive) to end (exclusive) by step; int64 for integer arguments, else float32."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange(): step must be nonzero")
    integral = all(isinstance(v, int) and not isinstance(v, builtins.bool) for v in (start, end, step))
    values = np.arange(start, end, step, dtype=np.int64 if integral else np.float64)
    if not integral:
        values = values.astype(np.float32)
    t = from_numpy(values)
    return t._to(device, dtype, True)

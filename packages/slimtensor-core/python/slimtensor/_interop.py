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
    for n in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
)


def from_numpy(array: np.ndarray) -> _C.Tensor:
    """A tensor sharing the memory of a numpy array (no copy); the array is kept alive by the tensor.

    Read-only arrays give read-only tensors. Negative strides, and byte strides that are not a multiple of
    the itemsize, are rejected with ValueError (pass ``np.ascontiguousarray(a)``).
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected a numpy.ndarray but got {type(array).__name__}")
    base = array.base
    if type(base) is np.ndarray and base.nbytes != array.nbytes:
        whole = _borrow_base(array, base)
        if whole is not None:
            return whole
    if array.dtype.type in _BUFFER_TYPES:  # _wrap's common case, inline: from_numpy is a per-call hot path
        return _C._from_buffer(array)
    return _wrap(array)


def _wrap(array: np.ndarray) -> _C.Tensor:
    if array.dtype.type in _BUFFER_TYPES:
        return _C._from_buffer(array)  # the buffer format names the dtype
    # ml_dtypes types (bfloat16, float8) have no buffer format: view the bytes as unsigned ints.
    dt = from_numpy_dtype(array.dtype)
    raw = array.view(np.dtype(f"u{array.dtype.itemsize}"))
    return _C._from_buffer(raw, dt)


def _borrow_base(array: np.ndarray, base: np.ndarray) -> _C.Tensor | None:
    """A view of ``array``'s layout over a storage that borrows the whole memory of its base array.

    Note [Borrowing the base]: a numpy view (a[:, ::2], a[3:]) keeps its whole base array alive, so the
    storage slimtensor borrows is the base's memory, not just the span the view reaches: pictures and
    storage().nbytes say what is really held (12 elements for a view of a 12-element array), and the
    view's storage_offset says where it starts. (torch.from_numpy borrows the span from the view's first
    element; slimtensor deliberately differs.) None when the base is not one dense block, the view is
    read-only over a writable base, or its strides are not whole elements: the caller then borrows the span.
    """
    if array.size == 0 or not (base.flags.c_contiguous or base.flags.f_contiguous):
        return None
    if base.flags.writeable and not array.flags.writeable:
        return None
    item = array.dtype.itemsize
    start = base.ctypes.data
    offset = array.ctypes.data - start
    if item == 0 or offset < 0 or offset % item or any(s < 0 or s % item for s in array.strides):
        return None
    end = offset + sum((n - 1) * s for n, s in zip(array.shape, array.strides, strict=True)) + item
    if end > base.nbytes:
        return None
    n = base.nbytes // item
    whole = base.reshape(-1, order="A").view(np.uint8)[: n * item].view(array.dtype)
    return _wrap(whole).as_strided(array.shape, tuple(s // item for s in array.strides), offset // item)


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
        if not isinstance(obj, bytes | bytearray | memoryview):
            # Nothing to share: one owning storage in the requested dtype (and device).
            return _owned(arr, dtype, device, "asarray()")
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


def _owned(arr: np.ndarray, dtype: Any, device: Any, function: str) -> _C.Tensor:
    """A new tensor that owns its storage, allocated once in the requested dtype, holding ``arr``'s values.

    numpy writes (and converts) the values straight into the new storage; dtypes numpy cannot hold
    (complex32, float4) take a slimtensor copy from a borrowed array instead. A tensor for a device is
    filled on the host and copied over.
    """
    dt = from_numpy_dtype(arr.dtype) if dtype is None else dtype
    t = _C.empty(arr.shape, dtype=dt)
    if t.numel():
        try:
            np.copyto(t.numpy(), arr, casting="unsafe")
        except TypeError:  # no numpy dtype for dt
            t.copy_(from_numpy(np.require(arr, requirements="C")))
    return t if device is None else t._to(device, None, False)


def tensor(data: Any, *, dtype: Any = None, device: Any = None) -> _C.Tensor:
    """A new tensor holding a copy of ``data`` (torch.tensor): nested lists or numbers, a numpy array, a
    tensor or any DLPack producer. Python floats give float32, ints int64, bools bool, as in torch.

    Always copies; use st.asarray (shares memory when it can) or st.from_numpy (never copies) to avoid it.
    """
    if isinstance(data, _C.Tensor) or (hasattr(data, "__dlpack__") and not isinstance(data, np.ndarray)):
        src = asarray(data)
        return src._to(device, dtype, True)
    try:
        arr = _python_default(data, np.asarray(data))
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"tensor(): cannot convert {type(data).__name__} to a tensor: {exc}") from exc
    if arr.dtype == object:
        raise TypeError(
            f"tensor(): cannot convert an object of type {type(data).__name__} to a tensor (expected numbers, "
            "nested sequences of numbers, a numpy array or a tensor)"
        )
    return _owned(arr, dtype, device, "tensor()")


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None) -> _C.Tensor:
    """Values from start (inclusive) to end (exclusive) by step; int64 for integer arguments, else float32.

    One storage, allocated in the requested dtype (on a device: filled on the host, then copied over).
    """
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange(): step must be nonzero")
    integral = all(isinstance(v, int) and not isinstance(v, builtins.bool) for v in (start, end, step))
    values = np.arange(start, end, step, dtype=np.int64 if integral else np.float64)
    if dtype is None and not integral:
        dtype = _C._dtype_table()["float32"]
    return _owned(values, dtype, device, "arange()")

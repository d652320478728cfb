"""Tensor methods written in Python: repr, numpy interop, tolist, to(), cuda(), iteration, pickling, CAI."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from . import _C, _cai
from ._dtypes import _NUMPY_NATIVE, to_numpy_dtype

Tensor = _C.Tensor

_RAW_VIEW = {n: _C._dtype_table()[f"uint{8 * n}"] for n in (1, 2, 4, 8)}


def layout_string(t: Tensor) -> str:
    """CuTe-style layout: ``(2, 3):(3, 1) @ 0`` (sizes:strides @ storage offset, in elements)."""

    def tup(v: tuple[int, ...]) -> str:
        return "(" + ", ".join(map(str, v)) + ("," if len(v) == 1 else "") + ")"

    return f"{tup(t.shape)}:{tup(t.stride())} @ {t.storage_offset()}"


# slimtensor dtype -> (numpy dtype, None when the buffer protocol gives it directly, else the unsigned dtype
# of the same size to export and reinterpret: bfloat16 and float8 have no buffer format).
_NUMPY_OF: dict[_C.dtype, tuple[np.dtype, _C.dtype | None]] = {}


def _numpy(self: Tensor) -> np.ndarray:
    """A numpy array sharing this tensor's memory (CPU only; bfloat16 and float8 through ml_dtypes)."""
    # The common case costs one dict lookup and the buffer export; the device is looked at only when the
    # export fails, to say why.
    entry = _NUMPY_OF.get(self.dtype)
    if entry is None:
        _require_cpu(self)
        npdt = to_numpy_dtype(self.dtype)  # TypeError where numpy has no such type
        raw = None if self.dtype.name in _NUMPY_NATIVE else _RAW_VIEW[self.itemsize]
        entry = _NUMPY_OF[self.dtype] = (npdt, raw)
    npdt, raw = entry
    try:
        if raw is None:
            return np.asarray(memoryview(self))
        return np.asarray(memoryview(self.view(raw))).view(npdt)
    except BufferError:
        _require_cpu(self)
        raise


def _require_cpu(self: Tensor) -> None:
    if self.device.type != "cpu":
        raise TypeError(f"numpy(): the tensor is on {self.device}; copy it first with .cpu()")


def _array(self: Tensor, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    if self.device.type != "cpu":
        # As torch: no silent device-to-host copies.
        raise TypeError(f"__array__(): the tensor is on {self.device}; copy it to the host first with .cpu()")
    arr = _numpy(self)
    if dtype is not None and np.dtype(dtype) != arr.dtype:
        if copy is False:
            raise ValueError("__array__(): converting the dtype needs a copy but copy=False")
        return arr.astype(dtype)
    return arr.copy() if copy else arr


def _plain_array(self: Tensor) -> np.ndarray:
    """Values as a numpy array of a type that prints and converts to Python numbers."""
    t = self if self.device.type == "cpu" else self.cpu()
    if t.dtype.name == "complex32":
        t = t._to(None, "complex64", False)
    arr = _numpy(t)
    if arr.dtype.kind == "V" or arr.dtype.name not in np.sctypeDict:
        arr = arr.astype(np.float32)
    return arr


def _tolist(self: Tensor) -> Any:
    return _plain_array(self).tolist()


def _repr(self: Tensor) -> str:
    prefix = "tensor("
    try:
        arr = _plain_array(self)
        body = np.array2string(arr, separator=", ", prefix=prefix, threshold=200, edgeitems=3)
    except (TypeError, ValueError) as exc:  # float4 and other types without values to show
        body = f"<{self.dtype.name} values not shown: {exc}>"
    extras = [f"dtype={self.dtype.name}"]
    if self.device.type != "cpu":
        extras.append(f"device='{self.device}'")
    extras.append(f"layout={layout_string(self)}")
    return f"{prefix}{body}, " + ", ".join(extras) + ")"


def _to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """to(device), to(dtype), to(device, dtype), to(other), with keywords device=, dtype=, copy=, non_blocking=.

    non_blocking=True lets a copy between host and device memory return before it has finished (as in torch):
    synchronize the device (st.synchronize) before the host memory is read, reused or freed."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    copy = builtins.bool(kwargs.pop("copy", False))
    non_blocking = builtins.bool(kwargs.pop("non_blocking", False))
    if kwargs:
        raise TypeError(f"to(): unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, _C.dtype):
            dtype = arg
        elif isinstance(arg, str | _C.Device):
            device = arg
        else:
            raise TypeError(f"to(): expected a device, a dtype or a tensor but got {type(arg).__name__}")
    return self._to(device, dtype, copy, non_blocking)


def _cuda(self: Tensor, device: Any = None, non_blocking: bool = False) -> Tensor:
    """A copy on a CUDA device (the tensor itself when it is there already), as torch's: device None is the
    current CUDA device, an int or 'cuda:N' a given one."""
    if device is None:
        device = "cuda"
    elif isinstance(device, int) and not isinstance(device, builtins.bool):
        device = f"cuda:{device}"
    return self._to(device, None, False, builtins.bool(non_blocking))


def _iter(self: Tensor):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    for i in range(self.shape[0]):
        yield self[i]


def _rebuild(data: bytes, shape: tuple[int, ...], dtype_name: str, device: str) -> Tensor:
    from . import _dtypes

    raw = _C._from_buffer(bytearray(data))
    dtype = getattr(_dtypes, dtype_name)
    t = raw.view(dtype) if raw.numel() else _C.empty(0, dtype=dtype)
    return t.reshape(shape)._to(device, None, False)


def _reduce(self: Tensor) -> tuple[Any, ...]:
    """Pickles by value: the bytes of a contiguous CPU copy, the shape, the dtype and the device."""
    dense = self.cpu().contiguous()
    flat = dense.reshape(-1)
    data = memoryview(flat.view("uint8")).tobytes() if dense.numel() else b""
    return (_rebuild, (data, tuple(self.shape), self.dtype.name, str(self.device)))


def _scalar(kind: type) -> Any:
    def convert(self: Tensor) -> Any:
        if self.numel() != 1:
            raise TypeError(
                f"only one-element tensors can be converted to Python scalars (numel={self.numel()})"
            )
        return kind(self.item())

    return convert


Tensor.numpy = _numpy
Tensor.__array__ = _array
Tensor.tolist = _tolist
Tensor.__repr__ = _repr
Tensor.__str__ = _repr
Tensor.to = _to
Tensor.cpu = lambda self: self._to("cpu", None, False)
Tensor.cuda = _cuda
Tensor.__iter__ = _iter
Tensor.__reduce__ = _reduce
Tensor.__bool__ = _scalar(builtins.bool)
Tensor.__float__ = _scalar(builtins.float)
Tensor.__int__ = _scalar(builtins.int)
Tensor.__complex__ = _scalar(builtins.complex)
Tensor.layout = property(layout_string, doc="sizes:strides @ offset, e.g. '(2, 3):(3, 1) @ 0'")
Tensor.__cuda_array_interface__ = property(
    _cai.export, doc="The __cuda_array_interface__ (v3) of a CUDA tensor; AttributeError on other devices."
)

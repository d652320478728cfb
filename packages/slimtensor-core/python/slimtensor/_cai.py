"""__cuda_array_interface__ (version 3) both ways: the export of CUDA tensors and the import in asarray().

Export (``Tensor.__cuda_array_interface__``) exists for tensors of the ``cuda`` device only: on any other
tensor the attribute raises AttributeError, so that ``hasattr(t, "__cuda_array_interface__")`` is False
there, as cupy, numba and torch expect when they probe for it (they then use DLPack). Its ``stream`` is the
DLPack number of the calling thread's current stream of the tensor's device (1: the legacy default
stream), where slimtensor queued the work that writes the tensor: a consumer makes its own stream wait
for that stream before it reads (the v3 protocol). dtypes without a typestr (bfloat16, float8) raise
AttributeError saying to use DLPack.

Import (``from_cuda_array_interface``, used by ``st.asarray``) borrows the memory with ``from_blob`` on
``cuda``, whose plugin checks the pointer (locate_pointer) and gives the device index, keeps the producer
alive, and makes the current stream wait for the producer's ``stream`` (none when it is None or absent).
"""

from __future__ import annotations

from typing import Any

from . import _C

_TYPESTR = {
    "bool": "|b1", "uint8": "|u1", "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
    "uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "float16": "<f2", "float32": "<f4", "float64": "<f8",
    "complex64": "<c8", "complex128": "<c16",
}  # fmt: skip
_FROM_TYPESTR = {v: k for k, v in _TYPESTR.items()}
# Byte order means nothing for one byte: producers write '|', '<' or '='. '=' is native (little-endian hosts).
_FROM_TYPESTR.update({f"{o}{c}1": n for n, c in (("bool", "b"), ("uint8", "u"), ("int8", "i")) for o in "<="})
_FROM_TYPESTR.update({"=" + v[1:]: k for k, v in _TYPESTR.items() if v[0] == "<"})


def export(t: _C.Tensor) -> dict[str, Any]:
    if t.device.type != "cuda":
        raise AttributeError(
            f"'Tensor' object has no attribute '__cuda_array_interface__': the tensor is on {t.device}, "
            "and only CUDA tensors have one; use __dlpack__ (st.from_dlpack, torch.from_dlpack) elsewhere"
        )
    typestr = _TYPESTR.get(t.dtype.name)
    if typestr is None:
        raise AttributeError(
            f"'Tensor' object has no attribute '__cuda_array_interface__': {t.dtype.name} has no typestr in "
            "the protocol; exchange the tensor through DLPack (torch.from_dlpack(t), cupy.from_dlpack(t))"
        )
    itemsize = t.itemsize
    return {
        "version": 3,
        "shape": tuple(t.shape),
        "typestr": typestr,
        "descr": [("", typestr)],
        "data": (t.data_ptr() if t.numel() else 0, t.is_read_only),
        "strides": None if t.is_contiguous() else tuple(s * itemsize for s in t.stride()),
        "mask": None,
        "stream": _C._current_stream_dlpack(t.device),
    }


def from_cuda_array_interface(obj: Any) -> _C.Tensor:
    """A tensor sharing the memory of an object with ``__cuda_array_interface__`` (version 2 or 3)."""
    cai = obj.__cuda_array_interface__
    fn = "from_cuda_array_interface()"
    version = cai.get("version")
    if not isinstance(version, int) or version < 2:
        raise ValueError(
            f"{fn}: __cuda_array_interface__ version {version!r} is not supported; expected 2 or 3"
        )
    if cai.get("mask") is not None:
        raise ValueError(f"{fn}: masked arrays are not supported; pass the data without a mask")
    typestr = cai.get("typestr")
    if typestr not in _FROM_TYPESTR:
        raise TypeError(
            f"{fn}: typestr {typestr!r} has no slimtensor dtype; known: {sorted(set(_FROM_TYPESTR))}"
        )
    dtype = _C._dtype_table()[_FROM_TYPESTR[typestr]]
    shape = tuple(int(n) for n in cai["shape"])
    ptr, read_only = cai["data"]
    strides = cai.get("strides")
    if strides is not None:
        if any(b < 0 or b % dtype.itemsize for b in strides):
            raise ValueError(
                f"{fn}: byte strides {tuple(strides)} must be non-negative multiples of the itemsize "
                f"{dtype.itemsize}"
            )
        strides = tuple(b // dtype.itemsize for b in strides)
    stream = cai.get("stream") if version >= 3 else None
    if stream == 0:
        raise ValueError(
            f"{fn}: stream 0 is disallowed by the protocol (1 is the legacy default stream, None: no sync)"
        )
    # from_blob on "cuda" asks the plugin where the memory is (locate_pointer) and takes that index.
    t = _C.from_blob(int(ptr), shape, strides, dtype, "cuda", owner=obj, read_only=bool(read_only))
    if stream is not None:
        _C._wait_dlpack_stream(t.device, int(stream))
    return t

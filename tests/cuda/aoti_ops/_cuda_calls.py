"""Calling the CUDA op fallbacks of libslimtensor_cuda_aoti from the tests: torch CUDA tensors in (any strides,
borrowed through DLPack, no copy), torch CUDA tensors out (the returned handles exported through DLPack).

The prototypes come from the plugin's shipped header slimtensor/c/shim_cuda_ops.h, parsed with the core's one C
declaration parser (Note [One source for the C prototypes]); a non-zero return becomes OpError with the plugin's
last error. torch is the oracle, so these helpers need a CUDA torch for GPU calls.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, byref, c_void_p

H = c_void_p


class OpError(RuntimeError):
    """A fallback returned non-zero; the message is the plugin's last error."""


def support():
    """The CUDA plugin's AOTI support (its shim library), with the plugin registered in the core, so DLPack
    capsules of CUDA tensors import as slimtensor CUDA handles."""
    import slimtensor as st
    from slimtensor_cuda import _aoti

    st.load_plugins()
    return _aoti.support()


def ops_header() -> str:
    import slimtensor_cuda

    return os.path.join(
        os.path.dirname(os.path.abspath(slimtensor_cuda.__file__)),
        "include",
        "slimtensor",
        "c",
        "shim_cuda_ops.h",
    )


_DECLARED: dict = {}


def lib() -> ctypes.CDLL:
    """The shim library, every function of shim_cuda_ops.h declared (restype and argtypes)."""
    from slimtensor.aoti import _cdecl

    L = support()._lib
    if not _DECLARED:
        with open(ops_header(), encoding="utf-8") as f:
            protos = _cdecl.parse(f.read())
        missing = _cdecl.declare(L, protos)
        assert not missing, f"libslimtensor_cuda_aoti lacks {missing}, which shim_cuda_ops.h declares"
        _DECLARED.update(protos)
    return L


def last_error() -> str:
    return support().last_error()


def core():
    from slimtensor.aoti import _lib

    return _lib


class Call:
    """Handles of one call: inputs borrowed from tensors, outputs collected; close() deletes those still held."""

    def __init__(self):
        self.handles: list[int] = []
        self.keep: list = []

    def tensor(self, t) -> int:
        """A new handle over t's memory: a CUDA torch tensor through DLPack, a numpy array (CPU) directly."""
        import numpy as np

        if isinstance(t, np.ndarray):
            from slimtensor.aoti._numpy import handle_from_array

            self.keep.append(t)
            h = handle_from_array(t)
        else:
            self.keep.append(t)
            h = core().handle_from_capsule(t.__dlpack__())
        self.handles.append(h)
        return h

    def optional(self, t):
        """An optional tensor argument (AtenTensorHandle*): NULL for None, else the address of a handle."""
        if t is None:
            return None
        box = H(self.tensor(t))
        self.keep.append(box)
        return byref(box)

    def ints(self, values):
        arr = (ctypes.c_int64 * max(1, len(values)))(*values)
        self.keep.append(arr)
        return arr

    def close(self):
        L = core().lib()
        for h in self.handles:
            assert L.aoti_torch_delete_tensor_object(h) == 0
        self.handles = []


def to_torch(h: int):
    """The tensor of a returned CUDA handle (the handle is consumed)."""
    import torch

    capsule, _ = core().capsule_from_handle(h)
    return torch.from_dlpack(capsule)


def is_defined(h: int) -> bool:
    out = ctypes.c_bool()
    assert core().lib().aoti_torch_is_defined(h, byref(out)) == 0
    return bool(out.value)


def delete(h: int) -> None:
    assert core().lib().aoti_torch_delete_tensor_object(h) == 0


def call_out(name: str, make_args) -> None:
    """Calls an *_out fallback; raises OpError on failure."""
    f = getattr(lib(), name)
    c = Call()
    try:
        rc = f(*make_args(c))
        if rc != 0:
            raise OpError(last_error())
    finally:
        c.close()


def call(name: str, make_args, out_kinds: str):
    """Calls a fallback returning values: out_kinds has one letter per trailing output, 'h' (AtenTensorHandle*)
    or 'i' (int64_t*). Returns the raw values (handles as ints, the caller's to consume); OpError on failure."""
    f = getattr(lib(), name)
    c = Call()
    try:
        outs = [H() if k == "h" else ctypes.c_int64() for k in out_kinds]
        rc = f(*make_args(c), *[byref(o) for o in outs])
        if rc != 0:
            assert all(o.value in (None, 0) for o, k in zip(outs, out_kinds, strict=True) if k == "h"), (
                "a failed call must not return handles"
            )
            raise OpError(last_error())
        return [o.value for o in outs]
    finally:
        c.close()


def rel_error(x, ref) -> float:
    """Relative Frobenius error ||x - ref|| / ||ref|| in float64 (METHOD.md)."""
    x64, r64 = x.double(), ref.double()
    denom = r64.norm().item()
    return (x64 - r64).norm().item() / (denom if denom > 0 else 1.0)


__all__ = ["POINTER", "OpError", "call", "call_out", "rel_error", "to_torch"]

"""Calling slimtensor's CPU op fallbacks from the tests: torch tensors in (any strides), torch tensors out.

Each call makes borrowed handles over the inputs' memory (their strides kept), calls the C function, copies
every returned handle into a torch tensor with the same sizes and strides, and deletes the handles; a
non-zero return becomes OpError with slimtensor's last error. torch is the oracle, so these helpers need it.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_double, c_int32, c_int64, c_void_p

import numpy as np

H = c_void_p
P64 = POINTER(c_int64)


class OpError(RuntimeError):
    """A fallback returned non-zero; the message is slimtensor's last error."""


def _lib():
    from slimtensor.aoti import _lib as lib_module

    return lib_module


def _numpy_of(t):
    """A numpy view of t's memory with t's strides (bfloat16 through ml_dtypes)."""
    import ml_dtypes
    import torch

    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _torch_of(a: np.ndarray):
    """A torch tensor copying a, with a's sizes and strides."""
    import ml_dtypes
    import torch

    bf16 = a.dtype == np.dtype(ml_dtypes.bfloat16)
    base = a.view(np.int16) if bf16 else a
    strides = tuple(s // a.itemsize for s in a.strides)
    out = torch.empty_strided(
        a.shape, strides, dtype=torch.int16 if bf16 else torch.from_numpy(np.empty(0, base.dtype)).dtype
    )
    if a.size:
        out.copy_(torch.from_numpy(np.array(base, order="C")))
    return out.view(torch.bfloat16) if bf16 else out


class Call:
    """Handles of one call: inputs borrowed from tensors, outputs collected; close() releases them all."""

    def __init__(self):
        from slimtensor.aoti._numpy import handle_from_array

        self._from_array = handle_from_array
        self.handles: list[int] = []
        self.keep: list = []

    def tensor(self, t) -> int:
        a = _numpy_of(t)
        self.keep.append(a)
        h = self._from_array(a)
        self.handles.append(h)
        return h

    def optional(self, t):
        """An optional tensor argument: NULL for None, else the address of a handle."""
        if t is None:
            return None
        box = H(self.tensor(t))
        self.keep.append(box)
        return byref(box)

    def tensor_list(self, ts):
        """A `const AtenTensorHandle*` of handles (None entries stay NULL)."""
        arr = (H * max(1, len(ts)))(*[self.tensor(t) if t is not None else None for t in ts])
        self.keep.append(arr)
        return arr

    def optional_tensor_list(self, ts):
        """A `const AtenTensorHandle**` (optional tensors): each entry NULL or a handle's address."""
        boxes = [H(self.tensor(t)) if t is not None else None for t in ts]
        self.keep.append(boxes)
        arr = (POINTER(H) * max(1, len(ts)))(*[ctypes.pointer(b) if b is not None else None for b in boxes])
        self.keep.append(arr)
        return arr

    def optional_string(self, s):
        """An optional string argument (`const char**`): NULL for None, else the address of a C string."""
        if s is None:
            return None
        buf = ctypes.create_string_buffer(s.encode())
        ptr = ctypes.cast(buf, POINTER(ctypes.c_char))
        self.keep += [buf, ptr]
        return byref(ptr)

    def result(self, h: int):
        from slimtensor.aoti._numpy import array_from_handle

        self.handles.append(h)
        return _torch_of(array_from_handle(h))

    def close(self):
        lib = _lib().lib()
        for h in self.handles:
            assert lib.aoti_torch_delete_tensor_object(h) == 0
        self.handles = []


def fn(name: str):
    """The C function, its prototype declared from slimtensor's headers (_lib.lib())."""
    return getattr(_lib().lib(), name)


def call(name: str, make_args, n_out: int):
    """Calls `name`; make_args(call) gives the arguments before the n_out trailing AtenTensorHandle* outputs.
    Returns the outputs as torch tensors (a tuple when n_out > 1); raises OpError on failure."""
    f = fn(name)
    c = Call()
    try:
        args = make_args(c)
        outs = [H() for _ in range(n_out)]
        rc = f(*args, *[byref(o) for o in outs])
        if rc != 0:
            assert all(o.value is None for o in outs), "a failed call must not return handles"
            raise OpError(_lib().last_error())
        res = tuple(c.result(o.value) for o in outs)
        return res[0] if n_out == 1 else res
    finally:
        c.close()


def call_out(name: str, make_args):
    """Calls an *_out fallback (no returned handles); raises OpError on failure."""
    f = fn(name)
    c = Call()
    try:
        rc = f(*make_args(c))
        if rc != 0:
            raise OpError(_lib().last_error())
    finally:
        c.close()


def assert_same(actual, expected, check_strides: bool = True):
    """Same dtype, sizes, strides (when asked) and values, bit for bit (NaNs equal)."""
    import torch

    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if check_strides and actual.numel() > 1:
        assert actual.stride() == expected.stride(), (actual.stride(), expected.stride())
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


# c10's dtype codes by torch's dtype names (the codes that cross the ABI).
DTYPE_CODES = {
    "uint8": 0,
    "int8": 1,
    "int16": 2,
    "int32": 3,
    "int64": 4,
    "float16": 5,
    "float32": 6,
    "float64": 7,
    "complex64": 9,
    "complex128": 10,
    "bool": 11,
    "bfloat16": 15,
    "uint16": 27,
    "uint32": 28,
    "uint64": 29,
}


def opt_i32(v):
    return None if v is None else byref(c_int32(v))


def opt_i64(v):
    return None if v is None else byref(c_int64(v))


def opt_f64(v):
    return None if v is None else byref(c_double(v))

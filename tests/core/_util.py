"""Helpers shared by the core tests: dtype tables, numpy/torch conversion, error checks."""

from __future__ import annotations

import contextlib
import re

import ml_dtypes
import numpy as np
import pytest
import slimtensor as st

# Dtypes with values that numpy (plus ml_dtypes) can hold and slimtensor converts between.
NUMPY_DTYPES = {
    "bool": np.dtype(np.bool_),
    "uint8": np.dtype(np.uint8),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "float16": np.dtype(np.float16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}
# The dtypes copy_ converts between (every real and complex type except float8/float4).
CONVERTIBLE = [*NUMPY_DTYPES, "complex32"]


def sdt(name: str):
    return getattr(st, name)


def torch_dtype(torch, name: str):
    return getattr(torch, name)


def st_from_np(a: np.ndarray) -> st.Tensor:
    """A slimtensor copy of a numpy array (any layout numpy can give, negative strides excepted)."""
    return st.from_numpy(np.ascontiguousarray(a))


def to_np(t: st.Tensor) -> np.ndarray:
    """A numpy copy of a tensor's values (a device tensor is copied to the CPU first)."""
    return np.array(t.cpu().numpy(), copy=True)


def torch_strided(torch, shape, strides, offset, storage_numel, dtype="float32"):
    """A torch tensor over a fresh storage with the given layout (values = element index in storage)."""
    base = torch.arange(storage_numel, dtype=getattr(torch, dtype))
    return base.as_strided(shape, strides, offset)


def st_strided(shape, strides, offset, storage_numel, dtype="float32", device="cpu"):
    base = st.arange(storage_numel, dtype=getattr(st, dtype), device=device)
    return base.as_strided(shape, strides, offset)


def layout(t):
    """(shape, strides, offset) of a slimtensor or torch tensor."""
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


@contextlib.contextmanager
def raises_named(exc_type, function: str, *more: str):
    """Expects ``exc_type`` with a message naming ``function`` (e.g. "as_strided()") and the other words."""
    with pytest.raises(exc_type) as info:
        yield info
    message = str(info.value)
    assert function in message, f"the message does not name {function!r}: {message!r}"
    for word in more:
        assert re.search(word, message, re.IGNORECASE), f"the message does not mention {word!r}: {message!r}"


def bits(a: np.ndarray) -> np.ndarray:
    """The raw bits of an array as unsigned integers of the same size."""
    return np.ascontiguousarray(a).view(np.dtype(f"u{a.dtype.itemsize}"))


def assert_contiguity_matches(s, t):
    """is_contiguous() of a slimtensor equals torch's."""
    assert s.is_contiguous() == t.is_contiguous(), (layout(s), layout(t))

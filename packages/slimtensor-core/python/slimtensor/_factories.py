"""Factories torch users reach for: zeros_like, ones_like, full_like, and what st.Tensor(...) means."""

from __future__ import annotations

from typing import Any

from . import _C
from ._interop import tensor


def _like(function: str, other: _C.Tensor, value: Any, dtype: Any, device: Any) -> _C.Tensor:
    if not isinstance(other, _C.Tensor):
        raise TypeError(f"{function}(): expected a slimtensor.Tensor, got {type(other).__name__}")
    return _C.empty_like(other, dtype=dtype, device=device).fill_(value)


def zeros_like(other: _C.Tensor, *, dtype: Any = None, device: Any = None) -> _C.Tensor:
    """A tensor of zeros with ``other``'s shape, dtype and device (and its strides when dense), as torch."""
    return _like("zeros_like", other, 0, dtype, device)


def ones_like(other: _C.Tensor, *, dtype: Any = None, device: Any = None) -> _C.Tensor:
    """A tensor of ones with ``other``'s shape, dtype and device (and its strides when dense), as torch."""
    return _like("ones_like", other, 1, dtype, device)


def full_like(other: _C.Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None) -> _C.Tensor:
    """A tensor filled with ``fill_value``, with ``other``'s shape, dtype and device, as torch."""
    return _like("full_like", other, fill_value, dtype, device)


# Note [st.Tensor(data)]
# torch.Tensor(data) is torch's legacy constructor: a float32 copy of a sequence (and, ambiguously,
# torch.Tensor(2, 3) an uninitialised 2x3). slimtensor keeps the unambiguous half: st.Tensor(data) is
# st.tensor(data, dtype=st.float32), a float32 copy; st.Tensor(2, 3) and st.Tensor() raise a TypeError that
# names st.empty / st.tensor. isinstance(t, st.Tensor) is unchanged.
def _tensor_new(*args: Any, **kwargs: Any) -> _C.Tensor:
    """Tensor.__new__ (bound in src/python/bind_tensor.cpp)."""
    if kwargs or len(args) != 1 or isinstance(args[0], int | float):
        raise TypeError(
            "Tensor(data): expected one sequence, array or tensor to copy as float32 (torch's legacy "
            "constructor); for an uninitialised tensor of a shape call st.empty(2, 3), for other dtypes "
            "st.tensor(data, dtype=...)"
        )
    return tensor(args[0], dtype=_C._dtype_table()["float32"])

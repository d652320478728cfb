"""Property tests: random (often invalid) shapes, strides, offsets and codes never crash the view shims.

A view is accepted exactly when it lies inside its storage (computed here in exact integers).
"""

from __future__ import annotations

from ctypes import POINTER, byref, c_int64, c_void_p

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from slimtensor.aoti import _lib  # noqa: E402

from ._helpers import shim_lib  # noqa: E402

H = c_void_p
P64 = POINTER(c_int64)
INT64_MAX = 2**63 - 1
ITEMSIZE = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 9: 8, 10: 16, 11: 1, 15: 2, 27: 2, 28: 4, 29: 8}

sizes_st = st.lists(
    st.one_of(st.integers(-2, 6), st.sampled_from([2**31, 2**40, INT64_MAX])), min_size=0, max_size=7
)
strides_st = st.lists(
    st.one_of(st.integers(-3, 50), st.sampled_from([2**32, 2**62, INT64_MAX])), min_size=0, max_size=7
)
offset_st = st.one_of(st.integers(-3, 200), st.sampled_from([2**40, INT64_MAX, -(2**63)]))


def arr(v):
    return (c_int64 * max(1, len(v)))(*[max(min(x, INT64_MAX), -(2**63)) for x in v])


def view_fits(sizes, strides, offset, itemsize, nbytes):
    """Whether slimtensor must accept this view of a storage of nbytes (exact integer arithmetic)."""
    if any(s < 0 for s in sizes) or any(s < 0 for s in strides) or offset < 0:
        return False
    numel = 1
    for s in sizes:
        numel *= s
    if numel > INT64_MAX or numel * itemsize > INT64_MAX:
        return False
    if numel == 0:
        return None  # no element is addressed: accepting or refusing (an overflowing extent) are both fine
    extent = offset + 1 + sum((n - 1) * s for n, s in zip(sizes, strides, strict=True))
    return extent * itemsize <= nbytes and extent * itemsize <= INT64_MAX


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(sizes=sizes_st, strides=strides_st, increment=offset_st, ndim_delta=st.integers(-1, 1))
def test_reinterpret_accepts_exactly_the_views_inside_the_storage(sizes, strides, increment, ndim_delta):
    L = shim_lib()
    base = H()
    assert L.aoti_torch_empty_strided(1, arr([64]), None, 6, 0, 0, byref(base)) == 0
    strides = (strides + [1] * len(sizes))[: len(sizes)]
    ndim = len(sizes) + ndim_delta if sizes else len(sizes)
    v = H()
    rc = L.aoti_torch__reinterpret_tensor(base, ndim, arr(sizes), arr(strides), increment, byref(v))
    if ndim < 0 or ndim > len(sizes) and ndim > 0:
        pass  # more dims than given values: reads our padded arrays; only "no crash" is checked
    elif ndim == len(sizes):
        expect = view_fits(sizes, strides, increment, 4, 64 * 4)
        assert expect is None or (rc == 0) == expect, (sizes, strides, increment, _lib.last_error())
    if rc == 0:
        assert L.aoti_torch_delete_tensor_object(v) == 0
    else:
        assert _lib.last_error()
    assert L.aoti_torch_delete_tensor_object(base) == 0


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    sizes=sizes_st,
    strides=st.one_of(st.none(), strides_st),
    dtype=st.integers(-3, 50),
    device=st.integers(-2, 70),
    index=st.integers(-3, 3),
)
def test_empty_strided_never_crashes(sizes, strides, dtype, device, index):
    L = shim_lib()
    if strides is not None:
        strides = (strides + [1] * len(sizes))[: len(sizes)]
    h = H()
    rc = L.aoti_torch_empty_strided(
        len(sizes), arr(sizes), arr(strides) if strides is not None else None, dtype, device, index, byref(h)
    )
    ok_shape = all(0 <= s <= 6 for s in sizes) and (strides is None or all(0 <= s <= 50 for s in strides))
    maybe_dtypes = set(range(0, 12)) | {15, 23, 24, 25, 26, 27, 28, 29, 44, 45}  # c10 codes of element types
    if rc == 0:
        assert dtype in maybe_dtypes and device == 0 and index in (0, -1)
        assert L.aoti_torch_delete_tensor_object(h) == 0
    elif dtype in ITEMSIZE and device == 0 and index in (0, -1) and ok_shape:
        pytest.fail(f"a valid empty_strided was refused: {_lib.last_error()}")


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(sizes=sizes_st, strides=strides_st, offset=offset_st)
def test_from_blob_accepts_any_layout_it_can_describe(sizes, strides, offset):
    """from_blob borrows: the storage is the view's extent, so any valid, non-overflowing layout is ok."""
    L = shim_lib()
    buf = np.zeros(1 << 12, np.uint8)
    strides = (strides + [1] * len(sizes))[: len(sizes)]
    h = H()
    rc = L.aoti_torch_create_tensor_from_blob(
        buf.ctypes.data, len(sizes), arr(sizes), arr(strides), offset, 6, 0, 0, byref(h)
    )
    expect = view_fits(sizes, strides, offset, 4, INT64_MAX)
    assert expect is None or (rc == 0) == expect, (sizes, strides, offset, _lib.last_error())
    if rc == 0:
        assert L.aoti_torch_delete_tensor_object(h) == 0

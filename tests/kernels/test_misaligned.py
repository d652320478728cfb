"""Copies of misaligned buffers (issue 14: UBSan misaligned loads and stores in the copy kernels).

numpy and from_blob may hand slimtensor memory at any byte address (a view 1 byte into a buffer). The
results are checked against numpy here; under `make test-asan` (UBSan alignment, no recovery) the same
tests prove no misaligned typed access happens: before the fix they aborted there.
"""

from __future__ import annotations

import numpy as np
import pytest
import slimtensor as st

PAIRS = [
    ("float32", "float64"),
    ("float64", "float32"),
    ("int64", "float32"),
    ("float32", "int32"),
    ("int32", "int64"),
    ("float32", "float16"),
    ("float16", "float32"),
    ("int16", "float64"),
    ("float64", "float64"),
    ("complex64", "complex128"),
]


def misaligned(n, dtype, shift=1):
    dt = np.dtype(dtype)
    raw = np.zeros(n * dt.itemsize + 64, np.uint8)
    start = (-raw.ctypes.data) % 64 + shift
    return raw[start : start + n * dt.itemsize].view(dt)


@pytest.mark.parametrize("src, dst", PAIRS)
@pytest.mark.parametrize("n", [1, 7, 1000])
def test_misaligned_source_and_destination(src, dst, n):
    a = misaligned(n, src)
    a[...] = (np.arange(n) % 97 - 40).astype(src)
    b = misaligned(n, dst, shift=3)
    st.asarray(b).copy_(st.asarray(a))
    np.testing.assert_array_equal(b, a.astype(dst))
    # a broadcast source into a misaligned destination
    st.asarray(b).copy_(st.asarray(a[:1]))
    np.testing.assert_array_equal(b, np.full(n, a[0]).astype(dst))


@pytest.mark.parametrize(
    "src, dst", [("bfloat16", "float32"), ("float16", "float32"), ("float32", "bfloat16")]
)
def test_misaligned_streaming_conversion(src, dst):
    """Large enough for streaming stores (Note [Streaming stores]): the head before the aligned body."""
    n = 5 << 20
    s = st.full((n,), 1.5, dtype=getattr(st, src))
    raw = np.zeros(n * 4 + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + 2  # 2 bytes past a line: not even 4-byte aligned
    out = st.from_blob(raw.ctypes.data + start, (n,), dtype=getattr(st, dst), owner=raw)
    out.copy_(s)
    got = np.asarray(out.to(st.float32) if dst == "bfloat16" else out)
    assert (got == 1.5).all()

"""Signalling NaNs through the conversions between float32 real parts, bit for bit at any optimisation level.

bfloat16 -> float32 / complex64, float32 -> complex64 and complex64 -> float32 move a float32 value: torch's CPU
copies keep every bit of it, signalling NaNs included (Note [Float32 payloads] in copy/copy_kernels.cpp). The
expected bits are written out here (no torch needed). Before the fix the copy loops passed the value through a
double, and float -> double sets a signalling NaN's quiet bit: the release build (-O3) folded the round trip
away, the -O1 sanitizer build of `make test-asan` kept it, so these tests failed there (0x7f81 -> 0x7fc1).
"""

from __future__ import annotations

import numpy as np
import pytest
import slimtensor as st

# bfloat16 bits: signalling NaNs of both signs and several payloads, quiet NaNs, a normal, a denormal, -0, inf.
BF16_BITS = [0x7F81, 0xFF81, 0x7FBF, 0xFFA5, 0x7FC1, 0xFFC0, 0x3F80, 0x0001, 0x8000, 0x7F80]
# float32 bits: signalling NaNs (lowest and highest payloads, both signs), quiet NaNs, ordinary values.
F32_BITS = [
    0x7F800001,
    0xFF800001,
    0x7FA00000,
    0x7FBFFFFF,
    0xFFBFFFFF,
    0x7FC00001,
    0x3F800000,
    0x1,
    0x80000000,
]


def _layouts(t, bits):
    """(name, view of t, the same view of its bits) for the copy loops' paths: contiguous rows, strided rows,
    a broadcast source (converted once, then filled) and a 0-d tensor (one element)."""
    n = bits.shape[0]
    yield "contiguous", t, bits
    yield "strided", t[::2], bits[::2]
    yield "broadcast", t[1:2].expand(n), np.broadcast_to(bits[1:2], (n,))
    yield "0-d", t[0], bits[0]


def _real_imag_bits(out) -> tuple[np.ndarray, np.ndarray]:
    a = np.ascontiguousarray(np.asarray(out)).reshape(-1)
    if a.dtype == np.complex64:
        pairs = a.view(np.uint32).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]
    return a.view(np.uint32), np.zeros(a.shape[0], np.uint32)


def _check(src_name, src, src_bits, dst, want_real, want_imag):
    for layout, view, bits in _layouts(src, src_bits):
        real, imag = _real_imag_bits(view.to(dtype=dst))
        want_r = np.asarray(want_real(bits), np.uint32).reshape(-1)
        want_i = np.asarray(want_imag(bits), np.uint32).reshape(-1)
        bad = np.nonzero((real != want_r) | (imag != want_i))[0]
        assert bad.size == 0, (
            f"{src_name} -> {dst.name} ({layout}): {bad.size} elements differ; first: real 0x{real[bad[0]]:08x} "
            f"imag 0x{imag[bad[0]]:08x}, want 0x{want_r[bad[0]]:08x} 0x{want_i[bad[0]]:08x}"
        )


def _bf16_widened(bits: np.ndarray) -> np.ndarray:
    return bits.astype(np.uint32) << 16  # a bfloat16 is the top half of a float32


@pytest.mark.parametrize("dst", [st.float32, st.complex64], ids=lambda d: d.name)
def test_bfloat16_keeps_signalling_nan_bits(dst):
    bits = np.array(BF16_BITS, np.uint16)
    src = st.asarray(bits.copy()).view(st.bfloat16)
    _check("bfloat16", src, bits, dst, _bf16_widened, lambda b: np.zeros_like(b, np.uint32))


def test_float32_to_complex64_keeps_signalling_nan_bits():
    bits = np.array(F32_BITS, np.uint32)
    src = st.asarray(bits.view(np.float32).copy())
    _check("float32", src, bits, st.complex64, lambda b: b, lambda b: np.zeros_like(b))


def test_complex64_to_float32_keeps_the_real_part_bits():
    re = np.array(F32_BITS, np.uint32)
    pairs = np.stack([re, re[::-1].copy()], axis=1).reshape(-1).copy()  # imaginary parts: other NaNs
    src = st.asarray(pairs.view(np.complex64).copy())
    _check("complex64", src, re, st.float32, lambda b: b, lambda b: np.zeros_like(b))

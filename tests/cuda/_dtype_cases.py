"""Inputs for the bit-exactness tests of the CUDA conversions: every convertible dtype, and for each a buffer
of raw bits that covers zeros, signs, infinities, NaNs with payloads (quiet and signalling), subnormals,
rounding ties, integer extremes and out-of-range floats, plus random bit patterns."""

from __future__ import annotations

import numpy as np

# c10 code, slimtensor dtype name
DTYPES = [
    (0, "uint8"), (1, "int8"), (2, "int16"), (3, "int32"), (4, "int64"), (5, "float16"), (6, "float32"),
    (7, "float64"), (8, "complex32"), (9, "complex64"), (10, "complex128"), (11, "bool"), (15, "bfloat16"),
    (27, "uint16"), (28, "uint32"), (29, "uint64"),
]
ITEMSIZE = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 8: 4, 9: 8, 10: 16, 11: 1, 15: 2, 27: 2, 28: 4, 29: 8}

_SPECIAL_F32 = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 127.5, 255.5, 300.0, -1.5, 65504.0, 65519.99, 65520.0,
                1e10, -1e10, 3e38, 2147483648.0, -2147483904.0, 4294967296.0, 1.8446744e19, 9.3e18, -9.3e18,
                1e-40, -1e-40, 1.4e-45, 5.96e-8, 2.98e-8, 6.1e-5, float("inf"), float("-inf")]
_SPECIAL_F32_BITS = [0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FA00000, 0x7FBFFFFF, 0x33000000, 0x33000001, 0x387FE000,
                     0x3F808000, 0x3F818000, 0x3F80C000, 0x477FEFFF, 0x477FF000, 0x00000001, 0x807FFFFF]


def special_bytes(code: int, rng: np.random.Generator, n_random: int = 4096) -> bytes:
    size = ITEMSIZE[code]
    parts = [rng.integers(0, 256, n_random * size, dtype=np.uint8).tobytes()]
    f32 = np.array(_SPECIAL_F32, dtype=np.float32).view(np.uint32).tolist() + _SPECIAL_F32_BITS
    f32 = np.array(f32, dtype=np.uint32)
    if code in (6, 9):
        parts.append(f32.tobytes() if code == 6 else np.stack([f32, f32[::-1]], 1).tobytes())
    elif code in (7, 10):
        f64 = np.concatenate([f32.view(np.float32).astype(np.float64),
                              np.array([5e-324, 1e300, -1e300, 2.0**63, -(2.0**63), 2.0**64, 1.5e-310])]).view(np.uint64)
        f64 = np.concatenate([f64, np.array([0x7FF0000000000001, 0xFFF8000000000ABC, 0x7FF4000000000000], dtype=np.uint64)])
        parts.append(f64.tobytes() if code == 7 else np.stack([f64, f64[::-1]], 1).tobytes())
    elif code in (5, 15, 8):
        h = np.array([0, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00, 0x7C01, 0x7E00, 0xFDFF, 0x7F80,
                      0x7F81, 0xFFC1, 0x0080, 0x007F, 0x3C00], dtype=np.uint16)
        parts.append(h.tobytes() if code != 8 else np.stack([h, h[::-1]], 1).tobytes())
    else:
        info = np.iinfo({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size])
        parts.append(np.array([0, 1, info.max, info.max // 2, info.max // 2 + 1], dtype=info.dtype).tobytes())
    data = b"".join(parts)
    return data[: len(data) // size * size]


def cpu_convert(st, data: bytes, src: str, dst: str) -> bytes:
    """slimtensor's CPU conversion of raw elements `data` from `src` to `dst` (the reference)."""
    raw = st.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())
    t = raw.view(getattr(st, src))
    out = t.to(getattr(st, dst))
    return out.contiguous().view(st.uint8).numpy().tobytes()

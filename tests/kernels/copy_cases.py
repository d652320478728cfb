"""The copy cases that tests/kernels/test_copy_isa.py runs under every instruction set, on slimtensor and torch."""

from __future__ import annotations

import numpy as np

# Values that exercise rounding, saturation, denormals, NaN and integer wrap-around in every conversion.
_SPECIAL = [
    0.0,
    -0.0,
    1.0,
    -1.5,
    2.5,
    3.5,
    300.0,
    -300.7,
    65504.0,
    65520.0,
    65519.99,
    1e-8,
    6e-8,
    3e-8,
    1e-40,
    -1e-40,
    1e-45,
    3e38,
    -3e38,
    1e300,
    -1e300,
    2.0**53 + 1,
    2.0**63,
    -(2.0**63),
    2.0**64,
    float("inf"),
    float("-inf"),
    float("nan"),
    -float("nan"),
    0.1,
    1 / 3,
    1.00390625,
    1.0078125,
    1.01171875,
    -1.00390625,
    5.960464477539063e-08,
    2.9802322387695312e-08,
    6.103515625e-05,
]
_SPECIAL_INT = [
    0,
    1,
    -1,
    127,
    128,
    -129,
    255,
    256,
    65535,
    65536,
    2**31 - 1,
    -(2**31),
    2**31,
    2**32 + 3,
    2**53 + 1,
    2**62 + 2**40 + 1,
    -(2**63),
    2**63 - 1,
    16777217,
    -16777217,
    7,
    -7,
]

# (source dtype, destination dtype): the ones with ISA kernels first, then a spread of the generic ones.
PAIRS = [
    ("float32", "float32"),
    ("float32", "bfloat16"),
    ("bfloat16", "float32"),
    ("float32", "float16"),
    ("float16", "float32"),
    ("int64", "float32"),
    ("int32", "int32"),
    ("float64", "float16"),
    ("float64", "bfloat16"),
    ("float32", "int32"),
    ("float32", "uint8"),
    ("float64", "int64"),
    ("int64", "int8"),
    ("float32", "bool"),
    ("bfloat16", "float16"),
    ("uint8", "float32"),
]

# name -> (numpy shape of the source buffer, how the source view is taken, shape of the destination)
LAYOUTS = {
    "contiguous_1031": ((1031,), "same", (1031,)),
    "contiguous_8": ((8,), "same", (8,)),
    "t2c_37x53": ((53, 37), "T", (37, 53)),
    "t2c_64x48": ((48, 64), "T", (64, 48)),
    "p2c_2x5x7x9": ((2, 5, 7, 9), "nhwc", (2, 7, 9, 5)),
    "c2p_2x19x6x3": ((2, 6, 3, 19), "to_nchw", (2, 6, 3, 19)),
    "broadcast_row": ((1, 33), "same", (17, 33)),
    "slice_step2": ((40, 66), "step2", (20, 33)),
    # 64x64 transposed, both sides a few elements past their buffer's start: the kernels' aligned split
    # (Note [Aligned transpose tiles]) cuts edge strips off.
    "t2c_offset_64x64": ((64 * 64 + 5,), "offset", (64, 64)),
}


def source_values(src_dtype: str, n: int, seed: int = 0) -> np.ndarray:
    """n values of src_dtype (special values first, then random ones) as a numpy array of that dtype."""
    import ml_dtypes

    rng = np.random.default_rng(seed)
    if src_dtype in ("int64", "int32", "uint8", "int8"):
        base = np.array(_SPECIAL_INT, dtype=np.int64)
        rand = rng.integers(-(2**40), 2**40, size=n)
        vals = np.concatenate([base, rand])[:n]
        return vals.astype(src_dtype)
    base = np.array(_SPECIAL, dtype=np.float64)
    rand = rng.standard_normal(n) * np.exp(rng.uniform(-30, 30, size=n))
    vals = np.concatenate([base, rand])[:n]
    with np.errstate(over="ignore", invalid="ignore"):
        if src_dtype == "bfloat16":
            return vals.astype(np.float32).astype(ml_dtypes.bfloat16)
        return vals.astype(src_dtype)


def _make(lib, shape, dtype: str):
    return lib.empty(shape, dtype=getattr(lib, dtype))


def run_case(lib, src_dtype: str, dst_dtype: str, layout: str) -> np.ndarray:
    """The destination's bytes after copy_ of the layout's source view, with lib = slimtensor or torch."""
    shape, how, dst_shape = LAYOUTS[layout]
    buf = source_values(src_dtype, int(np.prod(shape))).reshape(shape)
    is_torch = lib.__name__ == "torch"
    if is_torch and src_dtype == "bfloat16":
        src = lib.from_numpy(buf.view(np.int16)).view(lib.bfloat16)
    else:
        src = lib.from_numpy(buf)
    if how == "to_nchw":  # a contiguous NHWC source into an NCHW buffer seen through its NHWC view
        n, h, w, c = shape
        dst = _make(lib, (n, c, h, w), dst_dtype)
        dst.permute(0, 2, 3, 1).copy_(src)
    elif how == "offset":
        whole = _make(lib, (64 * 64 + 3,), dst_dtype)
        dst = whole.as_strided((64, 64), (64, 1), 3)
        dst.copy_(src.as_strided((64, 64), (1, 64), 5))
    else:
        view = {
            "T": lambda t: t.T,
            "nhwc": lambda t: t.permute(0, 2, 3, 1),
            "step2": lambda t: t[::2, ::2],
        }.get(how, lambda t: t)(src)
        dst = _make(lib, dst_shape, dst_dtype)
        dst.copy_(view)
    if is_torch:
        return dst.contiguous().view(-1).view(lib.uint8).numpy().copy()
    return np.ascontiguousarray(dst.numpy()).view(np.uint8).reshape(-1).copy()


def nan_positions(src_dtype: str, layout: str) -> np.ndarray:
    """For each destination element (in its contiguous order), whether its source value is a NaN."""
    shape, how, dst_shape = LAYOUTS[layout]
    buf = source_values(src_dtype, int(np.prod(shape))).reshape(shape)
    nan = (
        np.isnan(buf.astype(np.float64))
        if buf.dtype.kind in "fV" or src_dtype == "bfloat16"
        else np.zeros(shape, bool)
    )
    view = {
        "T": lambda a: a.T,
        "nhwc": lambda a: a.transpose(0, 2, 3, 1),
        "to_nchw": lambda a: a.transpose(0, 3, 1, 2),
        "step2": lambda a: a[::2, ::2],
        "same": lambda a: np.broadcast_to(a, dst_shape),
        "offset": lambda a: a[5:].reshape(64, 64).T,
    }[how](nan)
    return np.ascontiguousarray(view).reshape(-1)


def all_cases() -> list[tuple[str, str, str]]:
    return [(s, d, layout) for s, d in PAIRS for layout in LAYOUTS]


def dump(path: str) -> None:
    """Runs every case on slimtensor (under whatever SLIMTENSOR_ISA says) and saves the bytes to path."""
    import slimtensor as st

    out = {f"{s}-{d}-{layout}": run_case(st, s, d, layout) for s, d, layout in all_cases()}
    # A large float32 copy and conversion take the streaming-store paths (Note [Streaming stores]).
    big = source_values("float32", 1 << 22, seed=1)
    for dst_dtype in ("float32", "bfloat16", "float16"):
        d = st.empty((1 << 22,), dtype=getattr(st, dst_dtype))
        d.copy_(st.from_numpy(big))
        out[f"big-float32-{dst_dtype}"] = np.asarray(d.numpy()).view(np.uint8).copy()
    np.savez(path, **out)

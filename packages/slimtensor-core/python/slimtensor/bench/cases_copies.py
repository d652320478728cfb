"""Copy bandwidth cases: the five layouts of the baselines plus broadcast and slices, four sizes, conversions."""

from __future__ import annotations

import numpy as np

from ._case import Case, Libs
from ._timing import Settings, measure

# Size label -> (2-d side N of an N x N float32 matrix, 4-d NCHW shape): the baselines' power-of-two shapes.
SIZES = {
    "4KiB": (32, (1, 16, 8, 8)),
    "1MiB": (512, (4, 64, 32, 32)),
    "64MiB": (4096, (16, 64, 128, 128)),
    "1GiB": (16384, (16, 64, 512, 512)),
}
SIZE_BYTES = {"4KiB": 4 << 10, "1MiB": 1 << 20, "64MiB": 64 << 20, "1GiB": 1 << 30}

LAYOUTS = {
    "c2c": "contiguous to contiguous",
    "t2c": "transposed 2-d source to contiguous",
    "c2t": "contiguous source to a transposed 2-d destination",
    "p2c": "NCHW buffer seen as NHWC (permute(0, 2, 3, 1)) to contiguous",
    "c2p": "contiguous NHWC to an NCHW buffer seen as NHWC",
    "bcast": "a broadcast row (N,) to N x N",
    "slice": "a strided slice [:, ::2] of an N x 2N buffer to contiguous",
}

# (source dtype, destination dtype) -> layouts measured for it.
_STRIDED = ("t2c", "c2t", "p2c", "c2p")
CONVERSIONS = {
    ("float32", "float32"): tuple(LAYOUTS),
    ("float32", "bfloat16"): ("c2c", *_STRIDED),
    ("bfloat16", "float32"): ("c2c",),
    ("float32", "float16"): ("c2c",),
    ("float16", "float32"): ("c2c",),
    ("int64", "float32"): ("c2c",),
}

# Cases also measured with two threads (slimtensor's pool and torch's intra-op threads; numpy has one).
_TWO_THREAD = {("float32", "float32"): ("c2c", *_STRIDED), ("float32", "bfloat16"): ("c2c", "t2c")}


def _np_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _fill(a: np.ndarray) -> None:
    """Writes every page (so the timing never sees a page fault) with small exact values."""
    flat = a.reshape(-1)
    chunk = 1 << 22
    pattern = (np.arange(min(chunk, flat.size)) % 251).astype(a.dtype)
    for start in range(0, flat.size, chunk):
        n = min(chunk, flat.size - start)
        flat[start : start + n] = pattern[:n]


def _shapes(layout: str, size: str) -> tuple[tuple, tuple]:
    """(source buffer shape, destination buffer shape)."""
    n, (b, c, h, w) = SIZES[size]
    return {
        "c2c": ((n, n), (n, n)),
        "t2c": ((n, n), (n, n)),
        "c2t": ((n, n), (n, n)),
        "p2c": ((b, c, h, w), (b, h, w, c)),
        "c2p": ((b, h, w, c), (b, c, h, w)),
        "bcast": ((n,), (n, n)),
        "slice": ((n, 2 * n), (n, n)),
    }[layout]


def _views(layout: str, src, dst, permute):
    """(destination view, source view) for one library; permute(x, dims) is the library's permute."""
    if layout == "t2c":
        return dst, src.T
    if layout == "c2t":
        return dst.T, src
    if layout == "p2c":
        return dst, permute(src, (0, 2, 3, 1))
    if layout == "c2p":
        return permute(dst, (0, 2, 3, 1)), src
    if layout == "slice":
        return dst, src[:, ::2]
    return dst, src


def _torch_view(torch, a: np.ndarray):
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _run_copy(
    libs: Libs, layout: str, size: str, src_t: str, dst_t: str, threads: int, settings: Settings
) -> dict:
    src_shape, dst_shape = _shapes(layout, size)
    src = np.empty(src_shape, _np_dtype(src_t))
    dst = np.empty(dst_shape, _np_dtype(dst_t))
    _fill(src)
    _fill(dst)
    st, torch = libs.st, libs.torch
    results: dict = {}
    # All libraries read the same source buffer and write the same destination buffer.
    st_dst, st_src = _views(layout, st.from_numpy(src), st.from_numpy(dst), lambda t, d: t.permute(*d))
    stmts = {"slimtensor": ("d.copy_(s)", {"d": st_dst, "s": st_src})}
    if "bfloat16" in (src_t, dst_t):
        results["numpy"] = {
            "skipped": "numpy has no bfloat16 (ml_dtypes' element-wise casts are not numpy kernels)"
        }
    elif threads > 1:
        results["numpy"] = {"skipped": "numpy copies on one thread only"}
    else:
        np_dst, np_src = _views(layout, src, dst, lambda a, d: a.transpose(*d))
        stmts["numpy"] = ("copyto(d, s)", {"copyto": np.copyto, "d": np_dst, "s": np_src})
    if torch is None:
        results["torch"] = {"skipped": libs.torch_reason}
    else:
        t_dst, t_src = _views(
            layout, _torch_view(torch, src), _torch_view(torch, dst), lambda t, d: t.permute(*d)
        )
        stmts["torch"] = ("d.copy_(s)", {"d": t_dst, "s": t_src})
    check = None
    for lib, (stmt, g) in stmts.items():
        results[lib] = measure(stmt, settings, g)
        results[lib]["code"] = stmt
        if SIZE_BYTES[size] <= (1 << 20):  # small enough to check the result cheaply: all libraries agree
            got = dst.view(np.uint8).copy()
            check = got if check is None else check
            if not np.array_equal(check, got):
                results[lib]["check"] = "MISMATCH: its result differs from slimtensor's"
    return results


def cases(libs: Libs, quick: bool) -> list[Case]:
    sizes = ["4KiB", "1MiB"] if quick else list(SIZES)
    out = []
    for (src_t, dst_t), layouts in CONVERSIONS.items():
        for layout in layouts:
            for size in sizes:
                thread_counts = [1]
                if (
                    not quick
                    and SIZE_BYTES[size] >= (64 << 20)
                    and layout in _TWO_THREAD.get((src_t, dst_t), ())
                ):
                    thread_counts.append(2)
                for threads in thread_counts:
                    src_shape, dst_shape = _shapes(layout, size)
                    src_n, dst_n = int(np.prod(src_shape)), int(np.prod(dst_shape))
                    read_n = src_n if layout == "bcast" else dst_n  # a slice reads only its elements
                    traffic = read_n * _np_dtype(src_t).itemsize + dst_n * _np_dtype(dst_t).itemsize

                    def run(
                        settings: Settings,
                        layout=layout,
                        size=size,
                        src_t=src_t,
                        dst_t=dst_t,
                        threads=threads,
                    ):
                        return _run_copy(libs, layout, size, src_t, dst_t, threads, settings)

                    out.append(
                        Case(
                            id=f"copy/{layout}/{src_t}-{dst_t}/{size}/{threads}t",
                            group="copy",
                            title=f"{LAYOUTS[layout]}, {src_t} -> {dst_t}, {size}, {threads} thread(s)",
                            params={
                                "layout": layout,
                                "src_dtype": src_t,
                                "dst_dtype": dst_t,
                                "size": size,
                                "size_bytes": SIZE_BYTES[size],
                                "src_shape": list(src_shape),
                                "dst_shape": list(dst_shape),
                            },
                            metric="time",
                            run=run,
                            traffic_bytes=traffic,
                            threads=threads,
                        )
                    )
    return out

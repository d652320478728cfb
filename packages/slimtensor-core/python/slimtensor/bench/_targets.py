"""The speed targets of the issues (docs/benchmarks.md), checked against a results file.

Each target reads the medians and same-run ratios of a results dict and says met, missed, or "no data"
(a case that was filtered out or skipped). This is a report, not a test: timings never fail a test.

    slimtensor bench --targets --results benchmarks/results/latest.json
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

SIZES_LARGE = ("64MiB", "1GiB")
CUDA_PREFIX = "CUDA: "  # the targets of issue 10, read from a GPU run (benchmarks/results/cuda_h200.json)
# the targets of issue 12, read from a run of the AOTI model cases alone (make bench-aoti:
# benchmarks/results/aoti_cpu.json)
AOTI_CPU_PREFIX = "AOTI CPU: "
# the targets of issue 11, read from a GPU run of the CUDA model cases (benchmarks/results/cuda_aoti_h200.json)
AOTI_CUDA_PREFIX = "AOTI CUDA: "
STRIDED = ("t2c", "c2t", "p2c", "c2p")


@dataclass
class Verdict:
    target: str
    result: str
    met: bool | None  # None: the cases it needs are not in the results


class _Results:
    """Medians by case id and library (seconds, GB/s or bytes), from a results dict."""

    def __init__(self, results: dict):
        self.cases = {c["id"]: c for c in results["cases"]}

    def value(self, case_id: str, lib: str = "slimtensor") -> float | None:
        case = self.cases.get(case_id)
        if case is None or case.get("skipped"):
            return None
        r = case["results"].get(lib)
        if not r or "skipped" in r:
            return None
        return r["gbps"] if case.get("traffic_bytes") else r["median"]


def _ns(s: float) -> str:
    return f"{s * 1e9:.1f}" if s < 1e-8 else f"{s * 1e9:.0f}"


def _max_time(name: str, case_ids: dict[str, str], limit_s: float, peer: str | None = "torch") -> Callable:
    """Each case's slimtensor median at most limit_s."""

    def check(r: _Results) -> Verdict:
        parts, ok = [], True
        for label, cid in case_ids.items():
            v = r.value(cid)
            if v is None:
                return Verdict(name, f"no data for {cid}", None)
            p = r.value(cid, peer) if peer else None
            parts.append(f"{label} {_ns(v)}" + (f" ({peer} {_ns(p)})" if p is not None else ""))
            ok &= v <= limit_s
        return Verdict(name, ", ".join(parts) + " ns", ok)

    return check


def _copy_id(layout: str, conv: str, size: str, threads: int = 1) -> str:
    return f"copy/{layout}/{conv}/{size}/{threads}t"


def _contiguous_vs_memcpy(r: _Results) -> Verdict:
    name = "contiguous float32 copy >= 90% of memcpy (numpy's copyto) at >= 1 MiB"
    parts, ok = [], True
    for size in ("1MiB", *SIZES_LARGE):
        cid = _copy_id("c2c", "float32-float32", size)
        s, n = r.value(cid), r.value(cid, "numpy")
        if s is None or n is None:
            return Verdict(name, f"no data for {cid}", None)
        parts.append(f"{size} {s:.1f} GB/s = {s / n:.0%}")
        ok &= s >= 0.9 * n
    return Verdict(name, ", ".join(parts), ok)


def _min_gbps(name: str, ids: dict[str, str], limit: float, vs_torch: float | None = None) -> Callable:
    def check(r: _Results) -> Verdict:
        parts, ok = [], True
        for label, cid in ids.items():
            s = r.value(cid)
            if s is None:
                return Verdict(name, f"no data for {cid}", None)
            t = r.value(cid, "torch")
            text = f"{label} {s:.1f}"
            if vs_torch is not None:
                if t is None:
                    return Verdict(name, f"no torch figure for {cid}", None)
                text += f" ({s / t:.2f}x torch)"
                ok &= s >= vs_torch * t
            parts.append(text)
            ok &= s >= limit
        return Verdict(name, "; ".join(parts) + " GB/s", ok)

    return check


def _two_threads(r: _Results) -> Verdict:
    name = "large copies use both cores when that is faster (2 threads vs 1, GB/s)"
    parts, faster, slower = [], 0, []
    for cid in r.cases:
        if not cid.endswith("/2t"):
            continue
        two, one = r.value(cid), r.value(cid[:-3] + "/1t")
        if two is None or one is None:
            continue
        parts.append(f"{cid[5:-3]} {two:.1f} vs {one:.1f}")
        faster += two > one
        if two < 0.9 * one:
            slower.append(cid)
    if not parts:
        return Verdict(name, "no data for the /2t cases", None)
    head = f"faster in {faster} of {len(parts)}" + (f"; > 10% slower: {', '.join(slower)}" if slower else "")
    return Verdict(name, head + ": " + "; ".join(parts), not slower)


def _within_numpy(r: _Results) -> Verdict:
    name = "permute, reshape (view) and slicing within 1.5x numpy's time"
    parts, ok = [], True
    for case in ("permute", "reshape_view", "slice"):
        s, n = r.value(f"call/{case}"), r.value(f"call/{case}", "numpy")
        if s is None or n is None:
            return Verdict(name, f"no data for call/{case}", None)
        parts.append(f"{case} {s / n:.2f}x")
        ok &= s <= 1.5 * n
    return Verdict(name, ", ".join(parts), ok)


def _no_slower_than_torch(name: str, ids: dict[str, str], slack: float = 1.0) -> Callable:
    """slimtensor's median at most slack x torch's in the same run."""

    def check(r: _Results) -> Verdict:
        parts, ok = [], True
        for label, cid in ids.items():
            s, t = r.value(cid), r.value(cid, "torch")
            if s is None or t is None:
                return Verdict(name, f"no data for {cid}", None)
            parts.append(f"{label} {s * 1e6:.2f} us vs {t * 1e6:.2f} ({t / s:.2f}x)")
            ok &= s <= slack * t
        return Verdict(name, ", ".join(parts), ok)

    return check


def _every_model_vs_libtorch(name: str, case_prefix: str) -> Callable:
    """Every case under case_prefix (one model, on both libraries) <= 1.05x libtorch's median."""

    def check(r: _Results) -> Verdict:
        over, count = [], 0
        for cid in r.cases:
            if not cid.startswith(case_prefix):
                continue
            s, t = r.value(cid), r.value(cid, "torch")
            if s is None or t is None:
                continue
            count += 1
            if s > 1.05 * t:
                over.append(f"{cid.removeprefix(case_prefix)} {s / t:.2f}x")
        if not count:
            return Verdict(name, f"no data for {case_prefix}*", None)
        return Verdict(
            name,
            f"{count - len(over)} of {count} within" + (f"; over: {', '.join(over)}" if over else ""),
            not over,
        )

    return check


def _cuda_graphs_vs_libtorch(r: _Results) -> Verdict:
    """Issue 11: capture()/replay() of the small models at least 2x faster than libtorch's eager AOTI run."""
    name = (
        AOTI_CUDA_PREFIX
        + "capture() >= 2x faster than libtorch's eager run (pointwise, MLP, transformer block, GPT-2)"
    )
    parts, ok = [], True
    for m in ("pointwise", "mlp", "transformer_block", "gpt2"):
        g, t = r.value(f"aoti/cuda_graph/{m}"), r.value(f"aoti/cuda_graph/{m}", "torch")
        if g is None or t is None:
            return Verdict(name, f"no data for aoti/cuda_graph/{m}", None)
        parts.append(f"{m} {g * 1e6:.1f} us vs {t * 1e6:.1f} ({t / g:.2f}x)")
        ok &= t >= 2 * g
    return Verdict(name, ", ".join(parts), ok)


def _share_of(name: str, ids: dict[str, str], share: float, peer: str = "cudaMemcpy") -> Callable:
    """Each CUDA case's slimtensor GB/s at least `share` of the peer's (cudaMemcpy, or torch's cudaMemcpyAsync
    for pinned copies), measured in the same run (Note [CUDA bench cases])."""

    def check(r: _Results) -> Verdict:
        parts, ok = [], True
        for label, cid in ids.items():
            s, p = r.value(cid), r.value(cid, peer)
            if s is None or p is None:
                return Verdict(name, f"no data for {cid}", None)
            parts.append(f"{label} {s:.0f} GB/s = {s / p:.0%}")
            ok &= s >= share * p
        return Verdict(name, "; ".join(parts), ok)

    return check


def _cuda_empty(r: _Results) -> Verdict:
    name = "CUDA: st.empty(1024, device='cuda') from the cache <= 1 us per call and >= 2.5x faster than cupy"
    cid = "cuda/empty_1024_per_call_us"
    s, c = r.value(cid), r.value(cid, "cupy")
    if s is None or c is None:
        return Verdict(name, f"no data for {cid}", None)
    return Verdict(
        name, f"{s * 1e6:.2f} us (cupy {c * 1e6:.2f} us, {c / s:.2f}x)", s <= 1e-6 and c >= 2.5 * s
    )


_CUDA_PERMUTED = {
    "2-D transpose": "cuda/2_d_transpose_8192x8192_f32",
    "(2,0,1)": "cuda/2_0_1_of_512x512x256_f32",
    "NCHW->NHWC": "cuda/nchw_to_nhwc_64x256x64x64_f32",
    "reversal": "cuda/full_reversal_64x64x64x256_f32",
}
_CUDA_ODD = {"1000x3000": "cuda/odd_1000x3000_transpose_f32", "7x513x1025": "cuda/odd_7x513x1025_2_0_1_f32"}
_CUDA_BF16 = {"f32->bf16": "cuda/float32_to_bfloat16_64m", "bf16->f32": "cuda/bfloat16_to_float32_64m"}
_CUDA_PINNED = {"H2D": "cuda/pinned_h2d_256_mib", "D2H": "cuda/pinned_d2h_256_mib"}

_SHIM = "aoti/shim/"
_GETTERS = ("get_data_ptr", "get_sizes", "get_strides", "get_dim", "get_dtype", "get_storage_offset")

TARGETS: list[Callable[[_Results], Verdict]] = [
    _contiguous_vs_memcpy,
    _min_gbps(
        ">= 32 GB/s at >= 64 MiB (streaming stores)",
        {s: _copy_id("c2c", "float32-float32", s) for s in SIZES_LARGE},
        32.0,
    ),
    _min_gbps(
        "float32 -> bfloat16 >= 26 GB/s (bit-exactness: tests/kernels, tests/core)",
        {s: _copy_id("c2c", "float32-bfloat16", s) for s in SIZES_LARGE},
        26.0,
    ),
    _min_gbps(
        "strided at 64 MiB and 1 GiB >= 8 GB/s and >= 1.5x torch",
        {f"{lay} {s}": _copy_id(lay, "float32-float32", s) for lay in STRIDED for s in SIZES_LARGE},
        8.0,
        vs_torch=1.5,
    ),
    _min_gbps(
        "strided float32 -> bfloat16 >= 4 GB/s",
        {f"{lay} {s}": _copy_id(lay, "float32-bfloat16", s) for lay in STRIDED for s in SIZES_LARGE},
        4.0,
    ),
    _two_threads,
    _max_time(
        "view creation <= 200 ns",
        {c: f"call/{c}" for c in ("permute", "transpose", "slice", "as_strided", "reshape_view")},
        200e-9,
    ),
    _within_numpy,
    _max_time("empty (2x3) <= 250 ns", {"empty": "call/empty"}, 250e-9),
    _max_time(".shape and .stride() <= 60 ns", {"shape": "call/shape", "stride": "call/stride"}, 60e-9),
    _max_time("item() <= 50 ns", {"item": "call/item"}, 50e-9),
    _max_time("copy_ of 24 bytes <= 150 ns", {"copy_": "call/copy_24B"}, 150e-9),
    _max_time("DLPack import of a numpy array <= 400 ns", {"from_dlpack": "call/from_dlpack"}, 400e-9),
    _max_time(
        "C shim: empty_strided (2x3 float32) + delete <= 50 ns",
        {"": _SHIM + "empty_strided_2x3_f32_delete"},
        50e-9,
    ),
    _max_time(
        "C shim: create_tensor_from_blob_v2 + delete <= 40 ns",
        {"": _SHIM + "create_tensor_from_blob_v2_delete"},
        40e-9,
    ),
    _max_time(
        "C shim: _reinterpret_tensor + delete <= 30 ns", {"": _SHIM + "reinterpret_tensor_delete"}, 30e-9
    ),
    _max_time("C shim: item_float32 <= 10 ns", {"": _SHIM + "item_float32"}, 10e-9),
    _max_time("C shim: copy_ of 24 bytes <= 50 ns", {"": _SHIM + "copy_24_bytes"}, 50e-9),
    _max_time("C shim: each getter <= 3 ns", {g: _SHIM + g for g in _GETTERS}, 3e-9),
    _no_slower_than_torch(
        "AOTI model latency no worse than libtorch (pointwise, linear, MLP)",
        {m: f"aoti/model/{m}" for m in ("pointwise", "linear", "mlp")},
    ),
    # issue 12: the CPU models (the zoo included), at each thread count
    _every_model_vs_libtorch(
        AOTI_CPU_PREFIX + "every model <= 1.05x libtorch's latency (same .so, same run), 1 and 2 threads",
        "aoti/model/",
    ),
    _no_slower_than_torch(
        AOTI_CPU_PREFIX
        + "convolution (3x3 64->64 56x56, depthwise 5x5/2) within 10% of libtorch's, 1 and 2 threads",
        {
            f"{label}{' 2t' if suffix else ''}": f"aoti/conv/{slug}{suffix}"
            for label, slug in (("3x3", "3x3_64_64_56x56"), ("dw5x5/2", "dw5x5_2_144_56x56"))
            for suffix in ("", "/threads2")
        },
        slack=1.1,
    ),
    _no_slower_than_torch(
        "BLAS-backed addmm within 10% of torch's",
        {s: f"aoti/addmm/{s}" for s in ("64x256@256x256", "256x1024@1024x1024", "512x512@512x2048")},
        slack=1.1,
    ),
    _share_of(
        "CUDA: contiguous device-to-device >= 95% of cudaMemcpy",
        {"1 GiB": "cuda/contiguous_d2d_1_gib_f32"},
        0.95,
    ),
    _share_of("CUDA: the four permuted copies >= 70% of cudaMemcpy", _CUDA_PERMUTED, 0.7),
    _share_of("CUDA: odd shapes >= 50% of cudaMemcpy", _CUDA_ODD, 0.5),
    _share_of("CUDA: float32 <-> bfloat16 >= 90% of cudaMemcpy", _CUDA_BF16, 0.9),
    _share_of(
        "CUDA: pinned host <-> device >= 95% of cudaMemcpyAsync (torch's)", _CUDA_PINNED, 0.95, "torch"
    ),
    _cuda_empty,
    # issue 11: every CUDA model run eagerly
    _every_model_vs_libtorch(
        AOTI_CUDA_PREFIX + "every model <= 1.05x libtorch's latency (same .so, same run, CUDA events)",
        "aoti/cuda_model/",
    ),
    _cuda_graphs_vs_libtorch,
]


def check(results: dict) -> list[Verdict]:
    """Every target's verdict for a results dict."""
    r = _Results(results)
    return [target(r) for target in TARGETS]


def markdown(results: dict) -> str:
    mark = {True: "met", False: "missed", None: "no data"}
    lines = ["| target | result | |", "|---|---|---|"]
    for v in check(results):
        lines.append(f"| {v.target} | {v.result.lstrip()} | {mark[v.met]} |")
    return "\n".join(lines)

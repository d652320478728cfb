"""Benchmark of the CUDA op fallbacks against torch's own kernels in the same run (issue 11, "Speed").

Usage (repository root): python packages/slimtensor-cuda/bench/cuda_ops.py OUT.json. Rows: mm 4096x4096x4096 in
bfloat16 and float32 (slimtensor's cuBLASLt call vs torch.mm), and efficient attention at batch 8, 12 heads,
sequence 1024, head dim 64 in float32, bfloat16 and float16, causal and with a bias (slimtensor's kernel vs torch's
_scaled_dot_product_efficient_attention). Each op is called directly through the shim library (handles made once,
outside the timed region; the attention outputs are deleted after each call, as a model run does). CUDA events
around each call, the median of REPS runs after warm-up; ratio = slimtensor / torch (below 1 is faster). The
attention rows also give the time per call with 20 calls queued back to back (host overheads hidden: the
kernels' own time).
"""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import sys

REPS = 30
HERE = os.path.dirname(os.path.abspath(__file__))


def median_ms(torch, fn) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def queued_ms(torch, fn, n=20) -> float:
    """Per call when n calls are queued back to back (host overheads overlap the kernels): the device's time."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n):
            fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / n)
    return statistics.median(times)


def _calls():
    """The tests' helpers (tests/cuda/aoti_ops/_cuda_calls.py): the shim library with its prototypes declared."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "cuda", "aoti_ops"))
    import _cuda_calls

    return _cuda_calls


def _handle(t) -> int:
    from slimtensor.aoti import _lib

    return _lib.handle_from_capsule(t.__dlpack__())


def _delete(*handles) -> None:
    from slimtensor.aoti import _lib

    for h in handles:
        _lib.lib().aoti_torch_delete_tensor_object(h)


def bench_mm(torch, calls, dtype, n=4096) -> dict:
    L = calls.lib()
    a = torch.randn(n, n, device="cuda").to(dtype)
    b = torch.randn(n, n, device="cuda").to(dtype)
    out = torch.empty(n, n, device="cuda", dtype=dtype)
    ha, hb, ho = _handle(a), _handle(b), _handle(out)

    def ours():
        assert L.aoti_torch_cuda_mm_out(ho, ha, hb) == 0, calls.last_error()

    t_ours = median_ms(torch, ours)
    t_torch = median_ms(torch, lambda: torch.mm(a, b, out=out))
    _delete(ha, hb, ho)
    return _row(f"mm {n}x{n}x{n}", dtype, t_ours, t_torch, 2 * n**3)


def bench_attention(torch, calls, dtype, mode, B=8, H=12, S=1024, D=64) -> dict:
    L = calls.lib()
    q, k, v = (torch.randn(B, H, S, D, device="cuda").to(dtype) for _ in range(3))
    causal = mode == "causal"
    bias = torch.randn(B, 1, S, S, device="cuda").to(dtype).expand(B, H, S, S) if mode == "bias" else None
    hq, hk, hv = _handle(q), _handle(k), _handle(v)
    hb = ctypes.c_void_p(_handle(bias)) if bias is not None else None
    outs = [ctypes.c_void_p() for _ in range(4)]

    def ours():
        rc = L.aoti_torch_cuda__scaled_dot_product_efficient_attention(
            hq, hk, hv, ctypes.byref(hb) if hb is not None else None, 0, 0.0, int(causal), None,
            *[ctypes.byref(o) for o in outs],
        )  # fmt: skip
        assert rc == 0, calls.last_error()
        _delete(*[o.value for o in outs])

    def theirs():
        torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, bias, False, 0.0, causal)

    t_ours = median_ms(torch, ours)
    t_torch = median_ms(torch, theirs)
    q_ours, q_torch = queued_ms(torch, ours), queued_ms(torch, theirs)
    _delete(hq, hk, hv, *((hb.value,) if hb is not None else ()))
    flops = 4 * B * H * S * S * D * (0.5 if causal else 1.0)
    row = _row(f"efficient attention B{B} H{H} S{S} D{D} {mode}", dtype, t_ours, t_torch, flops)
    row.update(slimtensor_queued_ms=q_ours, torch_queued_ms=q_torch, queued_ratio=q_ours / q_torch)
    return row


def _row(op, dtype, t_ours, t_torch, flops) -> dict:
    return {
        "op": op,
        "dtype": str(dtype).split(".")[1],
        "slimtensor_ms": t_ours,
        "torch_ms": t_torch,
        "ratio": t_ours / t_torch,
        "slimtensor_tflops": flops / t_ours / 1e9,
        "torch_tflops": flops / t_torch / 1e9,
    }


def main(out_path: str) -> None:
    import torch

    calls = _calls()
    rows = []

    def measure(fn, *args, suffix=""):
        """One row; a failing case is recorded with its error, so the other rows still run."""
        try:
            r = fn(torch, calls, *args)
        except Exception as exc:  # noqa: BLE001  (a benchmark reports, it does not stop at one case)
            r = {"op": f"{fn.__name__}{args}", "error": f"{type(exc).__name__}: {exc}"}
        r["op"] += suffix
        rows.append(r)

    for dt in (torch.bfloat16, torch.float32):
        measure(bench_mm, dt)
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        for m in ("causal", "bias"):
            measure(bench_attention, dt, m)
    result = {
        "about": __doc__.splitlines()[0],
        "command": f"python packages/slimtensor-cuda/bench/cuda_ops.py {out_path}",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "reps": REPS,
        "rows": rows,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    for r in rows:
        if "error" in r:
            print(f"{r['op']:<60} FAILED: {r['error']}")
            continue
        print(
            f"{r['op']:<60} {r['dtype']:<9} slimtensor {r['slimtensor_ms']:8.3f} ms  torch {r['torch_ms']:8.3f} ms  "
            f"ratio {r['ratio']:.3f}  ({r['slimtensor_tflops']:.0f} vs {r['torch_tflops']:.0f} TFLOP/s)"
            + (
                f"  queued {r['slimtensor_queued_ms']:.3f} vs {r['torch_queued_ms']:.3f} ms"
                if "queued_ratio" in r
                else ""
            )
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda_ops.json")

"""Benchmark of slimtensor's CUDA copies against torch, cupy and cudaMemcpy in the same run.

Usage: python cuda_copies.py OUT.json. CUDA events around each copy, median of >= 20 runs after warm-up,
bandwidth counting bytes read + written. Rows: contiguous device-to-device, the four permuted copies of
issue 10, odd shapes, float32 <-> bfloat16, pinned host <-> device, and the per-call cost of
st.empty(1024, device="cuda") from the cache.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import slimtensor as st
import slimtensor_cuda as stc

REPS = 25


def timed(fn, sync_stream_events) -> float:
    """Median milliseconds of fn, timed with the given (start, end, record, sync) event helpers."""
    start_ev, end_ev, record, elapsed = sync_stream_events
    for _ in range(3):
        fn()
    times = []
    for _ in range(REPS):
        s, e = start_ev(), end_ev()
        record(s)
        fn()
        record(e)
        times.append(elapsed(s, e))
    return statistics.median(times)


def main(out_path: str) -> None:
    import torch

    try:
        import cupy as cp
    except Exception:  # noqa: BLE001
        cp = None
    stc.register()
    torch_ev = (lambda: torch.cuda.Event(enable_timing=True), lambda: torch.cuda.Event(enable_timing=True),
                lambda e: e.record(), lambda s, e: (e.synchronize(), s.elapsed_time(e))[1])
    st_ev = (lambda: stc.Event(enable_timing=True), lambda: stc.Event(enable_timing=True),
             lambda e: e.record(), lambda s, e: (e.synchronize(), s.elapsed_time(e))[1])
    rows = []

    def row(name, nbytes_rw, st_fn, torch_fn, cupy_fn=None, memcpy_ms=None):
        r = {"case": name, "bytes": nbytes_rw}
        r["slimtensor_ms"] = timed(st_fn, st_ev)
        r["torch_ms"] = timed(torch_fn, torch_ev)
        if cupy_fn is not None:
            r["cupy_ms"] = timed(cupy_fn, torch_ev)
        for k in ("slimtensor", "torch", "cupy"):
            if f"{k}_ms" in r:
                r[f"{k}_GBps"] = nbytes_rw / r[f"{k}_ms"] / 1e6
        if memcpy_ms:
            r["memcpy_GBps"] = nbytes_rw / memcpy_ms / 1e6
            r["ratio_vs_memcpy"] = r["slimtensor_GBps"] / r["memcpy_GBps"]
        r["ratio_vs_torch"] = r["torch_ms"] / r["slimtensor_ms"]
        rows.append(r)
        print(json.dumps(r), flush=True)

    # cudaMemcpy baseline: a contiguous device-to-device copy of the same byte count (torch copy_ = memcpy).
    def memcpy_ms(nbytes):
        a = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        b = torch.empty_like(a)
        return timed(lambda: b.copy_(a), torch_ev)

    n = 256 << 20
    src = st.empty(n // 4, dtype=st.float32, device="cuda")
    dst = st.empty(n // 4, dtype=st.float32, device="cuda")
    ta, tb = torch.empty(n // 4, device="cuda"), torch.empty(n // 4, device="cuda")
    base = memcpy_ms(n)
    cpa = cp.empty(n // 4, dtype=cp.float32) if cp else None
    cpb = cp.empty_like(cpa) if cp else None
    row("contiguous D2D 1 GiB f32", 2 * n, lambda: dst.copy_(src), lambda: tb.copy_(ta),
        (lambda: cpb.__setitem__(slice(None), cpa)) if cp else None, base)
    del src, dst, ta, tb, cpa, cpb

    perms = [("2-D transpose 8192x8192 f32", (8192, 8192), (1, 0)), ("(2,0,1) of 512x512x256 f32", (512, 512, 256), (2, 0, 1)),
             ("NCHW->NHWC 64x256x64x64 f32", (64, 256, 64, 64), (0, 2, 3, 1)),
             ("full reversal 64x64x64x256 f32", (64, 64, 64, 256), (3, 2, 1, 0)),
             ("odd 1000x3000 transpose f32", (1000, 3000), (1, 0)), ("odd 7x513x1025 (2,0,1) f32", (7, 513, 1025), (2, 0, 1))]
    for name, shape, perm in perms:
        numel = 1
        for s_ in shape:
            numel *= s_
        a = st.empty(*shape, dtype=st.float32, device="cuda")
        b = st.empty(*[shape[p] for p in perm], dtype=st.float32, device="cuda")
        av = a.permute(*perm)
        t = torch.empty(*shape, device="cuda")
        tbuf = torch.empty(*[shape[p] for p in perm], device="cuda")
        cpf = None
        if cp:
            ca = cp.empty(shape, dtype=cp.float32)
            cb = cp.empty([shape[p] for p in perm], dtype=cp.float32)
            cpf = lambda ca=ca, cb=cb, perm=perm: cb.__setitem__(Ellipsis, ca.transpose(perm))  # noqa: E731
        row(name, 8 * numel, lambda b=b, av=av: b.copy_(av), lambda t=t, tb=tbuf, perm=perm: tb.copy_(t.permute(*perm)),
            cpf, memcpy_ms(4 * numel))
        del a, b, av, t, tbuf

    numel = 1 << 26
    for sdt, ddt, tsd, tdd in ((st.float32, st.bfloat16, torch.float32, torch.bfloat16), (st.bfloat16, st.float32, torch.bfloat16, torch.float32)):
        a = st.empty(numel, dtype=sdt, device="cuda")
        b = st.empty(numel, dtype=ddt, device="cuda")
        ta, tb = torch.empty(numel, dtype=tsd, device="cuda"), torch.empty(numel, dtype=tdd, device="cuda")
        nb = numel * (sdt.itemsize + ddt.itemsize)
        row(f"{sdt.name}->{ddt.name} 64M", nb, lambda a=a, b=b: b.copy_(a), lambda ta=ta, tb=tb: tb.copy_(ta), None, memcpy_ms(nb // 2))
        del a, b, ta, tb

    nbytes = 256 << 20
    h = st.empty(nbytes, dtype=st.uint8, pin_memory=True)
    d = st.empty(nbytes, dtype=st.uint8, device="cuda")
    th = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    td = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    row("pinned H2D 256 MiB", nbytes, lambda: d.copy_(h, non_blocking=True), lambda: td.copy_(th, non_blocking=True))
    row("pinned D2H 256 MiB", nbytes, lambda: h.copy_(d, non_blocking=True), lambda: th.copy_(td, non_blocking=True))
    del h, d, th, td

    def per_call(fn, k=20000):
        for _ in range(1000):
            fn()
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            best.append((time.perf_counter() - t0) / k * 1e6)
        return min(best)

    empty = {"case": "empty(1024) per call (us)", "slimtensor_us": per_call(lambda: st.empty(1024, device="cuda")),
             "torch_us": per_call(lambda: torch.empty(1024, device="cuda"))}
    if cp:
        empty["cupy_us"] = per_call(lambda: cp.empty(1024, dtype=cp.float32))
    print(json.dumps(empty))
    rows.append(empty)
    meta = {"device": stc.get_device_name(), "torch": torch.__version__, "cupy": getattr(cp, "__version__", None), "reps": REPS}
    with open(out_path, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda_copies.json")

"""Benchmark of slimtensor's CUDA copies against torch, cupy and cudaMemcpy in the same run.

Usage: python cuda_copies.py OUT.json [--quick]. CUDA events around each copy, median of REPS runs after
warm-up, bandwidth counting bytes read + written; ratio = slimtensor's bandwidth / a cudaMemcpy
device-to-device copy's of the same byte count, measured in the same run.

Every case whose buffers would fit in the L2 cache (60 MiB on an H200) rotates among enough buffer pairs
that each timed copy reads and writes DRAM (the memcpy baseline rotates the same way): every number is a
DRAM bandwidth. Rows: contiguous device-to-device, the four permuted copies of issue 10, odd shapes, every
non-identity permutation of a 4-D odd shape, other element sizes, permuted conversions, every dtype pair
(dense), float32 <-> bfloat16, pinned host <-> device, and the per-call cost of st.empty(1024, device="cuda")
from the cache. --quick: the permuted rows only.
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
import time

import slimtensor as st
import slimtensor_cuda as stc

REPS = 25
ROTATE_BYTES = (
    3 * 60 * 2**20
)  # three times the H200's L2: no buffer is still cached when it comes round again


def timed(fns, ev) -> float:
    """Median milliseconds of one call, cycling through fns (one per buffer set), with event helpers ev."""
    make, record, elapsed = ev
    for f in fns:
        f()
    times = []
    for i in range(REPS):
        s, e = make(), make()
        record(s)
        fns[i % len(fns)]()
        record(e)
        times.append(elapsed(s, e))
    return statistics.median(times)


def copies_needed(nbytes_rw: int) -> int:
    """Buffer sets to rotate so that one round of them exceeds the L2 several times."""
    return max(1, -(-ROTATE_BYTES // max(1, nbytes_rw)))


def main(out_path: str, quick: bool) -> None:
    import torch

    try:
        import cupy as cp
    except Exception:  # noqa: BLE001
        cp = None
    stc.register()
    torch_ev = (
        lambda: torch.cuda.Event(enable_timing=True),
        lambda e: e.record(),
        lambda s, e: (e.synchronize(), s.elapsed_time(e))[1],
    )
    st_ev = (
        lambda: stc.Event(enable_timing=True),
        lambda e: e.record(),
        lambda s, e: (e.synchronize(), s.elapsed_time(e))[1],
    )
    rows = []
    memcpy_cache: dict[int, float] = {}

    def memcpy_ms(nbytes_one_side: int) -> float:
        """A contiguous device-to-device copy of that many bytes (torch copy_ = cudaMemcpyAsync), rotated."""
        if nbytes_one_side not in memcpy_cache:
            k = copies_needed(2 * nbytes_one_side)
            bufs = [
                (
                    torch.empty(nbytes_one_side, dtype=torch.uint8, device="cuda"),
                    torch.empty(nbytes_one_side, dtype=torch.uint8, device="cuda"),
                )
                for _ in range(k)
            ]
            memcpy_cache[nbytes_one_side] = timed([lambda a=a, b=b: b.copy_(a) for a, b in bufs], torch_ev)
        return memcpy_cache[nbytes_one_side]

    def row(name, nbytes_rw, st_fns, torch_fns=None, cupy_fns=None, memcpy=None, group="main"):
        r = {"case": name, "group": group, "bytes": nbytes_rw, "rotated": len(st_fns)}
        r["slimtensor_ms"] = timed(st_fns, st_ev)
        if torch_fns:
            r["torch_ms"] = timed(torch_fns, torch_ev)
        if cupy_fns:
            r["cupy_ms"] = timed(cupy_fns, torch_ev)
        for k in ("slimtensor", "torch", "cupy"):
            if f"{k}_ms" in r:
                r[f"{k}_GBps"] = nbytes_rw / r[f"{k}_ms"] / 1e6
        if memcpy is not None:
            r["memcpy_GBps"] = nbytes_rw / memcpy / 1e6
            r["ratio_vs_memcpy"] = r["slimtensor_GBps"] / r["memcpy_GBps"]
        if "torch_ms" in r:
            r["ratio_vs_torch"] = r["torch_ms"] / r["slimtensor_ms"]
        rows.append(r)
        print(json.dumps(r), flush=True)

    def rand_st(shape, dtype):
        """A slimtensor CUDA tensor of random bytes (never zeros: they hide unwritten output)."""
        n = 1
        for s_ in shape:
            n *= s_
        raw = torch.randint(0, 256, (n * dtype.itemsize,), dtype=torch.uint8, device="cuda")
        return st.from_dlpack(raw).view(dtype).reshape(*shape)

    def permuted(name, shape, perm, dtype=st.float32, dst_dtype=None, group="main", compare=True):
        dst_dtype = dst_dtype or dtype
        numel = 1
        for s_ in shape:
            numel *= s_
        nb = numel * (dtype.itemsize + dst_dtype.itemsize)
        k = copies_needed(nb)
        out_shape = [shape[p] for p in perm]
        st_fns, torch_fns, cupy_fns = [], [], []
        for _ in range(k):
            a = rand_st(shape, dtype).permute(*perm)
            b = st.empty(*out_shape, dtype=dst_dtype, device="cuda")
            st_fns.append(lambda a=a, b=b: b.copy_(a))
            if compare and dtype is st.float32 and dst_dtype is st.float32:
                t = torch.rand(*shape, device="cuda")
                tb = torch.empty(*out_shape, device="cuda")
                torch_fns.append(lambda t=t, tb=tb: tb.copy_(t.permute(*perm)))
                if cp:
                    ca = cp.asarray(t)
                    cb = cp.empty(out_shape, dtype=cp.float32)
                    cupy_fns.append(lambda ca=ca, cb=cb: cb.__setitem__(Ellipsis, ca.transpose(perm)))
        row(name, nb, st_fns, torch_fns or None, cupy_fns or None, memcpy_ms(nb // 2), group)

    if not quick:
        n = 256 << 20
        src = rand_st((n // 4,), st.float32)
        dst = st.empty(n // 4, dtype=st.float32, device="cuda")
        ta, tb = torch.rand(n // 4, device="cuda"), torch.empty(n // 4, device="cuda")
        cpa = cp.asarray(ta) if cp else None
        cpb = cp.empty_like(cpa) if cp else None
        row(
            "contiguous D2D 1 GiB f32",
            2 * n,
            [lambda: dst.copy_(src)],
            [lambda: tb.copy_(ta)],
            [lambda: cpb.__setitem__(slice(None), cpa)] if cp else None,
            memcpy_ms(n),
        )
        del src, dst, ta, tb, cpa, cpb

    for name, shape, perm in [
        ("2-D transpose 8192x8192 f32", (8192, 8192), (1, 0)),
        ("(2,0,1) of 512x512x256 f32", (512, 512, 256), (2, 0, 1)),
        ("NCHW->NHWC 64x256x64x64 f32", (64, 256, 64, 64), (0, 2, 3, 1)),
        ("full reversal 64x64x64x256 f32", (64, 64, 64, 256), (3, 2, 1, 0)),
        ("odd 1000x3000 transpose f32", (1000, 3000), (1, 0)),
        ("odd 7x513x1025 (2,0,1) f32", (7, 513, 1025), (2, 0, 1)),
        ("odd NCHW->NHWC 8x3x513x257 f32", (8, 3, 513, 257), (0, 2, 3, 1)),
        ("odd NHWC->NCHW 8x513x257x3 f32", (8, 513, 257, 3), (0, 3, 1, 2)),
    ]:
        permuted(name, shape, perm)

    # Every non-identity permutation of an odd 4-D shape (no size a multiple of a tile or a vector).
    odd4 = (33, 47, 61, 79)
    for perm in itertools.permutations(range(4)):
        if perm != (0, 1, 2, 3):
            permuted(f"perm {perm} of 33x47x61x79 f32", odd4, perm, group="perm4", compare=False)
    for dtype in (st.uint8, st.bfloat16, st.float64, st.complex128):
        permuted(
            f"1000x3000 transpose {dtype.name}", (1000, 3000), (1, 0), dtype, group="dtypes", compare=False
        )
        permuted(
            f"7x513x1025 (2,0,1) {dtype.name}",
            (7, 513, 1025),
            (2, 0, 1),
            dtype,
            group="dtypes",
            compare=False,
        )
        permuted(
            f"4096x4096 transpose {dtype.name}", (4096, 4096), (1, 0), dtype, group="dtypes", compare=False
        )
    for sd, dd in (
        (st.float32, st.bfloat16),
        (st.bfloat16, st.float32),
        (st.float32, st.float64),
        (st.float16, st.uint8),
        (st.uint8, st.complex128),
        (st.complex64, st.float16),
    ):
        permuted(
            f"4096x4096 transpose {sd.name}->{dd.name}", (4096, 4096), (1, 0), sd, dd, group="convert-perm"
        )
    # A slice (gather path, same fast dim on both sides) and a misaligned one.
    big = rand_st((8192, 8192), st.float32)
    out1 = st.empty(8192, 4096, dtype=st.float32, device="cuda")
    row(
        "slice [:, ::2] 8192x8192 f32",
        8192 * 4096 * 8,
        [lambda: out1.copy_(big[:, ::2])],
        memcpy=memcpy_ms(8192 * 4096 * 4),
        group="gather",
    )
    out2 = st.empty(8192, 8191, dtype=st.float32, device="cuda")
    row(
        "slice [:, 1:] 8192x8192 f32",
        8192 * 8191 * 8,
        [lambda: out2.copy_(big[:, 1:])],
        memcpy=memcpy_ms(8192 * 8191 * 4),
        group="gather",
    )
    out3 = st.empty(8192, 4096, dtype=st.float32, device="cuda")
    row(
        "slice [:, :4096] 8192x8192 f32",
        8192 * 4096 * 8,
        [lambda: out3.copy_(big[:, :4096])],
        memcpy=memcpy_ms(8192 * 4096 * 4),
        group="gather",
    )
    del big, out1, out2, out3

    if not quick:
        # Every dtype pair, dense, 64M elements.
        names = [
            "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
            "complex32", "complex64", "complex128", "bool", "bfloat16", "uint16", "uint32", "uint64",
        ]  # fmt: skip
        dts = [getattr(st, n_) for n_ in names if hasattr(st, n_)]
        numel = 64 << 20  # a 1-byte source alone is past the L2
        srcs = {d.name: rand_st((numel,), d) for d in dts}
        for sd in dts:
            for dd in dts:
                if sd is dd:
                    continue
                b = st.empty(numel, dtype=dd, device="cuda")
                nb = numel * (sd.itemsize + dd.itemsize)
                a = srcs[sd.name]
                row(
                    f"pair {sd.name}->{dd.name} 64M",  # not the main rows' names: case ids stay unique
                    nb,
                    [lambda a=a, b=b: b.copy_(a)],
                    memcpy=memcpy_ms(nb // 2),
                    group="pairs",
                )
                del b
        del srcs

        numel = 1 << 26
        for sdt, ddt, tsd, tdd in (
            (st.float32, st.bfloat16, torch.float32, torch.bfloat16),
            (st.bfloat16, st.float32, torch.bfloat16, torch.float32),
        ):
            a = rand_st((numel,), sdt)
            b = st.empty(numel, dtype=ddt, device="cuda")
            ta = torch.rand(numel, device="cuda").to(tsd)
            tb = torch.empty(numel, dtype=tdd, device="cuda")
            nb = numel * (sdt.itemsize + ddt.itemsize)
            row(
                f"{sdt.name}->{ddt.name} 64M",
                nb,
                [lambda a=a, b=b: b.copy_(a)],
                [lambda ta=ta, tb=tb: tb.copy_(ta)],
                None,
                memcpy_ms(nb // 2),
            )
            del a, b, ta, tb

        nbytes = 256 << 20
        h = st.empty(nbytes, dtype=st.uint8, pin_memory=True)
        d = st.empty(nbytes, dtype=st.uint8, device="cuda")
        th = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
        td = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        row(
            "pinned H2D 256 MiB",
            nbytes,
            [lambda: d.copy_(h, non_blocking=True)],
            [lambda: td.copy_(th, non_blocking=True)],
        )
        row(
            "pinned D2H 256 MiB",
            nbytes,
            [lambda: h.copy_(d, non_blocking=True)],
            [lambda: th.copy_(td, non_blocking=True)],
        )
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

        empty = {
            "case": "empty(1024) per call (us)",
            "group": "empty",
            "slimtensor_us": per_call(lambda: st.empty(1024, device="cuda")),
            "slimtensor_cpu_us": per_call(lambda: st.empty(1024)),
            "torch_us": per_call(lambda: torch.empty(1024, device="cuda")),
        }
        if cp:
            empty["cupy_us"] = per_call(lambda: cp.empty(1024, dtype=cp.float32))
        print(json.dumps(empty))
        rows.append(empty)

    meta = {
        "device": stc.get_device_name(),
        "torch": torch.__version__,
        "cupy": getattr(cp, "__version__", None),
        "reps": REPS,
        "note": "bandwidth = bytes read + written / median time; buffers rotated past the L2 (DRAM numbers)",
    }
    with open(out_path, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    print_table(rows, meta)


def print_table(rows, meta) -> None:
    """The summary: main rows in full, the sweeps as min/median ratio and their worst case."""
    print(f"\n# {meta['device']}; {meta['note']}")
    print(f"{'case':44s} {'slimtensor':>10s} {'torch':>8s} {'cupy':>8s} {'memcpy':>8s} {'ratio':>6s}  (GB/s)")
    groups: dict[str, list] = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r)
    for r in groups.get("main", []):
        f = lambda k, r=r: f"{r[k]:8.0f}" if k in r else f"{'-':>8s}"  # noqa: E731
        ratio = f"{r['ratio_vs_memcpy']:6.3f}" if "ratio_vs_memcpy" in r else f"{'-':>6s}"
        print(
            f"{r['case']:44s} {r['slimtensor_GBps']:10.0f} {f('torch_GBps')} {f('cupy_GBps')} {f('memcpy_GBps')} {ratio}"
        )
    for g in ("perm4", "dtypes", "convert-perm", "gather", "pairs"):
        rs = groups.get(g, [])
        if not rs:
            continue
        ratios = sorted(r["ratio_vs_memcpy"] for r in rs)
        worst = min(rs, key=lambda r: r["ratio_vs_memcpy"])
        print(
            f"[{g}] {len(rs)} cases: ratio min {ratios[0]:.3f} median {statistics.median(ratios):.3f} max {ratios[-1]:.3f};"
            f" worst {worst['case']}"
        )
        if g != "pairs":
            for r in rs:
                print(f"   {r['case']:44s} {r['ratio_vs_memcpy']:.2f}")
        else:
            low = [r for r in rs if r["ratio_vs_memcpy"] < 0.7]
            print(
                "   below 0.70: "
                + ("; ".join(f"{r['case']} {r['ratio_vs_memcpy']:.2f}" for r in low) or "none")
            )
    for r in groups.get("empty", []):
        cupy = f"{r['cupy_us']:.2f}" if "cupy_us" in r else "-"
        print(
            f"empty(1024, device='cuda') per call: slimtensor {r['slimtensor_us']:.2f} us "
            f"(cpu empty {r['slimtensor_cpu_us']:.2f}), torch {r['torch_us']:.2f}, cupy {cupy}"
        )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(args[0] if args else "cuda_copies.json", "--quick" in sys.argv)

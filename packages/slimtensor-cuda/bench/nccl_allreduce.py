"""Bandwidth of a 256 MiB float32 all_reduce on slimtensor's NCCL backend next to torch.distributed's NCCL, in the
same processes and run (issue 16, "Tests and speed").

Usage (repository root): python -m slimtensor.distributed.run --nproc N packages/slimtensor-cuda/bench/nccl_allreduce.py
--out OUT.json [--iters 20] [--mib 256]. Each rank uses GPU LOCAL_RANK. For each library: warm-up, then ITERS
in-place sum all_reduce calls on the current stream, each between two CUDA events; the median time gives
algbw = bytes / t and busbw = algbw * 2 (n - 1) / n (NCCL's convention in nccl-tests, so the numbers compare
with NCCL's own figures); with one rank busbw is 0 by that formula and algbw is what is measured. Both
libraries reduce the same values; "correct" says whether the result equals the host's sum. Rank 0 writes
the JSON; nothing is asserted about speed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile


def _stats(times_ms: list[float], nbytes: int, world: int) -> dict:
    t = statistics.median(times_ms) / 1e3
    algbw = nbytes / t / 1e9
    return {
        "median_ms": statistics.median(times_ms),
        "min_ms": min(times_ms),
        "algbw_gbps": algbw,
        "busbw_gbps": algbw * 2 * (world - 1) / world,
    }


def bench_slimtensor(nbytes: int, iters: int, rank: int, world: int) -> dict:
    import numpy as np
    import slimtensor as st
    import slimtensor.distributed as dist
    import slimtensor_cuda as stc

    dist.init_process_group("nccl", timeout=120)
    n = nbytes // 4
    t = st.full((n,), float(rank + 1), dtype=st.float32, device="cuda")
    for _ in range(3):
        dist.all_reduce(t)
    stc.synchronize()
    times = []
    for _ in range(iters):
        a, b = stc.Event(enable_timing=True), stc.Event(enable_timing=True)
        a.record()
        dist.all_reduce(t)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    # a fresh tensor of each rank's value (rank + 1): the sum is 1 + ... + world
    check = st.full((4,), float(rank + 1), dtype=st.float32, device="cuda")
    dist.all_reduce(check)
    correct = bool(np.all(check.cpu().numpy() == world * (world + 1) / 2))
    del t, check
    dist.destroy_process_group()
    return {**_stats(times, nbytes, world), "correct": correct}


def bench_torch(nbytes: int, iters: int, rank: int, world: int, folder: str) -> dict:
    import torch
    import torch.distributed as tdist

    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    tdist.init_process_group(
        "nccl", init_method=f"file://{folder}/torch_store", rank=rank, world_size=world, device_id=device
    )
    t = torch.full((nbytes // 4,), float(rank + 1), dtype=torch.float32, device=device)
    for _ in range(3):
        tdist.all_reduce(t)
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        tdist.all_reduce(t)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    check = torch.full((4,), float(rank + 1), dtype=torch.float32, device=device)
    tdist.all_reduce(check)
    correct = bool((check == world * (world + 1) / 2).all().item())
    tdist.destroy_process_group()
    return {**_stats(times, nbytes, world), "correct": correct}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--store", default=None, help="a folder every rank sees (torch's file store)")
    ns = parser.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    import slimtensor_cuda as stc

    stc.set_device(int(os.environ["LOCAL_RANK"]))
    nbytes = ns.mib << 20
    ours = bench_slimtensor(nbytes, ns.iters, rank, world)
    store = ns.store or os.path.join(tempfile.gettempdir(), f"nccl_allreduce_{os.environ['MASTER_PORT']}")
    os.makedirs(store, exist_ok=True)
    theirs = bench_torch(nbytes, ns.iters, rank, world, store)
    if rank == 0:
        from slimtensor_cuda import _nccl

        key = "busbw_gbps" if world > 1 else "algbw_gbps"
        result = {
            "bytes": nbytes,
            "world_size": world,
            "iters": ns.iters,
            "nccl_version": ".".join(map(str, _nccl.version())),
            "NCCL_NVLS_ENABLE": os.environ.get("NCCL_NVLS_ENABLE"),
            "slimtensor": ours,
            "torch": theirs,
            "ratio": ours[key] / theirs[key],
            "ratio_of": key,
        }
        with open(ns.out, "w") as f:
            json.dump(result, f, indent=2)
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

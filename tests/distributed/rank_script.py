"""One rank of the distributed tests, started by slimtensor.distributed.run (or directly with RANK etc. set).

Usage: rank_script.py INIT_METHOD SCENARIO RESULT_FOLDER. Writes RESULT_FOLDER/rank<R>.json.
"""

from __future__ import annotations

import json
import os
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_backend  # noqa: E402
import slimtensor as st  # noqa: E402
import slimtensor.distributed as dist  # noqa: E402


def values(rank: int, dtype) -> np.ndarray:
    return (np.arange(12, dtype=np.float64).reshape(3, 4) * (rank + 1) - rank).astype(dtype)


def main() -> None:
    init_method, scenario, folder = sys.argv[1:4]
    host_backend.register()
    rank = int(os.environ["RANK"])
    out: dict = {
        "env": {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "NCCL_NVLS_ENABLE")}
    }
    timeout = 4.0 if scenario == "dead_rank" else 60.0
    group = dist.init_process_group("host", init_method=init_method, timeout=timeout)
    out["default_name"] = group.name
    if scenario == "all_reduce":
        for dtype_name in ("float32", "bfloat16", "int32"):
            dtype = ml_dtypes.bfloat16 if dtype_name == "bfloat16" else np.dtype(dtype_name)
            for op in dist.REDUCE_OPS:
                t = st.asarray(values(rank, dtype))  # a slimtensor CPU tensor over numpy memory
                dist.all_reduce(t, op)
                out[f"{dtype_name}/{op}"] = np.asarray(t).astype(np.float64).tolist()
        sub = dist.new_group([0, 1])
        out["subgroup"] = None if sub is None else [sub.name, sub.rank, sub.size]
        named = dist.new_group(group_name="tp_group")
        out["named"] = named.name
        a = st.asarray(values(rank, np.float32))
        dist.all_reduce(a, "sum", group="tp_group", async_op=True)
        dist.wait_tensor(a, group="tp_group")
        out["async_sum"] = np.asarray(a).tolist()
    elif scenario == "dead_rank":
        if rank == 1:
            os._exit(3)  # dies after joining: the others' all_reduce must fail within the timeout, not hang
        t0 = time.monotonic()
        try:
            dist.all_reduce(st.asarray(values(rank, np.float32)), "sum")
            out["error"] = None
        except TimeoutError as exc:
            out["error"] = str(exc)
        out["waited"] = time.monotonic() - t0
    dist.destroy_process_group()
    with open(os.path.join(folder, f"rank{rank}.json"), "w") as f:
        json.dump(out, f)
    if scenario == "dead_rank" and out.get("error"):
        sys.exit(5)


if __name__ == "__main__":
    main()

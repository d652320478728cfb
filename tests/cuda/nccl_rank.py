"""One rank of the NCCL tests on several GPUs (test_nccl_two_gpus.py), started by slimtensor.distributed.run.

Usage: nccl_rank.py MODE OUT_DIR [MODEL_DIR]
  all_reduce  sum/avg/max of float32 and bfloat16 contributions -> OUT_DIR/all_reduce{rank}.npz
  tp          runs tp_block_{rank}of{world}.pt2 of MODEL_DIR -> OUT_DIR/tp{rank}.npy
  die         after a first all_reduce, rank 1 exits with status 3; rank 0 keeps reducing until its group
              fails -> OUT_DIR/die0.json (the error, the seconds it took)
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import slimtensor as st
import slimtensor.distributed as dist
import slimtensor_cuda as stc

OPS = ("sum", "avg", "max")
DTYPES = ("float32", "bfloat16")
DIE_TIMEOUT_S = 10.0


def contribution(rank: int, dtype: str) -> np.ndarray:
    """Rank r's values: quarters, so every sum, average and maximum of two is exact in bfloat16."""
    x = ((np.arange(4096) % 13) - 6 + 3 * rank).astype(np.float32) / 4
    if dtype == "bfloat16":
        import ml_dtypes

        return x.astype(ml_dtypes.bfloat16)
    return x


def main() -> None:
    mode, out = sys.argv[1], sys.argv[2]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    stc.set_device(int(os.environ["LOCAL_RANK"]))
    if mode == "all_reduce":
        dist.init_process_group("nccl", timeout=60)
        got = {}
        for dtype in DTYPES:
            for op in OPS:
                t = st.asarray(contribution(rank, dtype)).to("cuda")
                dist.all_reduce(t, op)
                got[f"{dtype}_{op}"] = t.cpu().numpy().astype(np.float32)
        dist.destroy_process_group()
        np.savez(os.path.join(out, f"all_reduce{rank}.npz"), **got)
    elif mode == "tp":
        from slimtensor import aoti

        dist.init_process_group("nccl", timeout=60)
        path = os.path.join(sys.argv[3], f"tp_block_{rank}of{world}.pt2")
        x = st.asarray(np.load(os.path.join(sys.argv[3], f"tp_block_{rank}of{world}.npz"))["in0_0"]).to(
            "cuda"
        )
        with aoti.load(path, device="cuda") as model:
            outs = model(x)
            y = outs[0] if isinstance(outs, (tuple, list)) else outs
            np.save(os.path.join(out, f"tp{rank}.npy"), y.cpu().numpy())
        dist.destroy_process_group()
    elif mode == "die":
        dist.init_process_group("nccl", timeout=DIE_TIMEOUT_S)
        t = st.asarray(np.ones(1 << 20, np.float32)).to("cuda")
        dist.all_reduce(t)
        stc.synchronize()
        if rank == 1:
            os._exit(3)  # dies without a word to the others
        start, error = time.monotonic(), None
        while time.monotonic() - start < 120:
            try:
                dist.all_reduce(t)
                stc.synchronize()
            except RuntimeError as exc:
                error = str(exc)
                break
        with open(os.path.join(out, "die0.json"), "w") as f:
            json.dump({"error": error, "seconds": time.monotonic() - start}, f)
        dist.destroy_process_group()
    else:
        raise SystemExit(f"nccl_rank.py: unknown mode {mode!r}")


if __name__ == "__main__":
    main()

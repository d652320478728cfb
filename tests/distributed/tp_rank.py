"""One rank of the CPU tensor-parallel tests: runs a compiled model on slimtensor with the host stand-in backend
as group "0". Usage: tp_rank.py MODEL.pt2 RESULT_FOLDER [INPUTS.npz]. "{rank}" and "{world}" in MODEL.pt2 and
INPUTS.npz name each rank's files; without INPUTS.npz the input is tp_row_linear's, derived from the rank."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_backend  # noqa: E402
import slimtensor.distributed as dist  # noqa: E402
from slimtensor import _C, aoti  # noqa: E402


def main() -> None:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    model_path, folder = (a.format(rank=rank, world=world) for a in sys.argv[1:3])
    host_backend.register()
    dist.init_process_group("host", timeout=60)
    if len(sys.argv) > 3:
        x = np.load(sys.argv[3].format(rank=rank, world=world))["in0_0"]
    else:
        x = (np.arange(24, dtype=np.float32).reshape(3, 8) + 10 * rank) / 16
    with aoti.load(model_path) as model:
        (y,) = model.run_numpy(x)
    counts = _C._collective_counts()
    dist.destroy_process_group()
    np.save(os.path.join(folder, f"y{rank}.npy"), np.asarray(y))
    np.save(os.path.join(folder, f"counts{rank}.npy"), np.array([*counts, *_C._collective_counts()]))


if __name__ == "__main__":
    main()

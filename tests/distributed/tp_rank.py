"""One rank of the CPU tensor-parallel test: runs the compiled tp_row_linear model on slimtensor with the
host stand-in backend as group "0". Usage: tp_rank.py MODEL.pt2 RESULT_FOLDER."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_backend  # noqa: E402
import slimtensor.distributed as dist  # noqa: E402
from slimtensor import _C, aoti  # noqa: E402


def main() -> None:
    model_path, folder = sys.argv[1:3]
    host_backend.register()
    rank = int(os.environ["RANK"])
    dist.init_process_group("host", timeout=60)
    x = (np.arange(24, dtype=np.float32).reshape(3, 8) + 10 * rank) / 16
    with aoti.load(model_path) as model:
        (y,) = model.run_numpy(x)
    counts = _C._collective_counts()
    dist.destroy_process_group()
    np.save(os.path.join(folder, f"y{rank}.npy"), np.asarray(y))
    np.save(os.path.join(folder, f"counts{rank}.npy"), np.array([*counts, *_C._collective_counts()]))


if __name__ == "__main__":
    main()

"""One AOTI model run concurrently from 4 threads, results checked: the program `make test-tsan` runs under
ThreadSanitizer (issue 14), with libslimtensor and slimtensor._C built -fsanitize=thread.

Run: python tests/aoti/tsan_model_threads.py MODEL_DIR [RUNS]. MODEL_DIR holds the compiled test models
(tests/aoti/compile_models.py: mlp.pt2 and its reference mlp.json/mlp.npz). Each of 4 threads runs the model
RUNS times through one container of num_models=4 (Note [Concurrent runs] in slimtensor/aoti/_model.py) and
compares every output with torch's eager output; afterwards every AOTI handle and CPU storage is released.
The model's kernels run on libgomp, which is not TSan-instrumented: its threads run no instrumented code, and
reports from inside it are suppressed (tests/aoti/tsan.supp), as the docs say.
"""

from __future__ import annotations

import json
import os
import sys
import threading

import numpy as np


def main() -> int:
    model_dir = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    import slimtensor as st
    from slimtensor import aoti

    with open(os.path.join(model_dir, "mlp.json")) as f:
        meta = json.load(f)
    z = np.load(os.path.join(model_dir, "mlp.npz"))
    inputs = [z[f"in0_{i}"] for i in range(len(meta["inputs"][0]))]
    expected = [z[f"out0_{i}"] for i in range(len(meta["outputs"][0]))]
    handles, storages = aoti.live_handles(), st.memory_stats("cpu")["live_storages"]
    errors: list[BaseException] = []
    done = [0] * 4
    with aoti.load(os.path.join(model_dir, "mlp.pt2"), num_models=4) as m:
        start = threading.Barrier(4)

        def work(k: int) -> None:
            try:
                start.wait()  # all four inside run() together
                for _ in range(runs):
                    got = m.run_numpy(*inputs)
                    for g, e in zip(got, expected, strict=True):
                        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)
                    done[k] += 1
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]
    import gc

    gc.collect()
    left = aoti.live_handles() - handles, st.memory_stats("cpu")["live_storages"] - storages
    assert left == (0, 0), f"handles and storages not back to baseline: {left}"
    print(f"ok: 4 threads x {runs} runs of mlp, {sum(done)} results checked, no handle or storage left")
    return 0


if __name__ == "__main__":
    sys.exit(main())

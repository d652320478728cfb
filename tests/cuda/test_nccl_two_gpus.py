"""The "nccl" backend with 2 ranks on 2 GPUs, each rank a process started by slimtensor.distributed.run
(tests/cuda/nccl_rank.py): all_reduce against a host computation, the tensor-parallel block against the
unsharded one, a killed rank failing the other within its timeout, and the 256 MiB all_reduce bandwidth
benchmark next to torch.distributed's NCCL. Skipped, saying so, where fewer than 2 GPUs are visible."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.needs_cuda

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RANK_SCRIPT = os.path.join(HERE, "nccl_rank.py")
BENCH = os.path.join(REPO, "packages", "slimtensor-cuda", "bench", "nccl_allreduce.py")


@pytest.fixture(scope="module", autouse=True)
def _two_gpus():
    import slimtensor_cuda as stc
    from slimtensor_cuda import _nccl

    n = stc.device_count()
    if n < 2:
        pytest.skip(f"needs 2 GPUs, {n} visible: the 2-rank NCCL tests run on a machine with two")
    try:
        _nccl.version()
    except RuntimeError as exc:
        pytest.skip(f"NCCL is not usable here: {exc}")


def _launch(*args: str, grace: float = 60, timeout: float = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "slimtensor.distributed.run", "--nproc", "2", "--grace", str(grace), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_all_reduce_equals_the_host_computation(tmp_path):
    from tests.cuda.nccl_rank import DTYPES, OPS, contribution

    r = _launch(RANK_SCRIPT, "all_reduce", str(tmp_path))
    assert r.returncode == 0, r.stderr[-4000:]
    for dtype in DTYPES:
        parts = np.stack([contribution(k, dtype).astype(np.float64) for k in range(2)])
        expected = {"sum": parts.sum(0), "avg": parts.mean(0), "max": parts.max(0)}
        for op in OPS:
            for k in range(2):
                got = np.load(tmp_path / f"all_reduce{k}.npz")[f"{dtype}_{op}"]
                np.testing.assert_array_equal(got, expected[op].astype(np.float32), err_msg=f"{dtype} {op}")


def test_tensor_parallel_block_equals_the_unsharded_block(cuda_models_two_ranks, tmp_path):
    folder, reference = cuda_models_two_ranks
    r = _launch(RANK_SCRIPT, "tp", str(tmp_path), str(folder))
    assert r.returncode == 0, r.stderr[-4000:]
    for k in range(2):
        np.testing.assert_allclose(np.load(tmp_path / f"tp{k}.npy"), reference, rtol=5e-3, atol=1e-3)


def test_a_killed_rank_fails_the_other_within_its_timeout(tmp_path):
    from tests.cuda.nccl_rank import DIE_TIMEOUT_S

    r = _launch(RANK_SCRIPT, "die", str(tmp_path), grace=DIE_TIMEOUT_S + 60)
    assert r.returncode == 3, (
        r.returncode,
        r.stderr[-4000:],
    )  # the launcher reports the killed rank's status
    assert "rank 1 exited with status 3" in r.stderr
    report = json.loads((tmp_path / "die0.json").read_text())
    assert report["error"] is not None, "rank 0 never saw an error"
    assert "group '0'" in report["error"] and "NCCL communicator was aborted" in report["error"]
    assert report["seconds"] < DIE_TIMEOUT_S + 30


def test_bandwidth_benchmark_runs_next_to_torch(tmp_path, cuda_torch):
    out = tmp_path / "nccl_allreduce.json"
    r = _launch(BENCH, "--out", str(out), "--iters", "10")
    assert r.returncode == 0, r.stderr[-4000:]
    result = json.loads(out.read_text())
    assert result["world_size"] == 2 and result["bytes"] == 256 << 20
    for who in ("slimtensor", "torch"):
        assert result[who]["busbw_gbps"] > 0 and result[who]["correct"], who


@pytest.fixture(scope="module")
def cuda_models_two_ranks():
    """The two shards of the block and the unsharded block's output (tests/cuda/aoti/conftest.py compiles)."""
    from tests.cuda.aoti.conftest import CompiledModel, _compiling_torch, compile_cuda_models

    why = _compiling_torch()
    if why:
        pytest.skip(why)
    names = ["tp_block_0of1", "tp_block_0of2", "tp_block_1of2"]
    folder = compile_cuda_models(names)
    return folder, CompiledModel(folder, "tp_block_0of1").outputs[0]

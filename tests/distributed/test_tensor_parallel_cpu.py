"""A compiled tensor-parallel model (tests/aoti/collective_zoo.py) runs on 2 ranks through the c10d shims and
the host stand-in backend, without a GPU: the shims find the group by torch's name and reduce for real."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from tests.aoti._helpers import TORCH_VERSION, compile_models, have_torch

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def tp_model() -> str:
    if not have_torch():
        pytest.skip(
            f"needs torch=={TORCH_VERSION} (pip install -r requirements/test.txt) to compile the model"
        )
    return os.path.join(compile_models(["tp_row_linear"], zoo="collective_zoo"), "tp_row_linear.pt2")


def test_the_compiled_model_calls_the_collective_shims(tp_model, tmp_path) -> None:
    from slimtensor.aoti import _elf

    with zipfile.ZipFile(tp_model) as z:
        so = z.extract(next(n for n in z.namelist() if n.endswith(".wrapper.so")), tmp_path)
    undefined = set(_elf.undefined_symbols(so))
    assert {
        "aoti_torch_cpu__c10d_functional_all_reduce_",
        "aoti_torch_cpu__c10d_functional_wait_tensor",
    } <= undefined


def _run_two_ranks(*args: str) -> None:
    """tp_rank.py with ``args`` on 2 ranks through the launcher; it must exit 0."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "slimtensor.distributed.run",
            "--nproc",
            "2",
            "--grace",
            "20",
            os.path.join(HERE, "tp_rank.py"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_two_ranks_sum_their_partial_products(tp_model, tmp_path) -> None:
    _run_two_ranks(tp_model, str(tmp_path))
    w = np.arange(32, dtype=np.float32).reshape(8, 4) / 8
    xs = [(np.arange(24, dtype=np.float32).reshape(3, 8) + 10 * r) / 16 for r in range(2)]
    expected = (xs[0] @ w + xs[1] @ w) * 2
    for r in range(2):
        np.testing.assert_allclose(np.load(tmp_path / f"y{r}.npy"), expected, rtol=1e-6)
        groups, pending, groups_after, pending_after = np.load(tmp_path / f"counts{r}.npy")
        assert (groups, pending) == (1, 0), "group '0' registered, no work left in flight after the run"
        assert (groups_after, pending_after) == (0, 0), "destroy_process_group() unregistered it"


def test_a_model_run_without_its_group_is_a_clear_error(tp_model) -> None:
    from slimtensor import aoti

    with aoti.load(tp_model) as model, pytest.raises(RuntimeError, match=r"no process group named '0'"):
        model.run_numpy(np.ones((3, 8), np.float32))
    assert aoti.live_handles() == 0


@pytest.fixture(scope="module")
def tp_blocks() -> str:
    if not have_torch():
        pytest.skip(
            f"needs torch=={TORCH_VERSION} (pip install -r requirements/test.txt) to compile the models"
        )
    return compile_models(["tp_block_0of1", "tp_block_0of2", "tp_block_1of2"], zoo="tensor_parallel_zoo")


def test_tensor_parallel_block_on_two_ranks_equals_the_unsharded_block(tp_blocks, tmp_path) -> None:
    """tests/aoti/tensor_parallel_zoo.py: attention heads and MLP sharded over 2 ranks, two all_reduce calls; each
    rank's output equals the unsharded block's (torch eager, recorded when tp_block_0of1 was compiled). The
    same test on 2 GPUs with NCCL is tests/cuda/test_nccl_two_gpus.py."""
    _run_two_ranks(
        os.path.join(tp_blocks, "tp_block_{rank}of{world}.pt2"),
        str(tmp_path),
        os.path.join(tp_blocks, "tp_block_{rank}of{world}.npz"),
    )
    reference = np.load(os.path.join(tp_blocks, "tp_block_0of1.npz"))["out0_0"]
    for r in range(2):
        np.testing.assert_allclose(np.load(tmp_path / f"y{r}.npy"), reference, rtol=1e-4, atol=1e-5)

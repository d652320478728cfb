"""Fixtures of the CUDA AOTI tests: models compiled at test time on the GPU machine, cached between tests.

Models are compiled by tests/aoti/compile_models.py (``--device cuda``, the one compile machinery of the
project) with the CUDA torch of the machine (torch 2.11+cu130 on the H200), ``link_libtorch=False`` and
``embed_kernel_binary=True``, into ``build/cuda-aoti-models/`` (or ``$SLIMTENSOR_CUDA_AOTI_MODELS``), and
kept there for the rest of the run (and later runs). Without a usable GPU, or without a CUDA torch to
compile with, the tests are skipped saying which.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
COMPILER = REPO / "tests" / "aoti" / "compile_models.py"
ZOO = {
    "gpt2": "hf_model_zoo",
    "llama": "hf_model_zoo",
    "to_host": "cuda_model_zoo",
    **{f"tp_block_{r}of{n}": "tensor_parallel_zoo" for n in (1, 2) for r in range(n)},
}
# Every model these tests use, the most used first (they start compiling in that order).
ALL_MODELS = [
    "pointwise",
    "const_alias",
    "softmax",
    "two_outputs",
    "view_permute",
    "to_host",
    "mlp",
    "linear",
    "mlp_dynamic",
    "conv2d_groups",
    "small_cnn",
    "sdpa",
    "sdpa_causal",
    "transformer_block",
    "bf16",
    "gpt2",
    "llama",
    "tp_block_0of1",  # the NCCL test with world size 1 (test_nccl_tensor_parallel.py)
]
COMPILE_TIMEOUT_S = 400


def model_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("SLIMTENSOR_CUDA_AOTI_MODELS", REPO / "build" / "cuda-aoti-models"))


def _compiling_torch() -> str:
    """Empty when a CUDA torch is importable here (to compile with), else why not."""
    try:
        torch = importlib.import_module("torch")
    except Exception as exc:  # noqa: BLE001
        return f"compiling CUDA models needs torch with CUDA ({exc})"
    if not torch.cuda.is_available():
        return f"compiling CUDA models needs torch with CUDA; torch {torch.__version__} has no usable GPU"
    return ""


# Note [Compiling while other tests run]
# A model takes 45-75 s to compile and most of that on one core, so all of them are compiled at once, one
# process each, started when this folder is collected (before any test runs); these tests are moved to the
# end of the session (pytest_collection_modifyitems), so the compiles overlap every other test, and each test
# waits only for the models it uses. Inductor's own worker pools are turned off (one thread per compile).
_PROCS: dict[str, subprocess.Popen] = {}


def _start_compiles(names: list[str]) -> None:
    out = model_dir()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1", PYTHONWARNINGS="ignore")
    for n in names:
        if n in _PROCS or (out / f"{n}.pt2").exists():
            continue
        cmd = [
            sys.executable,
            str(COMPILER),
            "--zoo",
            ZOO.get(n, "model_zoo"),
            "--device",
            "cuda",
            str(out),
            n,
        ]
        log = open(out / f"{n}.log", "w")  # noqa: SIM115  (kept open by the child)
        _PROCS[n] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)


def pytest_collection_finish(session):
    from ..conftest import _skip_reason_cached

    if os.environ.get("SLIMTENSOR_CUDA_AOTI_PRECOMPILE", "1") == "0":
        return  # compile on first use only (a sanitizer run of one test)
    # torch is only looked for here, not imported: the compile processes import it
    if any(_mine(i) for i in session.items) and not (
        _skip_reason_cached() or importlib.util.find_spec("torch") is None
    ):
        _start_compiles(ALL_MODELS)


def pytest_collection_modifyitems(config, items):
    # Note [Compiling while other tests run]: these tests last
    mine = [i for i in items if _mine(i)]
    items[:] = [i for i in items if not _mine(i)] + mine


def _mine(item) -> bool:
    return pathlib.Path(str(item.path)).resolve().is_relative_to(HERE)


def compile_cuda_models(names: list[str]) -> pathlib.Path:
    """Waits for the models of ``names`` (compiling those not started yet); returns the folder."""
    out = model_dir()
    _start_compiles(names)
    for n in names:
        p = _PROCS.get(n)
        if p is None:
            continue
        try:
            rc = p.wait(timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = "timeout"
        if rc != 0 or not (out / f"{n}.pt2").exists():
            log = (out / f"{n}.log").read_text(errors="replace")[-4000:]
            raise RuntimeError(f"compiling {n} for CUDA failed ({rc}):\n{log}")
    return out


class CompiledModel:
    """A compiled model: its package and the inputs/eager outputs of each input set, as numpy arrays."""

    def __init__(self, folder: pathlib.Path, name: str):
        import json

        self.name = name
        self.path = str(folder / f"{name}.pt2")
        data = np.load(folder / f"{name}.npz")
        meta = json.loads((folder / f"{name}.json").read_text())
        self.input_sets, self.output_sets = [], []
        for s, (in_dtypes, out_dtypes) in enumerate(zip(meta["inputs"], meta["outputs"], strict=True)):
            self.input_sets.append([_decode(data[f"in{s}_{i}"], d) for i, d in enumerate(in_dtypes)])
            self.output_sets.append([_decode(data[f"out{s}_{i}"], d) for i, d in enumerate(out_dtypes)])

    @property
    def inputs(self):
        return self.input_sets[0]

    @property
    def outputs(self):
        return self.output_sets[0]


def _decode(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        import ml_dtypes

        return a.view(ml_dtypes.bfloat16)
    return a


@pytest.fixture(scope="session")
def cuda_models(request):
    """cuda_models("pointwise", "mlp") -> {name: CompiledModel}; compiles what is missing, once."""
    from ..conftest import _skip_reason_cached

    why = _skip_reason_cached() or _compiling_torch()
    if why:
        pytest.skip(why)

    def get(*names):
        folder = compile_cuda_models(list(names))
        return {n: CompiledModel(folder, n) for n in names}

    return get

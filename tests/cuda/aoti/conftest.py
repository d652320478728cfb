"""Fixtures of the CUDA AOTI tests: models compiled at test time on the GPU machine, cached between tests.

Models are compiled by tests/aoti/compile_models.py (``--device cuda``, the one compile machinery of the
project) with the CUDA torch of the machine (torch 2.11+cu130 on the H200), ``link_libtorch=False`` and
``embed_kernel_binary=True``, into ``build/cuda-aoti-models/`` (or ``$SLIMTENSOR_CUDA_AOTI_MODELS``), and
kept there for the rest of the run (and later runs). Without a usable GPU, or without a CUDA torch to
compile with, the tests are skipped saying which.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
COMPILER = REPO / "tests" / "aoti" / "compile_models.py"
ZOO = {"gpt2": "hf_model_zoo", "llama": "hf_model_zoo"}


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


def compile_cuda_models(names: list[str]) -> pathlib.Path:
    """Compiles the models of ``names`` not compiled yet (in parallel); returns the folder."""
    out = model_dir()
    out.mkdir(parents=True, exist_ok=True)
    todo = [n for n in names if not (out / f"{n}.pt2").exists()]
    by_zoo: dict[str, list[str]] = {}
    for n in todo:
        by_zoo.setdefault(ZOO.get(n, "model_zoo"), []).append(n)
    for zoo, group in by_zoo.items():
        cmd = [sys.executable, str(COMPILER), "--zoo", zoo, "--device", "cuda", "--jobs", "6", str(out), *group]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise RuntimeError(f"compiling {group} failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}")
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
        for s, (in_dtypes, out_dtypes) in enumerate(zip(meta["inputs"], meta["outputs"])):
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

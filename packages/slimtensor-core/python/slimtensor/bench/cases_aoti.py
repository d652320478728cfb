"""AOTI cases: C shim per-call cost, model latency (slimtensor's shims against libtorch's), and the per-call cost of
st.aoti's model call from Python.

Note [AOTI bench inputs]
Everything the cases need ships inside the package: the C harness (harness/aoti_shim_bench.cpp, compiled on
first use) and the model harness (slimtensor.bench.aoti_models). Only the compiled models do not (they need
torch's inductor and minutes to make): they come from the folder named by SLIMTENSOR_BENCH_AOTI_MODELS
(``make bench`` points it at the models the AOTI tests compiled); without it the model cases are skipped,
saying so. The architecture zoo's transformers models (tests/aoti/arch_zoo.py, aoti/zoo/* at 1 and 2 threads)
come the same way from SLIMTENSOR_BENCH_AOTI_ZOO (make bench points it at the zoo the tests compiled). Nothing is
looked up in the working directory.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import aoti_models
from ._case import Case, Libs
from ._timing import Settings, measure, summarize

# times any library's aoti_torch_* through dlsym pointers
SHIM_HARNESS = Path(__file__).resolve().parent / "harness" / "aoti_shim_bench.cpp"
MODEL_HARNESS = "slimtensor.bench.aoti_models"  # runs one AOTI model .so on slimtensor and on libtorch
MODELS_ENV = "SLIMTENSOR_BENCH_AOTI_MODELS"
ZOO_ENV = "SLIMTENSOR_BENCH_AOTI_ZOO"  # the architecture zoo's folder (tests/aoti/arch_zoo.py)
ZOO_THREADS = (1, 2)
# Models whose st.aoti call is timed from Python (aoti/call/*): one input, one output; two outputs, one a view.
CALL_MODELS = ["pointwise", "two_outputs", "linear"]


def _aoti_missing() -> str | None:
    """Why slimtensor's AOTI side cannot run with this build, or None when it can."""
    if importlib.util.find_spec("slimtensor.aoti") is None:
        return (
            "slimtensor.aoti is not part of this build (the AOTI shims and runner are developed on branch "
            "'aoti'; these cases run once they are merged)"
        )
    return None


def _libslimtensor(st) -> str | None:
    for pattern in ("libslimtensor.so.*", "libslimtensor.so", "libslimtensor.*.dylib", "libslimtensor.dylib"):
        found = sorted(glob.glob(os.path.join(st.cmake_prefix(), "lib", pattern)))
        if found:
            return found[0]
    return None


def _libtorch(torch) -> str | None:
    if torch is None:
        return None
    found = glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.*"))
    return found[0] if found else None


class _ShimHarness:
    """Compiles harness/aoti_shim_bench.cpp once and runs it per library; each run gives, per call, the
    median ns of 7 repeats of 1e6 calls, and the case's samples are those medians over several runs."""

    def __init__(self, source: Path):
        self.source = source
        self.names = re.findall(r'bench\("([^"]+)"', source.read_text())
        self._binary: str | None = None
        self._runs: dict[str, list[dict[str, float]]] = {}

    def binary(self) -> str:
        if self._binary is None:
            cxx = (
                os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
            )
            if cxx is None:
                raise RuntimeError(f"no C++ compiler (set CXX) to build {SHIM_HARNESS}")
            digest = hashlib.sha256(self.source.read_bytes()).hexdigest()[:16]
            out = os.path.join(tempfile.gettempdir(), f"slimtensor-aoti-shim-bench-{digest}")
            if not os.path.exists(out):
                subprocess.run(
                    [cxx, "-O2", "-std=c++17", str(self.source), "-ldl", "-o", out + ".tmp"],
                    check=True,
                    capture_output=True,
                    timeout=300,
                )
                os.replace(out + ".tmp", out)
            self._binary = out
        return self._binary

    def runs(self, library: str, count: int) -> list[dict[str, float]]:
        done = self._runs.setdefault(library, [])
        while len(done) < count:
            env = dict(os.environ, OMP_NUM_THREADS="1")
            proc = subprocess.run(
                [self.binary(), library], capture_output=True, text=True, timeout=600, env=env
            )
            if proc.returncode != 0:
                raise RuntimeError(f"{SHIM_HARNESS.name} on {library} failed: {proc.stderr.strip()[-400:]}")
            parsed = {}
            for line in proc.stdout.splitlines():
                parts = line.rsplit(None, 2)
                if len(parts) == 3:
                    parsed[parts[0].strip()] = float(parts[2]) * 1e-9  # the median, in seconds
            done.append(parsed)
        return done[:count]


def _shim_cases(libs: Libs, quick: bool) -> list[Case]:
    reason = _aoti_missing()
    source = SHIM_HARNESS if SHIM_HARNESS.is_file() else None
    if reason is None and source is None:
        reason = f"{SHIM_HARNESS} is missing from the installed package (reinstall slimtensor-core)"
    lib_st = _libslimtensor(libs.st) if reason is None else None
    if reason is None and lib_st is None:
        reason = f"libslimtensor was not found under {libs.st.cmake_prefix()}/lib"
    title = "per-call cost of the aoti_torch_* shims, slimtensor vs libtorch_cpu, through one dlsym harness"
    if reason is not None or source is None or lib_st is None:
        return [
            Case(
                id="aoti/shim_calls",
                group="aoti",
                title=title,
                params={},
                metric="time",
                skipped=reason or "unreachable",
            )
        ]
    harness = _ShimHarness(source)
    st_path: str = lib_st
    lib_torch = _libtorch(libs.torch)
    out = []
    for name in harness.names:

        def run(settings: Settings, name: str = name) -> dict:
            count = 1 if quick else 3
            res = {
                "slimtensor": summarize([r[name] for r in harness.runs(st_path, count)], number=1_000_000),
                "numpy": {"skipped": "numpy has no C shim ABI"},
            }
            if lib_torch is None:
                res["torch"] = {
                    "skipped": libs.torch_reason or "libtorch_cpu was not found in the torch package"
                }
            else:
                res["torch"] = summarize([r[name] for r in harness.runs(lib_torch, count)], number=1_000_000)
            return res

        slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
        out.append(
            Case(
                id=f"aoti/shim/{slug}",
                group="aoti",
                title=f"C shim: {name} (ns per call)",
                params={"call": name, "harness": SHIM_HARNESS.name, "libraries": [lib_st, lib_torch]},
                metric="time",
                run=run,
            )
        )
    return out


def _model_dir() -> tuple[str | None, str | None]:
    """The folder of compiled models (Note [AOTI bench inputs]), or None and why there is none."""
    folder = os.environ.get(MODELS_ENV)
    if not folder:
        return None, (
            f"no compiled models: set {MODELS_ENV} to a folder made by tests/aoti/compile_models.py "
            "(make bench does; compiling needs torch's inductor and minutes, so the bench does not)"
        )
    if not os.path.isdir(folder):
        return None, f"{MODELS_ENV}={folder!r} is not a folder"
    return folder, None


def _model_cases(libs: Libs, quick: bool) -> list[Case]:
    title = "latency of the same AOTInductor model .so on slimtensor and on libtorch"
    reason = _aoti_missing()
    model_dir, no_models = _model_dir()
    if reason is None and libs.torch is None:
        reason = f"the libtorch side needs torch ({libs.torch_reason})"
    reason = reason or no_models
    names: list[Path] = []
    if reason is None and model_dir:
        wanted = aoti_models.MODELS
        names = [Path(model_dir) / f"{n}.pt2" for n in wanted if (Path(model_dir) / f"{n}.pt2").exists()]
        if not names:
            reason = f"{model_dir} holds none of the models {MODEL_HARNESS} times ({', '.join(wanted)})"
    if reason is not None or not model_dir:
        return [
            Case(
                id="aoti/model_latency",
                group="aoti",
                title=title,
                params={},
                metric="time",
                skipped=reason or "unreachable",
            )
        ]
    folder: str = model_dir
    cache: dict = {}

    def rows() -> dict:
        if not cache:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "aoti.json")
                subprocess.run(
                    [sys.executable, "-m", MODEL_HARNESS, folder, "--threads", "1", "--json", out],
                    check=True,
                    capture_output=True,
                    text=True,
                    timeout=1800,
                )
                with open(out) as f:
                    cache.update({r["case"]: r for r in json.load(f)["rows"]})
        return cache

    def runner(row_name: str, what: str):
        def run(settings: Settings) -> dict:
            row = rows().get(row_name)
            if row is None:
                return {"slimtensor": {"skipped": f"{MODEL_HARNESS} gave no result for {row_name}"}}
            # the harness reports every sample (microseconds per run) of its alternating rounds
            return {
                "slimtensor": summarize([x * 1e-6 for x in row["slim_us"]]),
                "torch": summarize([x * 1e-6 for x in row["torch_us"]]),
                "numpy": {"skipped": f"numpy cannot run {what}"},
            }

        return run

    out = [
        Case(
            id=f"aoti/model/{path.stem}",
            group="aoti",
            title=f"{title}: {path.stem}",
            params={"model": path.name, "folder": folder, "harness": MODEL_HARNESS},
            metric="time",
            run=runner(path.stem, "AOTInductor models"),
        )
        for path in names
    ]
    # The BLAS-backed fallback alone: aoti_torch_cpu_addmm_out(out, bias, a, b, 1, 1), float32.
    for m, k, n in aoti_models.ADDMM:
        shape = f"{m}x{k}@{k}x{n}"
        out.append(
            Case(
                id=f"aoti/addmm/{shape}",
                group="aoti",
                title=f"aoti_torch_cpu_addmm_out, float32 {shape} plus a bias, on slimtensor and on libtorch",
                params={"m": m, "k": k, "n": n, "harness": MODEL_HARNESS},
                metric="time",
                run=runner(f"addmm {shape}", "the AOTI shims"),
            )
        )
    return out


def _call_cases(libs: Libs, quick: bool) -> list[Case]:
    """The per-call cost of ``model(*inputs)`` through st.aoti (tensors in, tensors out), in this process."""
    title = "per-call cost of an st.aoti model call from Python (inputs to handles, Run, outputs to tensors)"
    reason = _aoti_missing()
    model_dir, no_models = _model_dir()
    reason = reason or no_models
    paths = [
        Path(model_dir) / f"{n}.pt2"
        for n in CALL_MODELS
        if model_dir and (Path(model_dir) / f"{n}.pt2").exists()
    ]
    if reason is None and not paths:
        reason = f"{model_dir} holds none of the models {', '.join(CALL_MODELS)}"
    if reason is not None:
        return [Case(id="aoti/call", group="aoti", title=title, params={}, metric="time", skipped=reason)]
    loaded: dict = {}

    def runner(path: Path):
        def run(settings: Settings) -> dict:
            import numpy as np

            from slimtensor import aoti

            if path.stem not in loaded:
                model = aoti.load(path, check_inputs=False)
                with np.load(path.with_suffix(".npz")) as z:
                    arrays = [
                        np.ascontiguousarray(z[k]) for k in sorted(k for k in z.files if k.startswith("in0_"))
                    ]
                loaded[path.stem] = (model, [libs.st.from_numpy(a) for a in arrays])
            model, inputs = loaded[path.stem]
            return {
                "slimtensor": measure(lambda: model(*inputs), settings),
                "numpy": {"skipped": "numpy cannot run AOTInductor models"},
                "torch": {
                    "skipped": "torch runs its own AOTI models (libtorch-linked); aoti/model/* times the "
                    "same .so on both libraries' shims"
                },
            }

        return run

    return [
        Case(
            id=f"aoti/call/{path.stem}",
            group="aoti",
            title=f"{title}: {path.stem}",
            params={"model": path.name, "folder": model_dir},
            metric="time",
            run=runner(path),
        )
        for path in paths
    ]


def _zoo_cases(libs: Libs, quick: bool) -> list[Case]:
    """The zoo's transformers models, the same .so on slimtensor and on libtorch, at 1 and 2 threads."""
    title = "latency of an architecture-zoo model .so on slimtensor and on libtorch"
    reason = _aoti_missing()
    if reason is None and libs.torch is None:
        reason = f"the libtorch side needs torch ({libs.torch_reason})"
    folder = os.environ.get(ZOO_ENV)
    if reason is None and not folder:
        reason = (
            f"no compiled zoo: set {ZOO_ENV} to the folder tests/aoti/test_arch_zoo.py compiled "
            "(.cache/aoti-models/arch_zoo-*; make bench does)"
        )
    if reason is None and folder and not os.path.isdir(folder):
        reason = f"{ZOO_ENV}={folder!r} is not a folder"
    names = [n for n in aoti_models.ZOO_MODELS if folder and (Path(folder) / f"{n}.pt2").exists()]
    if reason is None and not names:
        reason = f"{folder} holds none of the zoo models {MODEL_HARNESS} times ({', '.join(aoti_models.ZOO_MODELS)})"
    if reason is not None or not folder:
        return [
            Case(
                id="aoti/zoo",
                group="aoti",
                title=title,
                params={},
                metric="time",
                skipped=reason or "unreachable",
            )
        ]
    zoo: str = folder
    cache: dict[int, dict] = {}

    def rows(threads: int) -> dict:
        if threads not in cache:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "zoo.json")
                cmd = [sys.executable, "-m", MODEL_HARNESS, zoo, "--models", ",".join(names), "--no-addmm"]
                cmd += ["--threads", str(threads), "--json", out]
                if quick:
                    cmd += ["--rounds", "1", "--repeats", "5"]
                subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=3600)
                with open(out) as f:
                    cache[threads] = {r["case"]: r for r in json.load(f)["rows"]}
        return cache[threads]

    def runner(name: str, threads: int):
        def run(settings: Settings) -> dict:
            row = rows(threads).get(name)
            if row is None:
                return {"slimtensor": {"skipped": f"{MODEL_HARNESS} gave no result for {name}"}}
            return {
                "slimtensor": summarize([x * 1e-6 for x in row["slim_us"]]),
                "torch": summarize([x * 1e-6 for x in row["torch_us"]]),
                "numpy": {"skipped": "numpy cannot run AOTInductor models"},
            }

        return run

    return [
        Case(
            id=f"aoti/zoo/{name}/t{threads}",
            group="aoti",
            title=f"{title}: {name}, {threads} thread(s)",
            params={"model": f"{name}.pt2", "folder": zoo, "harness": MODEL_HARNESS, "threads": threads},
            metric="time",
            threads=threads,
            run=runner(name, threads),
        )
        for threads in ZOO_THREADS
        for name in names
    ]


def cases(libs: Libs, quick: bool) -> list[Case]:
    return [
        *_shim_cases(libs, quick),
        *_model_cases(libs, quick),
        *_zoo_cases(libs, quick),
        *_call_cases(libs, quick),
    ]

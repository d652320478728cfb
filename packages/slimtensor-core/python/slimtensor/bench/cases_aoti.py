"""AOTI cases: C shim per-call cost, model latency (slimtensor's shims against libtorch's), and the per-call cost of
st.aoti's model call from Python.

Note [AOTI bench inputs]
Everything the cases need ships inside the package: the C harness (harness/aoti_shim_bench.cpp, compiled on
first use) and the model harness (slimtensor.bench.aoti_models). Only the compiled models do not (they need
torch's inductor and minutes to make): they come from the folders named by SLIMTENSOR_BENCH_AOTI_MODELS
(``make bench`` points it at the models the AOTI tests compiled, the oneDNN block of op_model_zoo.py and the
architecture zoo, the last two compiled by ``make bench-models``); without it the model cases are skipped,
saying so, and a model no folder holds is left out. Nothing is looked up in the working directory.
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
# Models whose st.aoti call is timed from Python (aoti/call/*): one input, one output; two outputs, one a view.
CALL_MODELS = ["pointwise", "two_outputs", "linear"]
# The model and fallback cases run at these thread counts (both libraries alike).
THREADS = (1, 2)


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
    """The folders of compiled models, joined by os.pathsep (Note [AOTI bench inputs]), or None and why there
    are none."""
    folders = os.environ.get(MODELS_ENV)
    if not folders:
        return None, (
            f"no compiled models: set {MODELS_ENV} to a folder made by tests/aoti/compile_models.py "
            "(make bench does; compiling needs torch's inductor and minutes, so the bench does not)"
        )
    for folder in folders.split(os.pathsep):
        if not os.path.isdir(folder):
            return None, f"{MODELS_ENV} names {folder!r}, which is not a folder"
    return folders, None


def _find(folders: str, name: str, suffix: str) -> Path | None:
    """The first of the folders holding name + suffix."""
    for folder in folders.split(os.pathsep):
        if (Path(folder) / f"{name}{suffix}").exists():
            return Path(folder) / f"{name}{suffix}"
    return None


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
        names = [p for p in (_find(model_dir, n, ".pt2") for n in wanted) if p is not None]
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
    cache: dict[int, dict] = {}

    def rows(threads: int) -> dict:
        if threads not in cache:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "aoti.json")
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        MODEL_HARNESS,
                        folder,
                        "--threads",
                        str(threads),
                        "--repeats",
                        str(5 if quick else aoti_models.REPEATS),
                        "--json",
                        out,
                    ],
                    check=True,
                    capture_output=True,
                    text=True,
                    timeout=3600,
                )
                with open(out) as f:
                    cache[threads] = {r["case"]: r for r in json.load(f)["rows"]}
        return cache[threads]

    def runner(row_name: str, what: str, threads: int):
        def run(settings: Settings) -> dict:
            row = rows(threads).get(row_name)
            if row is None or "skipped" in row:
                why = row["skipped"] if row else f"{MODEL_HARNESS} gave no result for {row_name}"
                return {"slimtensor": {"skipped": why}}

            # the harness reports every sample (microseconds per call, wall-clock and CPU), both libraries
            # interleaved (Note [Interleaved model samples]), and the 1-minute load average before and after
            def side(lib: str, **extra) -> dict:
                wall = summarize([x * 1e-6 for x in row[f"{lib}_us"]])
                return dict(wall, cpu=summarize([x * 1e-6 for x in row[f"{lib}_cpu_us"]]), **extra)

            return {
                "slimtensor": side("slim", load_avg=row["load_avg"]),
                "torch": side("torch"),
                "numpy": {"skipped": f"numpy cannot run {what}"},
            }

        return run

    out = []
    for threads in THREADS:
        suffix = "" if threads == 1 else f"/threads{threads}"
        out += [
            Case(
                id=f"aoti/model/{path.stem}{suffix}",
                group="aoti",
                title=f"{title}: {path.stem}, {threads} thread(s)",
                params={"model": path.name, "folder": folder, "harness": MODEL_HARNESS, "threads": threads},
                metric="time",
                run=runner(path.stem, "AOTInductor models", threads),
            )
            for path in names
        ]
        # The fallbacks alone: aoti_torch_cpu_addmm_out(out, bias, a, b, 1, 1) and aoti_torch_cpu_convolution,
        # float32.
        for m, k, n in aoti_models.ADDMM:
            shape = f"{m}x{k}@{k}x{n}"
            out.append(
                Case(
                    id=f"aoti/addmm/{shape}{suffix}",
                    group="aoti",
                    title=f"aoti_torch_cpu_addmm_out, float32 {shape} plus a bias, on slimtensor and on libtorch, "
                    f"{threads} thread(s)",
                    params={"m": m, "k": k, "n": n, "harness": MODEL_HARNESS, "threads": threads},
                    metric="time",
                    run=runner(f"addmm {shape}", "the AOTI shims", threads),
                )
            )
        for key, spec in aoti_models.CONV.items():
            slug = re.sub(r"[^a-z0-9]+", "_", key.removeprefix("conv ").lower()).strip("_")
            out.append(
                Case(
                    id=f"aoti/conv/{slug}{suffix}",
                    group="aoti",
                    title=f"aoti_torch_cpu_convolution, float32 {key.removeprefix('conv ')}, on slimtensor and on "
                    f"libtorch, {threads} thread(s)",
                    params=dict(
                        zip(
                            ("n", "c", "oc", "h", "w", "kernel", "stride", "padding", "groups"),
                            spec,
                            strict=True,
                        ),
                        harness=MODEL_HARNESS,
                        threads=threads,
                    ),
                    metric="time",
                    run=runner(key, "the AOTI shims", threads),
                )
            )
    return out


def _call_cases(libs: Libs, quick: bool) -> list[Case]:
    """The per-call cost of ``model(*inputs)`` through st.aoti (tensors in, tensors out), in this process."""
    title = "per-call cost of an st.aoti model call from Python (inputs to handles, Run, outputs to tensors)"
    reason = _aoti_missing()
    model_dir, no_models = _model_dir()
    reason = reason or no_models
    found = [_find(model_dir, n, ".pt2") if model_dir else None for n in CALL_MODELS]
    paths = [p for p in found if p is not None]
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


CUDA_MODELS_ENV = "SLIMTENSOR_BENCH_CUDA_AOTI_MODELS"
CUDA_HARNESS = "slimtensor_cuda.bench_aoti"  # the CUDA plugin's: CUDA-event latency on both libraries


def _cuda_model_cases(libs: Libs, quick: bool) -> list[Case]:
    """CUDA models: the same .so on slimtensor and on libtorch, and slimtensor's CUDA graph of it."""
    title = "CUDA-event latency of the same CUDA AOTInductor model .so on slimtensor and on libtorch"
    folder = os.environ.get(CUDA_MODELS_ENV)
    reason = None
    if not folder or not os.path.isdir(folder):
        reason = (
            f"no compiled CUDA models: set {CUDA_MODELS_ENV} to a folder made by tests/aoti/compile_models.py "
            "--device cuda (the CUDA AOTI tests compile into build/cuda-aoti-models)"
        )
    elif importlib.util.find_spec("slimtensor_cuda") is None:
        reason = "the CUDA plugin (slimtensor-cuda) is not installed"
    elif libs.torch is None:
        reason = f"the libtorch side needs torch with CUDA ({libs.torch_reason})"
    if reason is not None or not folder:
        return [
            Case(id="aoti/cuda_model", group="aoti", title=title, params={}, metric="time", skipped=reason)
        ]
    names = sorted(p.stem for p in Path(folder).glob("*.pt2"))
    cache: dict = {}

    def rows() -> dict:
        if not cache:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "cuda.json")
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        CUDA_HARNESS,
                        folder,
                        "--runs",
                        "20" if quick else "50",
                        "--json",
                        out,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=1800,
                )
                if done.returncode != 0:  # every case says why, with the harness's own words
                    why = f"{CUDA_HARNESS} failed (exit {done.returncode}): {(done.stderr or done.stdout)[-600:]}"
                    cache.update(
                        {n: {k: {"skipped": why} for k in ("slim", "slim_graph", "torch")} for n in names}
                    )
                    return cache
                with open(out) as f:
                    cache.update({r["model"]: r for r in json.load(f)["rows"]})
        return cache

    def side(d: dict) -> dict:
        if "samples_us" not in d:
            return {"skipped": d.get("skipped", f"{CUDA_HARNESS} gave no result")}
        return summarize([x * 1e-6 for x in d["samples_us"]])

    def runner(name: str, ours: str):
        def run(settings: Settings) -> dict:
            row = rows().get(name, {})
            return {
                "slimtensor": side(row.get(ours, {})),
                "torch": side(row.get("torch", {})),
                "numpy": {"skipped": "numpy cannot run AOTInductor models"},
            }

        return run

    out = []
    for name in names:
        for kind, ours, what in (("cuda_model", "slim", "eager"), ("cuda_graph", "slim_graph", "CUDA graph")):
            out.append(
                Case(
                    id=f"aoti/{kind}/{name}",
                    group="aoti",
                    title=f"{name} on CUDA: slimtensor {what} vs libtorch's AOTI run (CUDA events)",
                    params={"model": f"{name}.pt2", "folder": folder, "harness": CUDA_HARNESS},
                    metric="time",
                    run=runner(name, ours),
                )
            )
    return out


def cases(libs: Libs, quick: bool) -> list[Case]:
    return [
        *_shim_cases(libs, quick),
        *_model_cases(libs, quick),
        *_call_cases(libs, quick),
        *_cuda_model_cases(libs, quick),
    ]

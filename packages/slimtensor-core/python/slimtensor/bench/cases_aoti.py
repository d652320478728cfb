"""AOTI cases: C shim per-call cost and model latency, slimtensor's shims against libtorch's, one harness each."""

from __future__ import annotations

import ast
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

from ._case import Case, Libs
from ._timing import Settings, summarize

SHIM_HARNESS = "benchmarks/aoti_shim_bench.cpp"  # times any library's aoti_torch_* through dlsym pointers
MODEL_HARNESS = "benchmarks/aoti_bench.py"  # runs one AOTI model .so on slimtensor and on libtorch
MODELS_ENV = "SLIMTENSOR_BENCH_AOTI_MODELS"


def _find_in_checkout(relative: str) -> Path | None:
    """A file of the repository checkout, looked up from the current folder and from this package upwards."""
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            if (folder / relative).is_file():
                return folder / relative
    return None


def _aoti_missing() -> str | None:
    """Why slimtensor's AOTI side cannot run with this build, or None when it can."""
    if importlib.util.find_spec("slimtensor.aoti") is None:
        return ("slimtensor.aoti is not part of this build (the AOTI shims and runner are developed on branch "
                "'aoti'; these cases run once they are merged)")
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
    """Compiles benchmarks/aoti_shim_bench.cpp once and runs it per library; each run gives, per call, the
    median ns of 7 repeats of 1e6 calls, and the case's samples are those medians over several runs."""

    def __init__(self, source: Path):
        self.source = source
        self.names = re.findall(r'bench\("([^"]+)"', source.read_text())
        self._binary: str | None = None
        self._runs: dict[str, list[dict[str, float]]] = {}

    def binary(self) -> str:
        if self._binary is None:
            cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
            if cxx is None:
                raise RuntimeError("no C++ compiler (set CXX) to build " + SHIM_HARNESS)
            digest = hashlib.sha256(self.source.read_bytes()).hexdigest()[:16]
            out = os.path.join(tempfile.gettempdir(), f"slimtensor-aoti-shim-bench-{digest}")
            if not os.path.exists(out):
                subprocess.run([cxx, "-O2", "-std=c++17", str(self.source), "-ldl", "-o", out + ".tmp"], check=True,
                               capture_output=True, timeout=300)
                os.replace(out + ".tmp", out)
            self._binary = out
        return self._binary

    def runs(self, library: str, count: int) -> list[dict[str, float]]:
        done = self._runs.setdefault(library, [])
        while len(done) < count:
            env = dict(os.environ, OMP_NUM_THREADS="1")
            proc = subprocess.run([self.binary(), library], capture_output=True, text=True, timeout=600, env=env)
            if proc.returncode != 0:
                raise RuntimeError(f"{SHIM_HARNESS} on {library} failed: {proc.stderr.strip()[-400:]}")
            parsed = {}
            for line in proc.stdout.splitlines():
                parts = line.rsplit(None, 2)
                if len(parts) == 3:
                    parsed[parts[0].strip()] = float(parts[2]) * 1e-9  # the median, in seconds
            done.append(parsed)
        return done[:count]


def _shim_cases(libs: Libs, quick: bool) -> list[Case]:
    reason = _aoti_missing()
    source = _find_in_checkout(SHIM_HARNESS)
    if reason is None and source is None:
        reason = f"{SHIM_HARNESS} is not in this checkout (the C harness ships with the repository, not the wheel)"
    lib_st = _libslimtensor(libs.st) if reason is None else None
    if reason is None and lib_st is None:
        reason = f"libslimtensor was not found under {libs.st.cmake_prefix()}/lib"
    title = "per-call cost of the aoti_torch_* shims, slimtensor vs libtorch_cpu, through one dlsym harness"
    if reason is not None or source is None or lib_st is None:
        return [Case(id="aoti/shim_calls", group="aoti", title=title, params={}, metric="time",
                     skipped=reason or "unreachable")]
    harness = _ShimHarness(source)
    st_path: str = lib_st
    lib_torch = _libtorch(libs.torch)
    out = []
    for name in harness.names:

        def run(settings: Settings, name: str = name) -> dict:
            count = 1 if quick else 3
            res = {"slimtensor": summarize([r[name] for r in harness.runs(st_path, count)], number=1_000_000),
                   "numpy": {"skipped": "numpy has no C shim ABI"}}
            if lib_torch is None:
                res["torch"] = {"skipped": libs.torch_reason or "libtorch_cpu was not found in the torch package"}
            else:
                res["torch"] = summarize([r[name] for r in harness.runs(lib_torch, count)], number=1_000_000)
            return res

        slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
        out.append(Case(id=f"aoti/shim/{slug}", group="aoti", title=f"C shim: {name} (ns per call)",
                        params={"call": name, "harness": SHIM_HARNESS, "libraries": [lib_st, lib_torch]},
                        metric="time", run=run))
    return out


def _default_model_dir() -> str | None:
    """The newest folder of models the AOTI tests compiled (.cache/aoti-models/<key>/ in the checkout)."""
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            found = sorted((folder / ".cache" / "aoti-models").glob("*/pointwise.pt2"), key=lambda p: p.stat().st_mtime)
            if found:
                return str(found[-1].parent)
    return None


def _harness_list(script: Path, name: str) -> list:
    """A literal list of benchmarks/aoti_bench.py (MODELS: model names; ADDMM: (m, k, n) shapes)."""
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


def _model_cases(libs: Libs, quick: bool) -> list[Case]:
    title = "latency of the same AOTInductor model .so on slimtensor and on libtorch"
    reason = _aoti_missing()
    model_dir = os.environ.get(MODELS_ENV) or _default_model_dir()
    script = _find_in_checkout(MODEL_HARNESS)
    if reason is None and script is None:
        reason = f"{MODEL_HARNESS} is not in this checkout"
    if reason is None and libs.torch is None:
        reason = f"the libtorch side needs torch ({libs.torch_reason})"
    if reason is None and not model_dir:
        reason = (f"no compiled models: run the AOTI tests (they compile into .cache/aoti-models/) or set "
                  f"{MODELS_ENV} to a folder made by tests/aoti/compile_models.py (compiling needs torch's "
                  "inductor and minutes, so the suite does not do it itself)")
    names: list[Path] = []
    if reason is None and model_dir and script is not None:
        wanted = _harness_list(script, "MODELS")
        names = [Path(model_dir) / f"{n}.pt2" for n in wanted if (Path(model_dir) / f"{n}.pt2").exists()]
        if not names:
            reason = f"{model_dir} holds none of the models {MODEL_HARNESS} times ({', '.join(wanted)})"
    if reason is not None or script is None or not model_dir:
        return [Case(id="aoti/model_latency", group="aoti", title=title, params={}, metric="time",
                     skipped=reason or "unreachable")]
    folder: str = model_dir
    cache: dict = {}

    def rows() -> dict:
        if not cache:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "aoti.json")
                subprocess.run([sys.executable, str(script), folder, "--threads", "1", "--json", out], check=True,
                               capture_output=True, text=True, timeout=1800)
                with open(out) as f:
                    cache.update({r["case"]: r for r in json.load(f)["rows"]})
        return cache

    def runner(row_name: str, what: str):
        def run(settings: Settings) -> dict:
            row = rows().get(row_name)
            if row is None:
                return {"slimtensor": {"skipped": f"{MODEL_HARNESS} gave no result for {row_name}"}}
            # the harness reports min and median microseconds per run over 7 repeats
            return {"slimtensor": summarize([x * 1e-6 for x in row["slim_us"]]),
                    "torch": summarize([x * 1e-6 for x in row["torch_us"]]),
                    "numpy": {"skipped": f"numpy cannot run {what}"}}

        return run

    out = [Case(id=f"aoti/model/{path.stem}", group="aoti", title=f"{title}: {path.stem}",
                params={"model": path.name, "folder": folder, "harness": MODEL_HARNESS}, metric="time",
                run=runner(path.stem, "AOTInductor models")) for path in names]
    # The BLAS-backed fallback alone: aoti_torch_cpu_addmm_out(out, bias, a, b, 1, 1), float32.
    for m, k, n in _harness_list(script, "ADDMM"):
        shape = f"{m}x{k}@{k}x{n}"
        out.append(Case(id=f"aoti/addmm/{shape}", group="aoti",
                        title=f"aoti_torch_cpu_addmm_out, float32 {shape} plus a bias, on slimtensor and on libtorch",
                        params={"m": m, "k": k, "n": n, "harness": MODEL_HARNESS}, metric="time",
                        run=runner(f"addmm {shape}", "the AOTI shims")))
    return out


def cases(libs: Libs, quick: bool) -> list[Case]:
    return [*_shim_cases(libs, quick), *_model_cases(libs, quick)]

# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (slimtensor)
#     language: python
#     name: slimtensor
# ---

# %% [markdown]
# # 04 · Benchmarks
#
# How fast is slimtensor, next to numpy and torch? The benchmark suite (`slimtensor bench`, or
# `python -m slimtensor.bench`) measures each case on every library **in the same run**, so the machine's
# mood on that day (this is a shared 2-core VM) affects all of them alike, and the *ratios* stay meaningful
# even when the absolute numbers drift.
#
# - **Per-call cases** time one Python call (a view, a getter, a tiny copy) with `timeit`, gc off.
# - **Copy cases** time `copy_` in the five layouts of the baselines (contiguous, transposed source,
#   transposed destination, NCHW→NHWC, NHWC→NCHW), a broadcast row and a strided slice, at power-of-two
#   sizes, for float32 and for conversions. Bandwidth is **(bytes read + bytes written) / 1e9 per second**.
# - Every library reads the same source buffer and writes the same destination buffer, one thread, pinned.
#
# The schema of the results and the method are in `docs/benchmarks.md`.

# %%
import os
from pathlib import Path

import slimtensor as st
from slimtensor import bench
from slimtensor.bench import _report
from slimtensor.viz.benchmark import benchmark

# %% [markdown]
# ## A quick run, here and now
#
# `--quick` keeps to the 4 KiB and 1 MiB sizes with three samples per library, under a minute. (When the
# notebook runs inside the test suite, `SLIMTENSOR_QUICK=1` narrows it further to a few cases.)
#
# The lab kernel has no torch (torch is a build-time tool here, see notebook 05), so the torch columns come
# from running the same suite in the compile environment `.venv-compile` that `make lab` sets up, where
# slimtensor, numpy and torch share one process: every number below is from this machine, now.

# %%
import importlib.util  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

quick_filter = None
if os.environ.get("SLIMTENSOR_QUICK") == "1":
    quick_filter = ["call/permute", "call/item", "call/shape", "copy/c2c/float32-float32", "copy/t2c/float32-float32",
                    "copy/p2c/float32-float32"]


def compile_env_python() -> str | None:
    """$SLIMTENSOR_COMPILE_PYTHON, or .venv-compile's interpreter (set up by `make lab`: slimtensor and torch
    2.13.0 side by side), as notebook 05 looks for it."""
    if os.environ.get("SLIMTENSOR_COMPILE_PYTHON"):
        return os.environ["SLIMTENSOR_COMPILE_PYTHON"]
    for folder in [Path.cwd(), *Path.cwd().parents]:
        candidate = folder / ".venv-compile" / "bin" / "python"
        if candidate.exists():
            return str(candidate)
    return None


peer_python = compile_env_python()
if importlib.util.find_spec("torch") is not None:
    where = "this kernel (torch is installed next to it)"
    results = bench.run(quick=True, filter=quick_filter, progress=False)
elif peer_python is not None:
    # The lab kernel has no torch, on purpose; the compile environment has slimtensor and torch in one
    # process, so running the suite there measures all three libraries in the same run, on this machine.
    where = f"the compile environment ({peer_python})"
    out = Path(tempfile.mkdtemp(prefix="slimtensor-bench-")) / "quick.json"
    args = [peer_python, "-m", "slimtensor.bench", "--quick", "--quiet", "--out", str(out)]
    for pattern in quick_filter or []:
        args += ["--filter", pattern]
    print("running the quick suite in", where, "(progress below) ...", flush=True)
    with subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True) as proc:
        for line in proc.stderr:
            print("  " + line.rstrip(), flush=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the benchmark run in {peer_python} failed (exit {proc.returncode})")
    results = bench.load(str(out))
else:
    where = "this kernel, without torch"
    print("note: no torch here and no .venv-compile (run `make lab` to set it up): the torch columns stay empty")
    results = bench.run(quick=True, filter=quick_filter, torch=False, progress=False)
print(f"measured in {where}: torch {results['versions'].get('torch') or 'not measured'}")
print(_report.table(results))

# %% [markdown]
# Each panel is one layout: bandwidth against size, log-log, one line per library with its interquartile
# band. Underneath, slimtensor's speed-up against each peer (above 1: slimtensor is faster).

# %%
benchmark(results)

# %% [markdown]
# The per-call costs: what one Python call costs on each library, and the speed-up.

# %%
benchmark(results, kind="call")

# %% [markdown]
# ## The stored full run
#
# `make bench` runs the whole suite (sizes up to 1 GiB, 5 to 9 samples, two-thread variants) into
# `benchmarks/results/`. The file below was produced on the project's standard machine; its `machine`
# and `versions` sections say where and with what.


# %%
def stored_results() -> Path | None:
    """The newest results file of benchmarks/results/, looked up from here and from the package."""
    starts = [Path.cwd(), Path(st.__file__).resolve().parent]
    for start in starts:
        for folder in [start, *start.parents]:
            candidates = sorted((folder / "benchmarks" / "results").glob("*.json"))
            if candidates:
                return candidates[-1]
    return None


path = stored_results()
if path is None:
    print("no stored results found (benchmarks/results/*.json); run `make bench` to make them")
else:
    full = bench.load(str(path))
    m = full["machine"]
    print(f"{path.name}: {full['created']}, {m['cpu']}, {m['logical_cpus']} CPUs, copy kernels: {m['copy_isa']}")
    print(f"slimtensor {full['versions']['slimtensor']} ({full['versions']['slimtensor_git']}), "
          f"numpy {full['versions']['numpy']}, torch {full['versions']['torch']}")

# %% [markdown]
# float32 copies, one thread, at every size:

# %%
if path is not None:
    display(benchmark(full))  # noqa: F821  (IPython's display)

# %% [markdown]
# float32 → bfloat16, the conversion a model's weights most often go through:

# %%
if path is not None:
    display(benchmark(full, dtype="float32-bfloat16"))  # noqa: F821  (IPython's display)

# %% [markdown]
# And the headline table: every case of the stored run, with its ratios.

# %%
if path is not None:
    print(_report.table(full))

# %% [markdown]
# ## CUDA copies on a GPU
#
# On a machine with an NVIDIA GPU and slimtensor-cuda, `slimtensor bench --filter cuda` adds the CUDA cases
# (measured by the plugin's `bench/cuda_copies.py`: CUDA events around each copy, the median of 25 runs,
# torch, cupy and `cudaMemcpy` in the same run, bytes counted read + written). The file shown here was
# made on the GPU machine of the project (an H200) and stored as `benchmarks/results/cuda_h200.json`;
# its `command` field is the exact command. The lower panel holds each copy against issue 10's target
# share of `cudaMemcpy`'s bandwidth.

# %%
def stored_cuda_results() -> Path | None:
    """benchmarks/results/cuda_h200.json, looked up from here and from the package."""
    for start in [Path.cwd(), Path(st.__file__).resolve().parent]:
        for folder in [start, *start.parents]:
            candidate = folder / "benchmarks" / "results" / "cuda_h200.json"
            if candidate.exists():
                return candidate
    return None


cuda_path = stored_cuda_results()
cuda_fig = None
if cuda_path is None:
    print("no stored CUDA results (benchmarks/results/cuda_h200.json); on a GPU machine run "
          "`slimtensor bench --filter cuda --out benchmarks/results/cuda_h200.json`")
else:
    cuda_results = bench.load(str(cuda_path))
    print(f"{cuda_path.name}: {cuda_results['created']}, `{cuda_results['command']}`")
    print(f"torch {cuda_results['versions'].get('torch')}, slimtensor {cuda_results['versions'].get('slimtensor')}")
    print(_report.cuda_table([c for c in cuda_results["cases"] if c["group"] == "cuda"]))
    cuda_fig = benchmark(cuda_results, kind="cuda")
    if os.environ.get("SLIMTENSOR_NOTEBOOK_FIGURES"):  # GPU runs without Jupyter save the picture
        cuda_fig.savefig(Path(os.environ["SLIMTENSOR_NOTEBOOK_FIGURES"]) / "04_cuda_bench.png", dpi=110, bbox_inches="tight")
cuda_fig

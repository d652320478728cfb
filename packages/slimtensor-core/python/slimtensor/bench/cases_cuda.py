"""CUDA cases: the copies and the cached allocation of slimtensor-cuda against torch, cupy and cudaMemcpy.

Note [CUDA bench cases]
The measurements have one home, the plugin's ``bench/cuda_copies.py`` (shipped in its wheel as
``slimtensor_cuda.cuda_copies``): CUDA events around each copy, the median of its REPS runs after warm-up,
bytes counted read + written, torch, cupy and cudaMemcpy (torch's contiguous ``copy_``) measured in the same
run. This module only calls it, once per suite run, and turns each of its rows into a case of the results
schema (group "cuda"). What it relies on (keep it stable): ``cuda_copies.main(out_path, quick)`` writes
``{"meta": {..., "reps": N}, "rows": [...]}`` (quick: its own short selection, the permuted rows); a copy row has ``case``, ``bytes`` (read + written) and, per
library measured, ``<lib>_ms`` (the median), optionally ``memcpy_GBps``; the allocation row has
``<lib>_us`` instead. cuda_copies.py keeps only the median of its timings, so each library's result here
has that median as its one sample (``number`` = 1, quartiles = the median) and the case says so in
``params["statistic"]``.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import tempfile

from ._case import Case, Libs
from ._timing import summarize

PEERS = ("torch", "cupy")  # measured by cuda_copies.py beside slimtensor (cudaMemcpy comes as memcpy_GBps)
MEMCPY = "cudaMemcpy"


def unavailable_reason(libs: Libs) -> str | None:
    """None when the CUDA cases can run here, else why not (no plugin, no GPU, no CUDA torch)."""
    try:
        stc = importlib.import_module("slimtensor_cuda")
    except ImportError as exc:
        return f"slimtensor-cuda is not installed ({exc}); pip install packages/slimtensor-cuda"
    reason = stc.unavailable_reason()
    if reason is not None:
        return f"no usable CUDA device: {reason}"
    if libs.torch is None:
        return f"cuda_copies.py times cudaMemcpy through torch, which is missing: {libs.torch_reason}"
    if not libs.torch.cuda.is_available():
        return (
            f"torch {libs.torch.__version__} has no CUDA device (cuda_copies.py times cudaMemcpy through it)"
        )
    return None


def case_id(row_name: str) -> str:
    """``cuda/<the row's name in lower-case words joined by _>``, e.g. ``cuda/contiguous_d2d_1_gib_f32``."""
    return "cuda/" + "_".join(re.findall(r"[a-z0-9]+", row_name.lower().replace("->", " to ")))


def _seconds(value: float) -> dict:
    """One median figure of cuda_copies.py as the schema's statistics (its only sample)."""
    return summarize([value], number=1)


def row_case(row: dict, reps: int, device: str) -> tuple[Case, dict]:
    """One cuda_copies.py row as a schema case and its per-library results."""
    is_copy = "bytes" in row
    unit = 1e-3 if is_copy else 1e-6
    suffix = "_ms" if is_copy else "_us"
    results: dict[str, dict] = {}
    for lib in ("slimtensor", *PEERS):
        key = lib + suffix
        if key in row:
            results[lib] = _seconds(row[key] * unit)
        else:
            results[lib] = {"skipped": f"cuda_copies.py measures no {lib} counterpart of this case"}
    if is_copy and row.get("memcpy_GBps"):
        results[MEMCPY] = _seconds(row["bytes"] / (row["memcpy_GBps"] * 1e9))
    case = Case(
        id=case_id(row["case"]),
        group="cuda",
        title=row["case"] + ("" if is_copy else " (one Python call, cached block)"),
        params={
            "device": device,
            "statistic": f"median of {reps} CUDA-event timings per library (cuda_copies.py)"
            if is_copy
            else "best of 5 loops of 20000 calls, per call (cuda_copies.py)",
            "size_bytes": row.get("bytes", 0),
            # cuda_copies.py's grouping: main (issue 10's table), perm4, dtypes, ...
            "set": row.get("group", "main"),
        },
        metric="time",
        traffic_bytes=row.get("bytes") if is_copy else None,
    )
    return case, results


def measure(quick: bool) -> list[tuple[Case, dict]]:
    """Runs cuda_copies.py once (its quick selection with `quick`) and returns every row as (case, results)."""
    from slimtensor_cuda import cuda_copies

    fd, path = tempfile.mkstemp(prefix="slimtensor-cuda-bench-", suffix=".json")
    os.close(fd)
    try:
        cuda_copies.main(path, quick)
        with open(path) as f:
            data = json.load(f)
    finally:
        os.unlink(path)
    meta = data.get("meta", {})
    device = str(meta.get("device", "cuda"))
    reps = int(meta.get("reps", 0))
    return [row_case(row, reps, device) for row in data["rows"]]


def cases(libs: Libs, quick: bool) -> list[Case]:
    title = "CUDA copies and cached allocation (slimtensor-cuda's cuda_copies.py): slimtensor, torch, cupy, cudaMemcpy"
    reason = unavailable_reason(libs)
    case = Case(id="cuda/copies", group="cuda", title=title, params={}, metric="time", skipped=reason)
    if reason is None:
        case.batch = lambda settings: measure(quick)  # cuda_copies.py times itself (REPS per row)
    return [case]

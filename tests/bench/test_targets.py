"""--targets: the issues' speed targets read from a results file (a report: timings never fail a test; these
tests check the reading, on a real quick run and on edited copies of it)."""

from __future__ import annotations

import copy
import json
import os

from slimtensor.bench import _targets

from .conftest import run_bench

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def verdict(results: dict, starts: str) -> _targets.Verdict:
    (v,) = [v for v in _targets.check(results) if v.target.startswith(starts)]
    return v


def with_median(results: dict, case_id: str, seconds: float, lib: str = "slimtensor") -> dict:
    edited = copy.deepcopy(results)
    (case,) = [c for c in edited["cases"] if c["id"] == case_id]
    case["results"][lib]["median"] = seconds
    return edited


def test_targets_table_of_a_stored_run(tiny_run, tmp_path):
    path, _, _ = tiny_run
    proc = run_bench(["--targets", "--results", str(path)], str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "| target | result | |"
    assert len(lines) == 2 + len(_targets.TARGETS)
    item = next(line for line in lines if line.startswith("| item() <= 50 ns"))
    assert item.endswith("| met |") or item.endswith("| missed |")
    # the tiny run has no 64 MiB copies
    assert next(line for line in lines if line.startswith("| >= 32 GB/s")).endswith("| no data |")


def test_a_time_limit_is_met_or_missed_by_the_median(tiny_run):
    _, results, _ = tiny_run
    assert verdict(with_median(results, "call/item", 40e-9), "item()").met is True
    missed = verdict(with_median(results, "call/item", 60e-9), "item()")
    assert missed.met is False and "item 60" in missed.result


def test_a_ratio_to_numpy_uses_the_same_run(tiny_run):
    _, results, _ = tiny_run
    permute = next(c for c in results["cases"] if c["id"] == "call/permute")
    numpy_median = permute["results"]["numpy"]["median"]
    edited = with_median(results, "call/permute", 1.4 * numpy_median)
    assert verdict(edited, "permute, reshape").met is None  # the tiny run has no reshape or slice case
    for name in ("reshape_view", "slice"):
        case = copy.deepcopy(next(c for c in edited["cases"] if c["id"] == "call/permute"))
        case["id"] = f"call/{name}"
        edited["cases"].append(case)
    assert verdict(edited, "permute, reshape").met is True
    assert verdict(with_median(edited, "call/slice", 1.6 * numpy_median), "permute, reshape").met is False


def test_the_stored_full_run_has_data_for_every_target():
    # The CPU targets read latest.json (the project's CPU machine), the CUDA ones cuda_h200.json (the GPU run),
    # the AOTI model ones aoti_cpu.json (make bench-aoti, on the CPU machine), the CUDA model ones
    # cuda_aoti_h200.json (the GPU run's `slimtensor bench --filter aoti/cuda`).
    def prefix(target: str) -> str:
        prefixes = (_targets.CUDA_PREFIX, _targets.AOTI_CPU_PREFIX, _targets.AOTI_CUDA_PREFIX)
        return next((p for p in prefixes if target.startswith(p)), "")

    for name, wanted in (
        ("latest.json", ""),
        ("cuda_h200.json", _targets.CUDA_PREFIX),
        ("aoti_cpu.json", _targets.AOTI_CPU_PREFIX),
        ("cuda_aoti_h200.json", _targets.AOTI_CUDA_PREFIX),
    ):
        with open(os.path.join(ROOT, "benchmarks", "results", name)) as f:
            results = json.load(f)
        missing = [v.target for v in _targets.check(results) if v.met is None and prefix(v.target) == wanted]
        assert not missing, f"benchmarks/results/{name} lacks the cases of: {missing}"

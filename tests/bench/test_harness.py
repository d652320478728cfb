"""The harness: a quick filtered run writes JSON that follows the documented schema, with every case accounted for."""

from __future__ import annotations

import copy

import pytest
from slimtensor import bench
from slimtensor.bench import _schema

from .conftest import run_bench


def test_quick_run_follows_the_schema(tiny_run):
    _, results, _ = tiny_run
    assert _schema.problems(results) == []
    assert results["schema"] == bench.SCHEMA
    assert results["mode"] == "quick"
    assert results["machine"]["copy_isa"] in ("scalar", "avx2", "avx512")
    assert results["versions"]["slimtensor"] and results["versions"]["numpy"]


def test_filter_selects_exactly_the_matching_cases(tiny_run):
    _, results, _ = tiny_run
    ids = [c["id"] for c in results["cases"]]
    assert "call/item" in ids and "call/permute" in ids
    assert "copy/c2c/float32-float32/4KiB/1t" in ids
    assert "memory/bytes_per_view" in ids
    assert not any(i.startswith("copy/") and "1MiB" in i for i in ids)
    assert not any(i == "call/empty" for i in ids)


def test_each_measured_library_has_samples_and_statistics(tiny_run):
    _, results, _ = tiny_run
    item = next(c for c in results["cases"] if c["id"] == "call/item")
    mine = item["results"]["slimtensor"]
    assert len(mine["samples"]) == 3 and mine["number"] >= 1
    assert mine["min"] <= mine["q1"] <= mine["median"] <= mine["q3"] <= mine["max"]
    assert item["results"]["numpy"]["median"] > 0


def test_copies_report_bandwidth_from_read_plus_written_bytes(tiny_run):
    _, results, _ = tiny_run
    case = next(c for c in results["cases"] if c["id"] == "copy/t2c/float32-bfloat16/4KiB/1t")
    assert case["traffic_bytes"] == 32 * 32 * (4 + 2)
    mine = case["results"]["slimtensor"]
    assert mine["gbps"] == pytest.approx(case["traffic_bytes"] / 1e9 / mine["median"])
    assert "numpy has no bfloat16" in case["results"]["numpy"]["skipped"]


@pytest.mark.needs_torch
def test_torch_is_measured_in_the_same_run_and_ratios_follow(tiny_run, torch):
    _, results, _ = tiny_run
    case = next(c for c in results["cases"] if c["id"] == "copy/c2c/float32-float32/4KiB/1t")
    r = case["results"]
    assert case["ratios"]["torch"] == pytest.approx(r["torch"]["median"] / r["slimtensor"]["median"])
    assert case["ratios"]["numpy"] == pytest.approx(r["numpy"]["median"] / r["slimtensor"]["median"])
    assert results["versions"]["torch"].startswith(torch.__version__.split("+")[0])


def test_aoti_shim_case_runs_both_libraries_or_says_why(tiny_run):
    _, results, _ = tiny_run
    aoti = [c for c in results["cases"] if c["group"] == "aoti"]
    assert len(aoti) == 1, "either aoti/shim/get_dim (harness available) or aoti/shim_calls (skipped)"
    case = aoti[0]
    if case["skipped"] is not None:
        assert case["id"] == "aoti/shim_calls" and len(case["skipped"]) > 20
        return
    assert case["id"] == "aoti/shim/get_dim"
    assert case["results"]["slimtensor"]["median"] < 1e-6  # seconds per C call
    assert "no C shim ABI" in case["results"]["numpy"]["skipped"]
    assert "median" in case["results"]["torch"] or case["results"]["torch"]["skipped"]


def test_table_is_printed(tiny_run):
    _, _, proc = tiny_run
    assert "call/item" in proc.stdout and "vs torch" in proc.stdout


def test_schema_checker_reports_problems(tiny_run):
    _, results, _ = tiny_run
    broken = copy.deepcopy(results)
    del broken["machine"]
    broken["cases"][0]["results"]["slimtensor"].pop("median")
    broken["cases"][0]["ratios"] = {"numpy": -1.0}
    found = _schema.problems(broken)
    assert any("missing 'machine'" in p for p in found)
    assert any("missing 'median'" in p for p in found)
    assert any("positive float" in p for p in found)
    with pytest.raises(ValueError, match="do not follow"):
        bench.validate(broken)


def test_list_shows_case_ids_without_running(tmp_path):
    proc = run_bench(["--list", "--quick", "--filter", "copy/p2c"], str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split()
    assert "copy/p2c/float32-float32/4KiB/1t" in lines
    assert all(line.startswith("copy/p2c") for line in lines)


def test_console_command_forwards_to_the_suite(tmp_path):
    from slimtensor import cli

    assert cli.main(["bench", "--list", "--quick", "--filter", "call/item"]) == 0


def test_progress_without_tqdm_is_a_plain_counter(monkeypatch, capsys):
    import builtins

    from slimtensor import bench

    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name == "tqdm":
            raise ImportError("no tqdm here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    results = bench.run(quick=True, filter=["call/item", "call/shape"], torch=False, progress=True)
    err = capsys.readouterr().err
    assert len(results["cases"]) == 2
    assert "[1/2] call/item" in err and "[2/2] call/shape" in err and "2/2 cases in" in err, err

"""--compare: the change of each case against an earlier run, printed and stored in the new JSON."""

from __future__ import annotations

import copy
import json

from slimtensor import bench

from .conftest import run_bench


def test_compare_two_stored_runs(tiny_run, tmp_path):
    path, results, _ = tiny_run
    older = copy.deepcopy(results)
    for case in older["cases"]:  # make the old run twice as slow
        r = case["results"].get("slimtensor", {})
        if "median" in r:
            r["median"] *= 2
    old_path = tmp_path / "old.json"
    old_path.write_text(json.dumps(older))
    proc = run_bench(["--compare", str(old_path), "--results", str(path)], str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "call/item" in proc.stdout and "2.00x faster" in proc.stdout
    changes = bench.compare(older, results)
    assert changes["call/item"]["change"] == 2.0


def test_compare_after_a_run_is_stored_in_the_json(tiny_run, tmp_path):
    path, _, _ = tiny_run
    out = tmp_path / "new.json"
    proc = run_bench(
        ["--quick", "--no-progress", "--filter", "call/item", "--out", str(out), "--compare", str(path)],
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    new = bench.load(str(out))
    assert new["compare"]["against"].endswith("tiny.json")
    entry = new["compare"]["cases"]["call/item"]
    assert entry["change"] > 0 and entry["old_median"] > 0 and entry["new_median"] > 0


def test_results_without_compare_is_refused(tiny_run, tmp_path):
    path, _, _ = tiny_run
    proc = run_bench(["--results", str(path)], str(tmp_path))
    assert proc.returncode == 2 and "--results needs --compare" in proc.stderr

"""slimtensor.bench.aoti_models: both libraries' workers, interleaved samples (Note [Interleaved model samples])."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="the harness's libtorch side needs torch (requirements/test.txt)")
pytest.importorskip("slimtensor.aoti", reason="the harness's slimtensor side needs slimtensor.aoti")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(ROOT, ".cache", "aoti-models")


def _harness(tmp_path, folders: str, *args: str) -> dict:
    out = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, "-m", "slimtensor.bench.aoti_models", folders, *args, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_fallback_cases_have_every_sample_of_both_libraries(tmp_path):
    from slimtensor.bench import aoti_models

    got = _harness(tmp_path, str(tmp_path), "--only", "addmm,conv", "--repeats", "4", "--sample-ms", "2")
    assert got["threads"] == 1 and got["repeats"] == 4
    rows = {r["case"]: r for r in got["rows"]}
    wanted = [f"addmm {m}x{k}@{k}x{n}" for m, k, n in aoti_models.ADDMM] + list(aoti_models.CONV)
    assert sorted(rows) == sorted(wanted)
    for r in rows.values():
        assert len(r["slim_us"]) == len(r["torch_us"]) == 4
        assert all(x > 0 for x in r["slim_us"] + r["torch_us"])
        assert r["calls_per_sample"]["slim"] >= 1 and r["calls_per_sample"]["torch"] >= 1
        assert r["ratio"] > 0 and len(r["load_avg"]) == 2


def test_models_come_from_the_first_folder_holding_them_and_absent_ones_are_left_out(tmp_path):
    folders = (
        sorted(
            os.path.join(CACHE, d)
            for d in os.listdir(CACHE)
            if os.path.isfile(os.path.join(CACHE, d, "pointwise.pt2"))
        )
        if os.path.isdir(CACHE)
        else []
    )
    if not folders:
        pytest.skip("the AOTI tests have not compiled their models here")
    got = _harness(
        tmp_path,
        os.pathsep.join([str(tmp_path), folders[-1]]),
        "--only",
        "models",
        "--models",
        "pointwise,no_such_model",
        "--repeats",
        "3",
        "--sample-ms",
        "2",
        "--threads",
        "2",
    )
    assert got["threads"] == 2
    assert [r["case"] for r in got["rows"]] == ["pointwise"]
    assert len(got["rows"][0]["slim_us"]) == 3


def test_a_worker_that_fails_names_its_library(tmp_path):
    bad = tmp_path / "broken.pt2"
    bad.write_bytes(b"not a zip")
    (tmp_path / "broken.json").write_text(json.dumps({"inputs": [["float32"]]}))
    got = _harness(tmp_path, str(tmp_path), "--only", "models", "--models", "broken", "--repeats", "3")
    skipped = {r["case"]: r["skipped"] for r in got["rows"] if "skipped" in r}
    assert skipped["broken"].startswith(("slim:", "torch:")), skipped

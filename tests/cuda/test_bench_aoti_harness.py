"""The CUDA model bench's harness (slimtensor_cuda.bench_aoti) on models that cannot run: every side gives its
reason and the run ends (Note [Interleaved CUDA model samples]). Runs everywhere, CI included; the timing itself
is measured on the GPU machine (docs/aoti.md, "CUDA speed")."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("slimtensor_cuda")


def test_a_model_that_cannot_run_gets_a_reason_on_each_side(tmp_path) -> None:
    for name in ("broken_a", "broken_b"):  # not a .pt2: each library's loader refuses it
        (tmp_path / f"{name}.pt2").write_bytes(b"not a zip archive")
        np.savez(tmp_path / f"{name}.npz", in0_0=np.ones(4, np.float32))
        (tmp_path / f"{name}.json").write_text(
            json.dumps({"inputs": [["float32"]], "outputs": [["float32"]]})
        )
    out = tmp_path / "rows.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "slimtensor_cuda.bench_aoti",
            str(tmp_path),
            "--runs",
            "20",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["model"] for r in rows] == ["broken_a", "broken_b"]
    for row in rows:
        for side in ("slim", "slim_graph", "torch"):
            assert "samples_us" not in row[side], (row["model"], side)
            assert row[side]["skipped"].strip(), (row["model"], side, "no reason given")

"""Fixtures of the benchmark-suite tests: one tiny quick run of the harness, shared by the tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# A few fast cases of every group (the AOTI shim case runs the C harness once per library, or reports itself
# skipped with the reason where slimtensor.aoti, the checkout or a C++ compiler is missing).
TINY_FILTERS = [
    "call/item",
    "call/permute",
    "copy/c2c/float32-float32/4KiB",
    "copy/t2c/float32-float32/4KiB",
    "copy/t2c/float32-bfloat16/4KiB",
    "memory/bytes_per_view",
    "aoti/shim/get_dim",
    "aoti/shim_calls",
]


def run_bench(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    return subprocess.run(
        [sys.executable, "-m", "slimtensor.bench", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """(path of the JSON, parsed results, the completed process) of `slimtensor bench --quick` on TINY_FILTERS."""
    folder = tmp_path_factory.mktemp("bench")
    out = folder / "tiny.json"
    args = ["--quick", "--no-progress", "--out", str(out)]
    for f in TINY_FILTERS:
        args += ["--filter", f]
    proc = run_bench(args, str(folder))
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out) as f:
        return out, json.load(f), proc

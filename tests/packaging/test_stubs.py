"""The committed typing stubs of slimtensor._C are what stubgen makes of the current build, and type-check."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYDIR = ROOT / "packages" / "slimtensor-core" / "python"
COMMITTED = PYDIR / "slimtensor" / "_C.pyi"


def test_stubs_are_current(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "_C.pyi"
    env = dict(os.environ, SLIMTENSOR_STUBGEN="1")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nanobind.stubgen",
            "-q",
            "-m",
            "slimtensor._C",
            "-p",
            str(PYDIR / "stubgen_patterns.txt"),
            "-o",
            str(out),
        ],
        check=True,
        env=env,
    )
    assert out.read_text() == COMMITTED.read_text(), "stubs are stale: run `make stubs` and commit the result"


def test_stubs_type_check() -> None:
    pytest.importorskip("mypy", reason="mypy is in requirements/test.txt; install it to check the stubs")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "slimtensor/_C.pyi"],
        cwd=PYDIR,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr

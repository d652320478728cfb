"""Typed user code type-checks against slimtensor's stubs (mypy and basedpyright) and runs."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYDIR = ROOT / "packages" / "slimtensor-core" / "python"
SCRIPT = pathlib.Path(__file__).resolve().parent / "typed" / "user_script.py"


def _env() -> dict[str, str]:
    # The editable install finds slimtensor through an import hook that type checkers cannot follow: point
    # them at the Python sources (the stubs of slimtensor._C live there).
    return dict(os.environ, MYPYPATH=str(PYDIR))


def test_the_typed_script_runs():
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout + proc.stderr


def test_mypy_accepts_typed_user_code(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in requirements/test.txt")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--follow-imports=silent",
            "--strict-optional",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(SCRIPT),
        ],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_rejects_what_fails_at_run_time(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in requirements/test.txt")
    bad = tmp_path / "bad.py"
    bad.write_text("import slimtensor as st\nt = st.ones(2)\nu = t + 1\ns = t.sum()\n")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", str(bad)],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout
    assert 'Unsupported operand types for + ("Tensor" and "int")' in proc.stdout
    assert '"Tensor" has no attribute "sum"' in proc.stdout


def test_basedpyright_accepts_typed_user_code(tmp_path):
    exe = shutil.which("basedpyright", path=os.path.dirname(sys.executable)) or shutil.which("basedpyright")
    if exe is None:
        pytest.skip("basedpyright is in requirements/test.txt (PyPI's basedpyright ships its own node)")
    config = tmp_path / "pyrightconfig.json"
    settings = {
        "typeCheckingMode": "standard",
        "extraPaths": [str(PYDIR)],
        "reportMissingModuleSource": False,
    }
    config.write_text(json.dumps(settings))
    shutil.copy(SCRIPT, tmp_path / "user_script.py")
    proc = subprocess.run(
        [exe, "--project", str(config), "--pythonpath", sys.executable, str(tmp_path / "user_script.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 errors" in proc.stdout

"""Scalar's double -> int64 is defined for every double (issue 14: UBSan float-cast-overflow)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "packages", "slimtensor-core", "include")


def test_from_double_and_from_complex_never_cast_out_of_range(tmp_path):
    cxx = shutil.which("g++") or shutil.which("clang++")
    if not cxx:
        pytest.skip("no C++ compiler (install g++)")
    exe = str(tmp_path / "scalar_casts")
    flags = ["-fsanitize=float-cast-overflow,undefined", "-fno-sanitize-recover=all"]
    r = subprocess.run(
        [
            cxx,
            "-std=c++17",
            "-O1",
            *flags,
            os.path.join(HERE, "cpp", "scalar_casts.cpp"),
            f"-I{INCLUDE}",
            "-o",
            exe,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    r = subprocess.run([exe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr  # UBSan: "... is outside the range of representable values"
    assert r.stdout.split() == ["0", str(2**63 - 1), "-1"]

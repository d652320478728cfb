"""Configuring the core with a GCC that has no shared libstdc++ stops with the reason, instead of building
libraries that each carry a private C++ runtime and crash at the first exception that crosses them
(Note [One C++ runtime per process] in packages/slimtensor-core/cmake/slimtensorSharedCxxRuntime.cmake)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUARD = ROOT / "packages" / "slimtensor-core" / "cmake" / "slimtensorSharedCxxRuntime.cmake"

pytestmark = pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("g++") is None, reason="needs cmake and g++ on PATH"
)


def _configure(tmp_path: pathlib.Path, cxx: str) -> subprocess.CompletedProcess[str]:
    # The guard alone in a project of its own: the core's other checks (OpenBLAS, nanobind) are not at issue.
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(guard_check LANGUAGES CXX)\n"
        f'include("{GUARD.as_posix()}")\nslimtensor_require_shared_cxx_runtime(slimtensor-core)\n'
    )
    return subprocess.run(
        ["cmake", "-S", str(src), "-B", str(tmp_path / "build"), f"-DCMAKE_CXX_COMPILER={cxx}"],
        capture_output=True,
        text=True,
    )


def test_a_compiler_with_the_shared_runtime_configures(tmp_path: pathlib.Path) -> None:
    done = _configure(tmp_path, shutil.which("g++") or "g++")
    assert done.returncode == 0, done.stderr


def test_a_compiler_without_a_shared_libstdcxx_is_refused_with_the_fix(tmp_path: pathlib.Path) -> None:
    # A g++ that answers as /opt/gcc/bin/g++ on the GPU machine does: no shared libstdc++ of its own.
    fake = tmp_path / "g++"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in *-print-file-name=libstdc++.so*) echo libstdc++.so; exit 0;; esac\n'
        f'exec {shutil.which("g++")} "$@"\n'
    )
    fake.chmod(0o755)
    done = _configure(tmp_path, str(fake))
    assert done.returncode != 0
    message = " ".join(done.stderr.split())
    assert "has no shared libstdc++" in message
    assert "CXX=/usr/bin/g++" in message

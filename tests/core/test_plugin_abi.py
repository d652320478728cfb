"""Plugin ABI 1.1 and 1.0 from a C++ host (tests/core/cpp/plugin_abi.cpp), without Python crossing the boundary:
slimtensor_register_device_plugin, the refusals per minor, token handles that cannot be dereferenced, the
core table (convert, convert_strided, note_device_memory, trace_device_event, core_symbol), and an ABI 1.0
plugin whose table ends where 1.0 ends."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.aoti._helpers import cxx_env, cxx_sanitize_flags

HERE = os.path.dirname(os.path.abspath(__file__))


def _build(tmp_path) -> str:
    from slimtensor.aoti import _lib

    cxx = shutil.which("g++") or shutil.which("c++")
    if not cxx:
        pytest.skip("no C++ compiler (install g++)")
    libdir = os.path.dirname(_lib.library_path())
    include = os.path.join(os.path.dirname(libdir), "include")
    exe = os.path.join(str(tmp_path), "plugin_abi")
    cmd = [
        cxx,
        "-std=c++17",
        "-O1",
        "-Wall",
        "-Wextra",
        "-Werror=unused-result",
        "-pthread",
        *cxx_sanitize_flags(),
        os.path.join(HERE, "cpp", "plugin_abi.cpp"),
        f"-I{include}",
        _lib.library_path(),
        f"-Wl,-rpath,{libdir}",
        "-o",
        exe,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return exe


def test_plugin_abi_from_a_cpp_host(tmp_path) -> None:
    exe = _build(tmp_path)
    r = subprocess.run([exe], capture_output=True, text=True, timeout=120, env=cxx_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert ", 0 failed" in r.stdout

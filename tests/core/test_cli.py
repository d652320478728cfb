"""The `slimtensor` command: info prints versions, build options, devices and memory; --version; pipes."""

from __future__ import annotations

import os
import subprocess
import sys

import slimtensor as st

CLI = [sys.executable, "-m", "slimtensor"]


def test_info_prints_the_build_options():
    proc = subprocess.run([*CLI, "info"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(f"slimtensor {st.__version__}")
    build = out[out.index("build:") : out.index("devices:")]
    for key in ("compiler:", "C++17", "build type", "copy kernels:", "SLEEF:", "oneDNN:", "BLAS:"):
        assert key in build, build
    assert "cpu" in out[out.index("devices:") :]


def test_version():
    proc = subprocess.run([*CLI, "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == f"slimtensor {st.__version__}"


def test_info_survives_a_reader_that_stops_early():
    # `slimtensor info | head -1`, made deterministic: the reading end is closed before info writes anything
    read, write = os.pipe()
    os.close(read)
    try:
        info = subprocess.Popen([*CLI, "info"], stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    _, err = info.communicate(timeout=120)
    assert info.returncode == 0, err.decode()
    assert b"BrokenPipeError" not in err and b"Traceback" not in err, err.decode()

"""Errors raised while CUDA is in use do not crash the process (in fresh processes, with a native backtrace).

On the GPU machine two such calls died with SIGSEGV instead of raising: `t.record_stream(7)` on a hostdev
tensor late in tests/core/test_plugin_memory.py (with slimtensor-cuda installed and in use), and
`st.zeros(4, device="cuda")[::-1]` (tests/cuda/test_device_faults.py). Both raise from the core's Python
module itself, where errors raised inside libslimtensor pass. Each case runs in a child preloaded with
tools/segv_backtrace.c, so a crash fails the test with the native stack named (tools/symbolize_backtrace.py).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.needs_cuda
REPO = pathlib.Path(__file__).resolve().parents[2]
TOOLS = pathlib.Path(__file__).resolve().parent / "tools"

CASES = {
    "negative-step-on-cuda": (
        "import slimtensor as st\nt = st.zeros(4, device='cuda')\n"
        "try:\n    t[::-1]\nexcept ValueError as e:\n    print('raised:', e)\n"
    ),
    "record-stream-number-on-hostdev-with-cuda-in-use": (
        "import slimtensor as st\nimport slimtensor_hostdev\n"
        "st.ones(2, device='cuda').tolist()\nt = st.zeros((4,), device='hostdev:0')\n"
        "try:\n    t.record_stream(7)\nexcept ValueError as e:\n    print('raised:', e)\n"
    ),
}


@pytest.fixture(scope="module")
def backtrace_library(tmp_path_factory) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build tools/segv_backtrace.c")
    out = tmp_path_factory.mktemp("segv") / "segv_backtrace.so"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", str(out), str(TOOLS / "segv_backtrace.c")], check=True, timeout=60
    )
    return str(out)


@pytest.mark.parametrize("name", list(CASES))
def test_an_error_raised_with_cuda_in_use_is_an_exception_not_a_crash(
    name, backtrace_library, tmp_path
) -> None:
    if "hostdev" in name:
        pytest.importorskip(
            "slimtensor_hostdev", reason="the test plugin slimtensor-hostdev is not installed"
        )
    env = {**os.environ, "LD_PRELOAD": backtrace_library}
    res = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", CASES[name]],
        capture_output=True, text=True, timeout=120, env=env, cwd=REPO,
    )  # fmt: skip
    if res.returncode != 0:
        log = tmp_path / "child.log"
        log.write_text(res.stdout + res.stderr)
        names = subprocess.run(
            [sys.executable, str(TOOLS / "symbolize_backtrace.py"), str(log)],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        pytest.fail(
            f"{name}: the child exited with {res.returncode}\n{res.stderr[-3000:]}\nnamed frames:\n{names}"
        )
    assert "raised:" in res.stdout, res.stdout

"""Bounded fuzzer runs inside make test (seconds); `make fuzz` runs them for FUZZ_TIME (default 30 min).

The Python differential fuzzer always runs (atheris is in requirements/test.txt). The libFuzzer targets need
clang's sanitizer build (`make fuzz-build`): when it exists their corpora (regression inputs included) are
replayed and fuzzed for a few seconds, else the test says how to build them.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(ROOT, "build", "fuzz")
SMOKE_S = os.environ.get("FUZZ_SMOKE", "8")


def test_views_differential_fuzzer_bounded_run(tmp_path):
    pytest.importorskip("atheris", reason="pip install atheris (requirements/test.txt)")
    r = subprocess.run(
        [
            sys.executable,
            os.path.join(HERE, "views_fuzzer.py"),
            f"-max_total_time={SMOKE_S}",
            "-max_len=256",
            f"-artifact_prefix={tmp_path}/",
            str(tmp_path),
            os.path.join(HERE, "corpus", "views"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    assert "Done" in r.stderr


@pytest.mark.parametrize("name", ["shim", "dlpack"])
def test_c_fuzzer_bounded_run(name, tmp_path):
    exe = os.path.join(BUILD, f"{name}_fuzzer")
    if not os.path.exists(exe):
        pytest.skip(f"{exe} is not built: make fuzz-build (needs clang-14 and libclang-rt-14-dev)")
    rt = subprocess.run(
        ["clang++-14", "-print-file-name=libclang_rt.asan-x86_64.so"], capture_output=True, text=True
    ).stdout.strip()
    env = dict(
        os.environ,
        LD_PRELOAD=rt,
        ASAN_OPTIONS="allocator_may_return_null=1:abort_on_error=1",
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
        LLVM_PROFILE_FILE=os.devnull,
    )
    r = subprocess.run(
        [
            exe,
            f"-max_total_time={SMOKE_S}",
            "-max_len=512",
            "-timeout=10",
            f"-artifact_prefix={tmp_path}/",
            str(tmp_path),
            os.path.join(HERE, "corpus", name),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-4000:]

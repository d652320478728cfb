"""The shims under real concurrency (tests/aoti/cpp/threads_stress.cpp): views of one storage made and dropped
on several threads, handles deleted on another thread than the one that made them, threads exiting with full
per-thread caches; every counter returns to its baseline."""

from __future__ import annotations

import subprocess

from ._helpers import build_cpp, cxx_env


def test_handles_across_threads_leave_every_count_exact(tmp_path):
    exe = build_cpp("threads_stress.cpp", tmp_path)
    r = subprocess.run([exe], capture_output=True, text=True, timeout=120, env=cxx_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"


def test_handles_across_threads_with_the_debug_registry(tmp_path):
    # SLIMTENSOR_DEBUG_HANDLES=1 takes the locked registry path on every make and delete.
    exe = build_cpp("threads_stress.cpp", tmp_path)
    r = subprocess.run(
        [exe],
        capture_output=True,
        text=True,
        timeout=120,
        env=cxx_env(SLIMTENSOR_DEBUG_HANDLES="1"),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"

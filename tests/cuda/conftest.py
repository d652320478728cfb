"""Shared configuration of the CUDA plugin's tests (packages/slimtensor-cuda).

- Tests that need no GPU (the allocator's policy against its host-memory test double, unavailable-with-
  reason, the errors of ``device="cuda"`` calls, lazy import) run everywhere, CI included.
- ``@pytest.mark.needs_cuda`` tests need the plugin installed and a usable CUDA device; elsewhere they
  are skipped with the reason (``st.devices()``'s reason for cuda, or why the plugin is missing).
- ``cuda_torch`` / ``cupy`` fixtures: any CUDA build of torch / cupy (the GPU machine has torch 2.11,
  not the CPU oracle torch==2.13.0 that ``needs_torch`` pins), else the test is skipped saying why.
- After each GPU test module, the allocator's allocated bytes and the core's live storages of the cuda
  device are back at their baseline ("device memory back to baseline after each module").
"""

from __future__ import annotations

import gc
import importlib
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = REPO / "packages" / "slimtensor-cuda"


def _plugin():
    try:
        return importlib.import_module("slimtensor_cuda"), ""
    except Exception as exc:  # noqa: BLE001  (any failure: the plugin is not usable here)
        return None, f"slimtensor_cuda is not importable ({type(exc).__name__}: {exc}); build it with pip install packages/slimtensor-cuda"


def cuda_skip_reason() -> str:
    """Empty when a CUDA device is usable through slimtensor, else why not."""
    mod, why = _plugin()
    if mod is None:
        return why
    try:
        if not mod.is_available():
            return f"no usable CUDA device: {mod.unavailable_reason()}"
    except Exception as exc:  # noqa: BLE001
        return f"slimtensor_cuda.is_available() failed: {exc}"
    return ""


_SKIP = None


def _skip_reason_cached() -> str:
    global _SKIP
    if _SKIP is None:
        _SKIP = cuda_skip_reason()
    return _SKIP


def pytest_collection_modifyitems(config, items):
    needs = [i for i in items if i.get_closest_marker("needs_cuda") is not None]
    if not needs:
        return
    reason = _skip_reason_cached()
    if reason:
        skip = pytest.mark.skip(reason=f"needs_cuda: {reason}")
        for item in needs:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def stc():
    """The slimtensor_cuda module (for needs_cuda tests)."""
    mod, why = _plugin()
    if mod is None:
        pytest.skip(why)
    return mod


@pytest.fixture(scope="session")
def cuda_torch():
    try:
        torch = importlib.import_module("torch")
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"torch is not importable ({exc})")
    if not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} has no usable CUDA device")
    return torch


@pytest.fixture(scope="session")
def cupy():
    try:
        cp = importlib.import_module("cupy")
        cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"cupy with a usable device is not importable ({type(exc).__name__}: {exc})")
    return cp


def _cuda_counters():
    import slimtensor as st
    import slimtensor_cuda as stc

    gc.collect()
    stc.synchronize()
    stats = st.memory_stats("cuda")
    return {
        "live_storages": stats.get("live_storages", 0),
        "live_bytes": stats.get("live_bytes", 0),
        "allocated_bytes": stc.memory_stats().get("allocated_bytes", 0),
    }


@pytest.fixture(autouse=True, scope="module")
def _cuda_memory_baseline(request):
    """Device memory back to baseline after each module that used the GPU."""
    if _skip_reason_cached() or not any(
        i.get_closest_marker("needs_cuda") for i in request.session.items if i.module is request.module
    ):
        yield
        return
    before = _cuda_counters()
    yield
    after = _cuda_counters()
    assert after == before, f"CUDA memory not back to baseline after {request.module.__name__}: {before} -> {after}"


def run_python(code: str, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """Runs code in a fresh interpreter (import-time behaviour, fork safety, environment variables)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=timeout)

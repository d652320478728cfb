"""Shared test configuration: the needs_torch marker and the memory-leak check of every test module.

- ``@pytest.mark.needs_torch`` tests compare with PyTorch; they are skipped, with the reason, when
  ``torch==2.13.0`` cannot be imported (torch is a test-only dependency, pinned exactly).
- ``@pytest.mark.needs_mps`` tests need an available MPS device (slimtensor-metal on a Mac with Metal); they
  are skipped with the device's own reason, or, under ``SLIMTENSOR_REQUIRE_MPS=1`` (the self-hosted macOS CI
  job), fail with it. The device-parametrised core tests then include ``mps:0`` as well (``require_mps()``).
- After each test module, the CPU memory statistics (live storages, tensors and bytes) must be back at
  the values they had before the module ran (DESIGN.md §5: "the test suite checks that the counters
  return to their baseline").
"""

from __future__ import annotations

import gc
import importlib
import os
import shutil
import subprocess

import pytest

TORCH_VERSION = "2.13.0"


def _load_torch():
    try:
        torch = importlib.import_module("torch")
    except Exception as exc:  # noqa: BLE001  (any import failure means: no torch to compare with)
        return None, f"torch is not importable ({type(exc).__name__}: {exc})"
    version = torch.__version__.split("+")[0]
    if version != TORCH_VERSION:
        return (
            None,
            f"the comparisons need torch=={TORCH_VERSION} exactly but torch {torch.__version__} is installed",
        )
    return torch, ""


TORCH, TORCH_SKIP_REASON = _load_torch()


def require_mps() -> bool:
    """True under SLIMTENSOR_REQUIRE_MPS=1: a missing MPS device is a failure, not a skip."""
    return os.environ.get("SLIMTENSOR_REQUIRE_MPS", "") == "1"


def mps_unavailable_reason() -> str | None:
    """None when an MPS device can be used, else why not (the plugin's own reason, or that it is absent)."""
    import slimtensor as st

    for info in st.devices():
        if info.name == "mps":
            return None if info.available else f"mps is unavailable: {info.reason}"
    return "no 'mps' device is registered (install packages/slimtensor-metal: make build-test)"


def pytest_runtest_setup(item):
    if item.get_closest_marker("needs_mps") is None or require_mps():
        return
    reason = mps_unavailable_reason()
    if reason is not None:
        pytest.skip(f"needs_mps: {reason}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    # Under SLIMTENSOR_REQUIRE_MPS=1 the test fails in its call phase (reported as failed, not as an error).
    if item.get_closest_marker("needs_mps") is None or not require_mps():
        return
    reason = mps_unavailable_reason()
    if reason is not None:
        pytest.fail(f"SLIMTENSOR_REQUIRE_MPS=1 but {reason}", pytrace=False)


def pytest_collection_modifyitems(config, items):
    if TORCH is not None:
        return
    skip = pytest.mark.skip(reason=f"needs_torch: {TORCH_SKIP_REASON}")
    for item in items:
        if item.get_closest_marker("needs_torch") is not None:
            item.add_marker(skip)


# A shared library shaped like an AOTInductor model as st.aoti.load reads one before running anything: the
# container entry point (which refuses to create a container) and undefined shim names, a device-generic one
# and, with device_shim, a device plugin's (a function of one pointer, called by probe_device_shim(arg)). A test
# double of a model for the loader's checks and binding, never run as a model.
_MODEL_SHAPED_C = r"""
#include <stddef.h>
#include <stdint.h>
int32_t aoti_torch_get_dim(void* tensor, int64_t* ret_dim);
#ifdef DEVICE_SHIM
int32_t DEVICE_SHIM(void* arg);
int32_t probe_device_shim(void* arg) { return DEVICE_SHIM(arg); }
#endif
int32_t probe_core_shim(void) {
  int64_t dim = -1;
  return aoti_torch_get_dim(NULL, &dim);
}
int32_t AOTInductorModelContainerCreateWithDevice(void** c, size_t n, const char* device, const char* dir) {
  return 1;
}
"""


@pytest.fixture
def model_shaped_library(tmp_path):
    """build(name, device_shim=None) -> the path of a freshly compiled model-shaped library (see above)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler (install gcc)")
    source = tmp_path / "model_shaped.c"
    source.write_text(_MODEL_SHAPED_C)

    def build(name: str, device_shim: str | None = None) -> str:
        out = str(tmp_path / f"{name}.so")
        defines = [f"-DDEVICE_SHIM={device_shim}"] if device_shim else []
        r = subprocess.run(
            [cc, "-shared", "-fPIC", "-O1", *defines, str(source), "-o", out], capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        return out

    return build


@pytest.fixture(scope="session")
def torch():
    """The torch module (only inside ``needs_torch`` tests, which are skipped when it is absent)."""
    if TORCH is None:
        pytest.skip(f"needs_torch: {TORCH_SKIP_REASON}")
    return TORCH


_LEAK_KEYS = ("live_storages", "live_tensors", "live_bytes")


def _cpu_counters():
    import sys

    import slimtensor as st

    # pytest keeps the last failure's traceback (for post-mortem debugging); its frames hold tensors
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    for _ in range(3):
        gc.collect()
    stats = st.memory_stats("cpu")
    return {k: stats[k] for k in _LEAK_KEYS}


@pytest.fixture(scope="module", autouse=True)
def _no_leaks_per_module(request):
    """Fails the module when the CPU counters do not return to their baseline once its tests are done."""
    try:
        before = _cpu_counters()
    except ImportError:  # a module that does not need slimtensor at all
        yield
        return
    yield
    after = _cpu_counters()
    if after != before:
        leaked = {k: after[k] - before[k] for k in _LEAK_KEYS if after[k] != before[k]}
        pytest.fail(
            f"memory leak in {request.module.__name__}: CPU memory_stats changed by {leaked} "
            f"(before {before}, after {after}); a tensor, view or storage outlived its module",
            pytrace=False,
        )

"""Shared test configuration: the needs_torch marker and the memory-leak check of every test module.

- ``@pytest.mark.needs_torch`` tests compare with PyTorch; they are skipped, with the reason, when
  ``torch==2.13.0`` cannot be imported (torch is a test-only dependency, pinned exactly).
- ``@pytest.mark.needs_mps`` tests need an available MPS device (slimtensor-metal on a Mac with Metal); they
  are skipped with the device's own reason, or, under ``SLIMTENSOR_REQUIRE_MPS=1`` (the self-hosted macOS CI
  job), fail with it. The device-parametrised core tests then include ``mps:0`` as well (``require_mps()``).
- ``device`` fixture: the core's test bodies that take it run on ``cpu`` and on ``cuda`` (same assertions);
  the cuda run is skipped with the device's own reason where no CUDA device is usable. After each test the
  device's live storages, tensors and bytes are back where they were. ``@pytest.mark.needs_cuda`` tests
  anywhere are skipped with the same reason.
- After each test module, the memory statistics (live storages, tensors and bytes) of the CPU and of every
  available device whose plugin is loaded must be back at the values they had before the module ran
  (DESIGN.md §5: "the test suite checks that the counters return to their baseline").
"""

from __future__ import annotations

import gc
import importlib
import os
import shutil
import subprocess
import sys

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


_CUDA_REASON: list[str | None] = []


def cuda_unavailable_reason() -> str | None:
    """None when slimtensor has a usable "cuda" device, else why not (asked once per session; the probe
    creates no CUDA context)."""
    if not _CUDA_REASON:
        import slimtensor as st

        info = next((d for d in st.devices() if d.name == "cuda"), None)
        if info is None:
            _CUDA_REASON.append("no 'cuda' device is registered (pip install packages/slimtensor-cuda)")
        else:
            _CUDA_REASON.append(None if info.available else f"cuda is unavailable: {info.reason}")
    return _CUDA_REASON[0]


def pytest_runtest_setup(item):
    if item.get_closest_marker("needs_cuda") is not None:
        reason = cuda_unavailable_reason()
        if reason is not None:
            pytest.skip(f"needs_cuda: {reason}")
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
        # on macOS linked as torch links models (cpp_builder: -undefined dynamic_lookup), with header room as
        # ld64 leaves it for the load commands the loader adds (Note [Binding a Mach-O model])
        macos = (
            ["-undefined", "dynamic_lookup", "-Wl,-headerpad_max_install_names"]
            if sys.platform == "darwin"
            else []
        )
        r = subprocess.run(
            [cc, "-shared", "-fPIC", "-O1", *defines, *macos, str(source), "-o", out],
            capture_output=True,
            text=True,
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


def _collect() -> None:
    import sys

    # pytest keeps the last failure's traceback (for post-mortem debugging); its frames hold tensors
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    for _ in range(3):
        gc.collect()


def _live_counters(device: str) -> dict:
    import slimtensor as st

    stats = st.memory_stats(device)
    return {k: stats[k] for k in _LEAK_KEYS}


def _all_counters() -> dict:
    """The live counters of the CPU and of each available device registered so far (no plugin is loaded
    here, and no device driver is called: these are the core's own counters)."""
    from slimtensor import _C

    _collect()
    names = ["cpu"] + [d["name"] for d in _C._devices() if d["available"] and d["name"] != "cpu"]
    return {name: _live_counters(name) for name in names}


@pytest.fixture(scope="module", autouse=True)
def _no_leaks_per_module(request):
    """Fails the module when the counters of the CPU or of a device do not return to their baseline once its
    tests are done (devices registered during the module are compared from zero)."""
    try:
        before = _all_counters()
    except ImportError:  # a module that does not need slimtensor at all
        yield
        return
    yield
    after = _all_counters()
    zero = dict.fromkeys(_LEAK_KEYS, 0)
    leaks = {}
    for name, counters in after.items():
        base = before.get(name, zero)
        if counters != base:
            leaks[name] = {k: counters[k] - base[k] for k in _LEAK_KEYS if counters[k] != base[k]}
    if leaks:
        pytest.fail(
            f"memory leak in {request.module.__name__}: memory_stats changed by {leaks} "
            f"(before {before}, after {after}); a tensor, view or storage outlived its module",
            pytrace=False,
        )


DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.needs_cuda)]


@pytest.fixture(params=DEVICES)
def device(request):
    """ "cpu", then "cuda" (skipped with the reason where no CUDA device is usable): the device a core test
    body runs on. The device's live counters must be back at their baseline after the test."""
    name = request.param
    before = _live_counters(name)
    yield name
    after = _live_counters(name)
    if after != before:  # garbage not yet collected (gc is slow with torch loaded: only when needed)
        _collect()
        after = _live_counters(name)
    # at most the baseline: garbage of earlier tests may be collected meanwhile
    assert all(after[k] <= before[k] for k in _LEAK_KEYS), (
        f"memory on {name} did not return to its baseline: {before} -> {after}"
    )

"""Plugin memory beyond allocations, through the hostdev test plugin: pinned host memory (host_allocate,
host_free, host_is_pinned), Tensor.record_stream, from_blob's pointer check (locate_pointer), out-of-memory
as MemoryError, __cuda_array_interface__ (export only on CUDA; import errors), and the lazy st.cuda.

The CUDA side of the same features runs in tests/cuda/test_gpu.py on a GPU machine.
"""

from __future__ import annotations

import gc
import subprocess
import sys

import numpy as np
import pytest
import slimtensor as st
from slimtensor import _plugins

hostdev = pytest.importorskip(
    "slimtensor_hostdev",
    reason="the test plugin slimtensor-hostdev is not installed (make build-test puts it in .venv-test)",
)


@pytest.fixture(scope="module", autouse=True)
def _baseline():
    _plugins.load_plugins()
    gc.collect()
    pinned = hostdev.pinned_stats()
    live = [hostdev.counters(i)["live_tokens"] for i in (0, 1)]
    bad = [hostdev.counters(i)["bad_handles"] for i in (0, 1)]
    yield
    gc.collect()
    for i in (0, 1):
        hostdev.synchronize(i)
    assert hostdev.pinned_stats() == pinned, "pinned host memory was not given back"
    assert [hostdev.counters(i)["live_tokens"] for i in (0, 1)] == live
    assert [hostdev.counters(i)["bad_handles"] for i in (0, 1)] == bad, "the core passed a bad handle or size"


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )


def _cuda_usable() -> bool:
    return any(d.name == "cuda" and d.available for d in st.devices())


# --- pinned memory ------------------------------------------------------------------------------------


def test_pinned_factories_pin_through_the_plugin_and_give_it_back():
    before = hostdev.pinned_stats()
    t = st.empty((4, 5), dtype=st.float64, pin_memory=True, device="cpu")
    assert t.is_pinned() and t.device.type == "cpu" and t.is_contiguous()
    if not _cuda_usable():  # hostdev is then the first available plugin that pins
        assert hostdev.pinned_stats()["bytes"] == before["bytes"] + 160
        assert t.is_pinned("hostdev")
    for made, value in (
        (st.zeros((3,), pin_memory=True), 0.0),
        (st.ones((3,), pin_memory=True), 1.0),
        (st.full((3,), 2.5, pin_memory=True), 2.5),
    ):
        assert made.is_pinned() and made.tolist() == [value] * 3
    s = st.empty_strided((2, 3), (1, 2), pin_memory=True)
    assert s.is_pinned() and s.stride() == (1, 2)
    assert not st.empty((4, 5)).is_pinned()
    del t, made, s
    gc.collect()
    assert hostdev.pinned_stats() == before


def test_pin_memory_copies_once_and_keeps_values_and_layout():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    src = st.from_numpy(a).permute(
        2, 0, 1
    )  # dense, not contiguous: pin_memory keeps the strides (empty_like)
    before = hostdev.pinned_stats()
    p = src.pin_memory(device="hostdev")
    assert hostdev.pinned_stats()["blocks"] == before["blocks"] + 1
    assert p.is_pinned("hostdev") and p.stride() == src.stride() and p.data_ptr() != src.data_ptr()
    np.testing.assert_array_equal(p.numpy(), a.transpose(2, 0, 1))
    assert p.pin_memory(device="hostdev") is p  # pinned already: the tensor itself
    assert p[1:, 0].is_pinned()  # a view of pinned memory is pinned
    # Host memory pinned by someone else: the plugin's host_is_pinned answers.
    other = st.from_blob(p.data_ptr() + 8, (2,), dtype=st.float32, owner=p)
    assert other.is_pinned() and other.is_pinned("hostdev")
    assert not st.from_numpy(a).is_pinned()
    del p, other
    gc.collect()
    assert hostdev.pinned_stats() == before


def test_empty_pinned_tensor_pins_nothing():
    before = hostdev.pinned_stats()
    t = st.empty((0, 3), pin_memory=True)
    assert t.is_pinned() and t.numel() == 0 and hostdev.pinned_stats() == before


def test_pinning_errors_say_what_to_do():
    with pytest.raises(ValueError, match=r"pin_memory=True makes pinned host memory.*hostdev"):
        st.empty((2,), device="hostdev", pin_memory=True)
    d = st.ones((2,), device="hostdev:0")
    with pytest.raises(ValueError, match=r"pin_memory\(\): the tensor is on hostdev:0; only CPU tensors"):
        d.pin_memory()
    assert not d.is_pinned()
    hostdev.register_abi10()  # an ABI 1.0 plugin: no host_allocate
    with pytest.raises(RuntimeError, match=r"hostdev_abi10' cannot pin host memory"):
        st.ones((2,)).pin_memory(device=hostdev.ABI10_DEVICE_NAME)
    del d


def test_no_plugin_that_pins_is_a_clear_error():
    res = _run(
        "import slimtensor as st\n"
        "try:\n    st.empty(2, pin_memory=True)\nexcept RuntimeError as e:\n    print(e)\n",
        SLIMTENSOR_DEVICE_AUTOLOAD="0",
    )
    assert res.returncode == 0, res.stderr
    assert "pinned memory needs an available device plugin" in res.stdout and "pin_memory=False" in res.stdout


# --- record_stream ------------------------------------------------------------------------------------


def test_record_stream_reaches_the_plugin_and_orders_the_free():
    s = hostdev.stream_create(1)
    t = st.zeros((1024,), device="hostdev:1")
    before = hostdev.counters(1)
    with hostdev.stream(1, s):
        hostdev.stream_stall(s, 100_000)
        t.fill_(3.0)  # queued on s, which stalls
    t.record_stream(hostdev.stream_to_dlpack(1, s))
    del t  # frees on the allocation stream; the plugin must wait for s
    gc.collect()
    hostdev.synchronize(1)
    after = hostdev.counters(1)
    assert after["record_streams"] == before["record_streams"] + 1
    assert after["unordered_frees"] == before["unordered_frees"]


def test_record_stream_does_nothing_for_borrowed_memory():
    token = hostdev.raw_allocate(0, 256)
    try:
        b = st.from_blob(token, (64,), dtype=st.float32, device="hostdev:0")
        before = hostdev.counters(0)["record_streams"]
        b.record_stream(hostdev.stream_to_dlpack(0, hostdev.stream_create(0)))
        assert hostdev.counters(0)["record_streams"] == before  # not the allocator's memory (as torch)
        del b
        gc.collect()
    finally:
        hostdev.raw_free(0, token, 256)


def test_record_stream_errors_say_what_is_accepted():
    t = st.zeros((4,), device="hostdev:0")
    with pytest.raises(
        ValueError, match=r"record_stream\(\): stream 7 is not a DLPack stream number of hostdev:0"
    ):
        t.record_stream(7)
    with pytest.raises(ValueError, match="names no stream"):
        t.record_stream(0)
    with pytest.raises(TypeError, match="stream_handle"):
        t.record_stream(object())
    with pytest.raises(TypeError, match="not bool"):
        t.record_stream(True)
    with pytest.raises(ValueError, match="the tensor is on the CPU, which has no streams"):
        st.zeros((4,)).record_stream(1)
    hostdev.register_abi10()
    with pytest.raises(TypeError, match="defines no DLPack stream numbers"):
        st.zeros((4,), device=hostdev.ABI10_DEVICE_NAME).record_stream(1)
    del t


# --- from_blob's pointer check, out of memory -----------------------------------------------------------


def test_from_blob_checks_the_pointer_with_the_plugin():
    token = hostdev.raw_allocate(1, 128)
    try:
        t = st.from_blob(token, (32,), dtype=st.float32, device="hostdev")  # "hostdev": the memory's index
        assert str(t.device) == "hostdev:1"
        with pytest.raises(
            ValueError, match=r"is memory of hostdev:1, not hostdev:0; pass device='hostdev:1'"
        ):
            st.from_blob(token, (32,), dtype=st.float32, device="hostdev:0")
        host = np.zeros(4, dtype=np.float32)
        with pytest.raises(ValueError, match=r"is not memory of hostdev:0 .*device='cpu' for host memory"):
            st.from_blob(host.ctypes.data, (4,), dtype=st.float32, device="hostdev:0")
        del t
        gc.collect()
    finally:
        hostdev.raw_free(1, token, 128)


def test_out_of_memory_is_a_memory_error_naming_the_size():
    before = hostdev.counters(0)["failed_allocations"]
    with pytest.raises(
        MemoryError, match=r"empty\(\): hostdev:0 could not allocate 8589934592 bytes: .*out of memory"
    ):
        st.empty((1 << 31,), dtype=st.float32, device="hostdev:0")
    assert hostdev.counters(0)["failed_allocations"] == before + 1
    assert st.ones((3,), device="hostdev:0").tolist() == [1.0, 1.0, 1.0]  # still usable


# --- __cuda_array_interface__, st.cuda ------------------------------------------------------------------


def test_cuda_array_interface_exists_only_on_cuda_tensors():
    for t in (st.zeros((2,)), st.zeros((2,), device="hostdev:0")):
        assert not hasattr(t, "__cuda_array_interface__")
        with pytest.raises(AttributeError, match=r"only CUDA tensors have one; use __dlpack__"):
            t.__cuda_array_interface__  # noqa: B018


class _Producer:
    def __init__(self, **cai):
        base = {
            "version": 3,
            "shape": (4,),
            "typestr": "<f4",
            "data": (0x7F0000000000, False),
            "strides": None,
            "stream": 1,
        }
        self.__cuda_array_interface__ = {**base, **cai}


@pytest.mark.parametrize("cai,error,match", [
    ({"version": 1}, ValueError, "version 1 is not supported"),
    ({"mask": object()}, ValueError, "masked arrays"),
    ({"typestr": "<V2"}, TypeError, "typestr '<V2' has no slimtensor dtype"),
    ({"strides": (6,)}, ValueError, "multiples of the itemsize 4"),
    ({"stream": 0}, ValueError, "stream 0 is disallowed"),
])  # fmt: skip
def test_cuda_array_interface_import_rejects_bad_descriptions(cai, error, match):
    with pytest.raises(error, match=match):
        st.asarray(_Producer(**cai))


def test_cuda_array_interface_import_without_a_usable_cuda_says_why():
    if _cuda_usable():
        pytest.skip("a CUDA device is usable here (tests/cuda/test_gpu.py covers the import)")
    with pytest.raises(RuntimeError, match="cuda"):
        st.asarray(_Producer())


def test_st_cuda_is_a_lazy_alias_of_the_plugin():
    res = _run(
        "import sys, slimtensor as st\n"
        "assert 'slimtensor_cuda' not in sys.modules, 'import slimtensor imported the CUDA plugin'\n"
        "try:\n    import slimtensor_cuda\nexcept ImportError:\n    print('absent'); raise SystemExit\n"
        "assert st.cuda is slimtensor_cuda and hasattr(st, 'cuda')\nprint('alias')\n"
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() in ("alias", "absent")
    # Not installed (simulated by blocking the import): AttributeError saying what to install.
    res = _run(
        "import sys; sys.modules['slimtensor_cuda'] = None\n"
        "import slimtensor as st\nassert not hasattr(st, 'cuda')\n"
        "try:\n    st.cuda\nexcept AttributeError as e:\n    print(e)\n"
    )
    assert res.returncode == 0, res.stderr
    assert "pip install slimtensor-cuda" in res.stdout

"""slimtensor._C's AOTI functions: tensors -> handles sharing the storage, handles -> tensors (stealing), with no
DLPack round trip (Note [AOTI calls from Python] in src/python/aoti_bridge.cpp)."""

from __future__ import annotations

import ctypes
import gc

import pytest
import slimtensor as st
from slimtensor.aoti import _lib


def test_new_handle_shares_the_storage_and_steal_gives_it_back():
    before = _lib.live_handles()
    t = st.arange(12, dtype=st.float32).reshape(3, 4)[1:, ::2]
    h = st._C._aoti_new_handle(t)
    assert _lib.live_handles() == before + 1
    u = st._C._aoti_steal_handle(h)
    assert _lib.live_handles() == before
    assert u.storage().id == t.storage().id  # the same storage, not a borrowed wrapper
    assert (u.shape, u.stride(), u.storage_offset()) == (t.shape, t.stride(), t.storage_offset())
    assert u.tolist() == t.tolist()


def test_steal_refuses_a_dead_handle():
    h = st._C._aoti_new_handle(st.zeros(2))
    st._C._aoti_steal_handle(h)
    if _lib.lib().slimtensor_aoti_debug_handles():
        with pytest.raises(ValueError, match="not a live slimtensor handle"):
            st._C._aoti_steal_handle(h)
    with pytest.raises(ValueError, match="NULL"):
        st._C._aoti_steal_handle(0)


def test_handles_hold_their_storage():
    live = st.memory_stats("cpu")["live_storages"]
    h = st._C._aoti_new_handle(st.zeros(1000))
    gc.collect()
    assert st.memory_stats("cpu")["live_storages"] == live + 1
    assert _lib.lib().aoti_torch_delete_tensor_object(h) == 0
    assert st.memory_stats("cpu")["live_storages"] == live


def test_handles_of_a_plugin_device():
    devices = {d.name: d for d in st.devices()}
    if "hostdev" not in devices or not devices["hostdev"].available:
        pytest.skip("the hostdev test plugin is not installed")
    t = st.arange(6, dtype=st.float32).to("hostdev")
    h = st._C._aoti_new_handle(t)
    u = st._C._aoti_steal_handle(h)
    assert str(u.device) == str(t.device) and u.storage().id == t.storage().id
    assert u.cpu().tolist() == [0, 1, 2, 3, 4, 5]


def test_run_rejects_what_is_not_a_tensor():
    with pytest.raises(TypeError, match="input 1 is a list"):
        st._C._aoti_run(1, 1, [st.zeros(1), [1]], 1, 0)


# ---- _aoti_graph_replay (Note [Graph replay from Python]) -------------------------------------------------
# The plugin side is a C function; here it is a ctypes callback that records what it was given, so that the
# core's checks are tested on the CPU (the CUDA plugin's real replay function: tests/cuda/aoti/test_capture.py).
_REPLAY_FN = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p
)


def _recording_replay(rc: int = 0):
    calls = []

    def replay(graph, stream, n, srcs):
        ptrs = ctypes.cast(srcs, ctypes.POINTER(ctypes.c_void_p))
        calls.append((graph, stream, [ptrs[i] or 0 for i in range(n)]))
        return rc

    fn = _REPLAY_FN(replay)
    return fn, ctypes.cast(fn, ctypes.c_void_p).value, calls


def test_graph_replay_passes_dense_matching_sources():
    fn, address, calls = _recording_replay(rc=0)
    static = (st.zeros((2, 3)), st.zeros(4, dtype=st.int64), st.zeros(0))
    srcs = (st.ones((2, 3)), st.arange(4), st.zeros(0))
    assert st._C._aoti_graph_replay(address, 0x1234, 0x5678, srcs, static) == 0
    assert calls == [(0x1234, 0x5678, [srcs[0].data_ptr(), srcs[1].data_ptr(), 0])]
    # the static inputs themselves are sources too (the plugin copies nothing for them)
    assert st._C._aoti_graph_replay(address, 1, 2, static, static) == 0
    assert calls[1][2][:2] == [static[0].data_ptr(), static[1].data_ptr()]
    # the plugin's return code comes back as it is
    fn7, address7, _ = _recording_replay(rc=7)
    assert st._C._aoti_graph_replay(address7, 1, 2, srcs, static) == 7
    del fn, fn7


@pytest.mark.parametrize(
    "why",
    ["dtype", "shape", "rank", "strided", "count", "numpy", "list", "device"],
)
def test_graph_replay_refuses_what_does_not_match_without_calling(why):
    """-1 and no call: the caller's checked path then converts the input or says what is wrong."""
    import numpy as np

    fn, address, calls = _recording_replay()
    static = (st.zeros((2, 3)), st.zeros(3))
    good = [st.ones((2, 3)), st.ones(3)]
    bad = {
        "dtype": [st.ones((2, 3), dtype=st.float64), good[1]],
        "shape": [st.ones((3, 2)), good[1]],
        "rank": [st.ones(6), good[1]],
        "strided": [st.ones((2, 6))[:, ::2], good[1]],
        "count": [good[0]],
        "numpy": [np.ones((2, 3), np.float32), good[1]],
        "list": [[1.0] * 6, good[1]],
    }
    if why == "device":
        devices = {d.name: d for d in st.devices()}
        if "hostdev" not in devices or not devices["hostdev"].available:
            pytest.skip("the hostdev test plugin is not installed (an input on another device)")
        bad["device"] = [st.ones((2, 3)).to("hostdev"), good[1]]
    assert st._C._aoti_graph_replay(address, 1, 2, tuple(bad[why]), static) == -1
    assert calls == []
    with pytest.raises(ValueError, match="NULL"):
        st._C._aoti_graph_replay(0, 1, 2, tuple(good), static)
    del fn

"""slimtensor._C's AOTI functions: tensors -> handles sharing the storage, handles -> tensors (stealing), with no
DLPack round trip (Note [AOTI calls from Python] in src/python/aoti_bridge.cpp)."""

from __future__ import annotations

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

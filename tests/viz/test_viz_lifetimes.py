"""st.viz.lifetimes: one bar per storage, one per tensor, arrows for copies, lanes per device."""

from __future__ import annotations

import gc

import pytest
import slimtensor as st
from slimtensor.trace import Trace

from ._figures import axes, patches

pytest.importorskip("matplotlib", reason="slimtensor.viz draws with matplotlib")


def test_a_traced_program_draws_a_bar_per_storage_and_tensor():
    with st.trace() as tr:
        a = st.empty((4, 6), dtype=st.float32)
        a_storage = a.storage().id
        b = a.permute(1, 0)
        c = b.contiguous()
        del a, b
        gc.collect()
        d = st.zeros((3,), dtype=st.float32)
    fig = st.viz.lifetimes(tr)
    ax = axes(fig, "lifetimes")
    allocated = {e.id for e in tr.events if e.kind == "storage_alloc"}
    freed = {e.id for e in tr.events if e.kind == "storage_free"}
    # the core may use temporaries (zeros fills from a scalar); a's, c's and d's storages are there
    assert {a_storage, c.storage().id, d.storage().id} <= allocated
    assert a_storage in freed and not {c.storage().id, d.storage().id} & freed
    assert len(patches(ax, "storage-bar")) == len(allocated)
    assert len(patches(ax, "tensor-bar")) == len({e.id for e in tr.events if e.kind == "tensor_create"})
    assert len(patches(ax, "copy-arrow")) == 1
    # c and d outlive the trace: their bars end open (hatched)
    assert len(patches(ax, "storage-open-end")) == len(allocated - freed) == 2
    assert [t.get_text() for t in ax.get_yticklabels()] == ["cpu"]
    del c, d


def test_one_lane_per_device_from_saved_records():
    records = [
        {"kind": "storage_alloc", "time_ns": 10, "id": 1, "bytes": 64, "device": "cpu", "owning": True},
        {"kind": "storage_alloc", "time_ns": 20, "id": 2, "bytes": 64, "device": "cuda:0", "owning": True},
        {
            "kind": "copy",
            "time_ns": 30,
            "storage_id": 2,
            "src_storage_id": 1,
            "bytes": 64,
            "device": "cuda:0",
            "src_device": "cpu",
            "dtype": "float32",
            "src_dtype": "float32",
        },
        {"kind": "storage_free", "time_ns": 40, "id": 1, "bytes": 64, "device": "cpu"},
    ]
    fig = st.viz.lifetimes(Trace.from_records(records))
    ax = axes(fig, "lifetimes")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["cpu", "cuda:0"]
    assert len(patches(ax, "storage-bar")) == 2
    assert len(patches(ax, "copy-arrow")) == 1


def test_max_storages_limits_the_rows_and_says_so():
    records = [
        {"kind": "storage_alloc", "time_ns": i, "id": i + 1, "bytes": 4, "device": "cpu", "owning": True}
        for i in range(10)
    ]
    fig = st.viz.lifetimes(Trace.from_records(records), max_storages=4)
    ax = axes(fig, "lifetimes")
    assert len(patches(ax, "storage-bar")) == 4
    assert "6 storages not drawn" in ax.get_title(loc="left")


def test_lifetimes_argument_errors():
    with pytest.raises(TypeError, match=r"lifetimes\(\): expected a finished slimtensor Trace"):
        st.viz.lifetimes([])
    tr = st.trace()
    with tr, pytest.raises(RuntimeError, match="still recording"):
        st.viz.lifetimes(tr)
    with pytest.raises(ValueError, match=r"lifetimes\(\): max_storages must be a positive int, got 0"):
        st.viz.lifetimes(Trace.from_records([]), max_storages=0)

"""st.trace: the event sequences of known programs, summaries, nesting, threads and misuse."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
import slimtensor as st
from slimtensor.trace import EVENT_KINDS, Event, Trace

# The core's own events; a device plugin adds device_event ones of its allocator (cache hits, cudaMalloc).
CORE_KINDS = tuple(k for k in EVENT_KINDS if k != "device_event")


def kinds(tr, *, of=CORE_KINDS) -> list[str]:
    return [e.kind for e in tr.events if e.kind in of]


def core_events(tr) -> list[Event]:
    return [e for e in tr.events if e.kind in CORE_KINDS]


def test_empty_then_delete_allocates_creates_destroys_frees(device):
    with st.trace() as tr:
        t = st.empty((2, 3), dtype=st.float32, device=device)
        sid, where = t.storage().id, str(t.device)
        del t
        gc.collect()
    assert kinds(tr) == ["storage_alloc", "tensor_create", "tensor_destroy", "storage_free"]
    alloc, create, destroy, free = core_events(tr)
    assert (alloc.id, alloc.bytes, alloc.device, alloc.owning) == (sid, 24, where, True)
    assert (create.storage_id, create.sizes, create.strides, create.offset) == (sid, (2, 3), (3, 1), 0)
    assert create.op == "empty" and create.dtype == "float32"
    assert create.id != 0 and destroy.id == create.id
    assert free.id == sid and free.bytes == 24
    times = [e.time_ns for e in tr.events]
    assert times == sorted(times)


def test_a_view_keeps_its_storage_alive_until_the_view_dies(device):
    with st.trace() as tr:
        t = st.empty((4, 6), dtype=st.float32, device=device)
        v = t.permute(1, 0)
        with st.trace() as while_view_alive:
            del t
            gc.collect()
        del v
        gc.collect()
    assert kinds(tr) == [
        "storage_alloc",
        "tensor_create",
        "tensor_create",
        "tensor_destroy",
        "tensor_destroy",
        "storage_free",
    ]
    alloc, made, viewed, gone1, gone2, free = core_events(tr)
    assert (made.op, viewed.op) == ("empty", "permute")
    assert [gone1.id, gone2.id] == [made.id, viewed.id]  # t dies first, then v, then the storage
    assert kinds(while_view_alive) == ["tensor_destroy"]
    assert free.id == alloc.id
    permute = viewed
    assert (permute.sizes, permute.strides) == ((6, 4), (1, 6))
    assert permute.storage_id == alloc.id


def test_contiguous_of_a_transpose_copies_into_a_new_storage(device):
    t = st.arange(6, dtype=st.float32, device=device).reshape(2, 3)
    src, where = t.storage().id, str(t.device)
    with st.trace() as tr:
        c = t.T.contiguous()
    dst = c.storage().id
    copies = [e for e in tr.events if e.kind == "copy"]
    assert len(copies) == 1
    assert (copies[0].src_storage_id, copies[0].storage_id, copies[0].bytes) == (src, dst, 24)
    assert (copies[0].src_dtype, copies[0].dtype, copies[0].src_device, copies[0].device) == (
        "float32",
        "float32",
        where,
        where,
    )
    allocs = [e for e in tr.events if e.kind == "storage_alloc"]
    assert [a.id for a in allocs] == [dst]
    assert tr.summary().alive == [(dst, 24, where)]


def trace_from_numpy():
    a = np.zeros((3, 4), dtype=np.float32)
    with st.trace() as tr:
        t = st.from_numpy(a)
        sid = t.storage().id
        view = t[1:]
        del t
        gc.collect()
        del view
        gc.collect()
    return tr, sid


def test_borrowed_numpy_memory_is_freed_with_the_last_tensor():
    tr, sid = trace_from_numpy()
    allocs = [e for e in tr.events if e.kind == "storage_alloc"]
    assert len(allocs) == 1 and allocs[0].id == sid
    assert allocs[0].owning is False and allocs[0].bytes == 48
    assert kinds(tr, of=("storage_alloc", "storage_free")) == ["storage_alloc", "storage_free"]
    free_at = next(i for i, e in enumerate(tr.events) if e.kind == "storage_free")
    last_destroy = max(i for i, e in enumerate(tr.events) if e.kind == "tensor_destroy")
    assert free_at > last_destroy  # released only after the view, the last tensor on it, is gone


def test_borrowed_memory_names_its_owner():
    tr, _ = trace_from_numpy()
    alloc = next(e for e in tr.events if e.kind == "storage_alloc")
    assert alloc.op == "ndarray"
    assert "borrowed from ndarray" in alloc.describe()


def test_summary_counts_and_peak(device):
    with st.trace() as tr:
        a = st.empty((256,), dtype=st.float32, device=device)  # 1 KiB
        b = st.empty((512,), dtype=st.float32, device=device)  # 2 KiB, live together with a: peak 3 KiB
        del a, b
        gc.collect()
        c = st.empty((128,), dtype=st.float32, device=device)  # 512 B, alive at the end
    s = tr.summary()
    where = str(c.device)
    assert (s.allocations, s.frees) == (3, 2)
    assert s.bytes_allocated == 1024 + 2048 + 512 and s.bytes_freed == 1024 + 2048
    assert s.peak_bytes == {where: 3072}
    assert s.alive == [(c.storage().id, 512, where)]
    assert s.tensors_created == 3 and s.tensors_destroyed == 2
    text = str(s)
    assert "3 allocated" in text and "peak live bytes" in text and f"#{c.storage().id}" in text


def test_nested_traces_each_see_their_own_slice():
    with st.trace() as outer:
        a = st.empty((2,), dtype=st.float32)
        with st.trace() as inner:
            b = st.empty((3,), dtype=st.float32)
        c = st.empty((4,), dtype=st.float32)
    outer_allocs = [e.bytes for e in outer.events if e.kind == "storage_alloc"]
    inner_allocs = [e.bytes for e in inner.events if e.kind == "storage_alloc"]
    assert outer_allocs == [8, 12, 16]
    assert inner_allocs == [12]
    del a, b, c


def test_events_from_other_threads_are_recorded():
    def work(n: int, out: list) -> None:
        out.append(st.empty((n,), dtype=st.float32).storage().id)

    ids: list[int] = []
    with st.trace() as tr:
        threads = [threading.Thread(target=work, args=(n + 1, ids)) for n in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        gc.collect()
    allocated = {e.id for e in tr.events if e.kind == "storage_alloc"}
    freed = {e.id for e in tr.events if e.kind == "storage_free"}
    assert set(ids) <= allocated and set(ids) <= freed


def test_no_events_outside_a_trace():
    with st.trace() as tr:
        pass
    t = st.empty((2,))
    del t
    assert tr.events == []
    assert tr.summary().allocations == 0


def test_misuse_is_explained():
    tr = st.trace()
    with pytest.raises(RuntimeError, match="not started"):
        _ = tr.events
    with tr:
        with pytest.raises(RuntimeError, match="still recording"):
            _ = tr.events
    with pytest.raises(RuntimeError, match="records once"):
        with tr:
            pass
    with pytest.raises(ValueError, match=r"Event.from_record\(\): kind must be one of"):
        Event.from_record({"kind": "nope", "time_ns": 1})
    with pytest.raises(TypeError, match=r"Trace.from_records\(\): expected an iterable of event dicts"):
        Trace.from_records("storage_alloc")


def test_records_round_trip_and_dataframe():
    with st.trace() as tr:
        t = st.ones((2, 2))
        del t
        gc.collect()
    again = Trace.from_records(tr.to_records(), start_ns=tr.start_ns, stop_ns=tr.stop_ns)
    assert again.events == tr.events
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"to_dataframe\(\) needs pandas.*pip install pandas"):
            tr.to_dataframe()
    else:
        df = tr.to_dataframe()
        assert list(df["kind"]) == tr.kinds() and "t_us" in df.columns

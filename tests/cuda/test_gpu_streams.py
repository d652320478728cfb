"""Stream-ordered memory and events on a real GPU: a block freed on one stream is not handed to another
stream before the work queued on it has finished (with and without record_stream), and events order
streams and time them."""

from __future__ import annotations

import gc

import pytest

from ._busy import keep_busy

pytestmark = pytest.mark.needs_cuda
st = pytest.importorskip("slimtensor")

N = 1 << 20  # elements of the tensor whose block is watched (4 MiB: the large pool)


@pytest.fixture(autouse=True)
def _registered(stc):
    stc.register()
    stc.empty_cache()  # no cached block of earlier tests (on a recycled stream) competes with the watched one
    yield
    gc.collect()
    stc.synchronize()


def test_a_block_freed_on_a_busy_stream_is_not_given_to_another_stream(stc) -> None:
    s1, s2 = stc.Stream(), stc.Stream()
    busy = keep_busy(s1)
    with stc.stream(s1):
        x = st.empty(N, dtype=st.float32, device="cuda")
        x.copy_(busy[:N])  # queued behind the fills
    p = x.data_ptr()
    del x  # freed on its own stream (no record_stream): reusable on s1 at once, on s2 not before s1 is done
    assert not s1.query(), "s1 finished too early for this test to mean anything"
    with stc.stream(s2):
        y = st.empty(N, dtype=st.float32, device="cuda")
    assert y.data_ptr() != p
    with stc.stream(s1):
        z = st.empty(N, dtype=st.float32, device="cuda")  # the same stream: its next work runs after the free
    assert z.data_ptr() == p
    del y, z, busy


def test_record_stream_keeps_a_block_from_its_own_stream_until_the_other_is_done(stc) -> None:
    s1, s2 = stc.Stream(), stc.Stream()
    with stc.stream(s1):
        x = st.empty(N, dtype=st.float32, device="cuda")
    p = x.data_ptr()
    busy = keep_busy(s2)
    with stc.stream(s2):
        x.copy_(busy[:N])  # s2 uses x, behind its fills
    x.record_stream(s2)
    before = stc.memory_stats()["pending_free_blocks"]
    del x  # freed on s1; s2 may still write it
    assert not s2.query(), "s2 finished too early for this test to mean anything"
    assert stc.memory_stats()["pending_free_blocks"] == before + 1
    with stc.stream(s1):
        y = st.empty(N, dtype=st.float32, device="cuda")
    assert y.data_ptr() != p  # not handed back while s2's work may still run
    s2.synchronize()
    with stc.stream(s1):
        z = st.empty(N, dtype=st.float32, device="cuda")  # s2 is done: the block is free again
    assert z.data_ptr() == p and stc.memory_stats()["pending_free_blocks"] == before
    del y, z, busy


def test_without_record_stream_the_block_is_reused_on_its_stream_as_torch_does(stc) -> None:
    # The documented hazard record_stream exists for: the allocator knows only the allocation stream.
    s1, s2 = stc.Stream(), stc.Stream()
    with stc.stream(s1):
        x = st.empty(N, dtype=st.float32, device="cuda")
    p = x.data_ptr()
    busy = keep_busy(s2)
    with stc.stream(s2):
        x.copy_(busy[:N])
    del x
    with stc.stream(s1):
        y = st.empty(N, dtype=st.float32, device="cuda")
    assert y.data_ptr() == p
    s2.synchronize()
    del y, busy


def test_an_event_orders_a_second_stream_after_the_first(stc) -> None:
    s1, s2 = stc.Stream(), stc.Stream()
    busy = keep_busy(s1, value=7.0)
    done = stc.Event()
    done.record(s1)
    assert not done.query()  # the fills are still queued
    s2.wait_event(done)
    with stc.stream(s2):
        head = busy[:4].clone()  # runs after s1's last fill
    s2.synchronize()
    assert done.query() and head.tolist() == [7.0] * 4
    del busy, head


def test_events_time_the_work_between_them(stc) -> None:
    s = stc.Stream()
    start, end = stc.Event(enable_timing=True), stc.Event(enable_timing=True)
    start.record(s)
    busy = keep_busy(s, fills=50)
    end.record(s)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert 0.0 < ms < 10_000.0
    with pytest.raises(ValueError, match="enable_timing"):
        stc.Event().elapsed_time(end)
    del busy


def test_the_current_stream_is_per_thread_and_per_device(stc) -> None:
    import threading

    s = stc.Stream()
    seen = {}

    def other_thread() -> None:
        seen["other"] = stc.current_stream()
        with stc.stream(stc.Stream()) as mine:
            seen["inside"] = (stc.current_stream(), mine)

    with stc.stream(s):
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert stc.current_stream() == s  # the other thread's stream did not leak into this one
    assert seen["other"] == stc.default_stream()  # a new thread starts on the default stream
    assert seen["inside"][0] == seen["inside"][1] != s
    assert stc.current_stream() == stc.default_stream()

"""The Python side of plugin ABI 1.1 that needs no plugin: st.synchronize, st.current_device, st.set_device,
copy_/to(non_blocking=...), the new memory_stats fields, and device events in traces."""

from __future__ import annotations

import numpy as np
import pytest
import slimtensor as st
from slimtensor.trace import EVENT_KINDS, Event


def test_synchronize_is_a_noop_for_the_cpu_and_accepts_none() -> None:
    st.synchronize()
    st.synchronize("cpu")
    st.synchronize(st.Device("cpu"))


def test_current_device_of_the_cpu_is_0_and_set_device_checks_the_index() -> None:
    assert st.current_device("cpu") == 0
    st.set_device("cpu")
    with pytest.raises(ValueError, match="only index 0"):
        st.set_device("cpu:1")


def test_unknown_device_types_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown device type"):
        st.current_device("nosuchdevice")
    with pytest.raises(ValueError, match="unknown device type"):
        st.synchronize("nosuchdevice")


def test_copy_and_to_take_non_blocking() -> None:
    a = st.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = st.empty((2, 3))
    assert b.copy_(a, non_blocking=True) is b
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert a.to("cpu", non_blocking=True) is a
    c = a.to(dtype=st.float64, non_blocking=True)
    np.testing.assert_array_equal(c.numpy(), a.numpy())


def test_memory_stats_report_plugin_bytes() -> None:
    stats = st.memory_stats("cpu")
    assert stats["plugin_bytes"] == 0 and stats["plugin_peak_bytes"] == 0
    assert "allocator" not in stats  # the CPU has no plugin allocator
    assert all("plugin_bytes" in s for s in st.memory_stats().values())


def test_device_events_are_a_trace_event_kind() -> None:
    assert "device_event" in EVENT_KINDS
    e = Event.from_record(
        {
            "kind": "device_event",
            "time_ns": 5,
            "bytes": -64,
            "device": "cuda:0",
            "op": "device_memory",
            "stream": 0x10,
        }
    )
    assert e.stream == 0x10 and "device_memory -64 B cuda:0 stream 0x10" in e.describe()


def test_zero_fill_of_a_non_contiguous_float8_tensor() -> None:
    # Regression (issue 9): the zero pattern took float8's dtype only after the scalar was made, so copy_
    # refused the int64 -> float8 conversion for any layout the memset path does not take.
    t = st.empty((4, 6), dtype=st.float8_e4m3fn).view(st.uint8).fill_(7).view(st.float8_e4m3fn)
    t.T.fill_(0)
    assert (t.view(st.uint8).numpy() == 0).all()
    t.view(st.uint8).fill_(7)
    t[:, ::2].zero_()
    u = t.view(st.uint8).numpy()
    assert (u[:, ::2] == 0).all() and (u[:, 1::2] == 7).all()


def test_data_ptr_of_cpu_tensors_is_unchanged() -> None:
    t = st.empty((4, 6), dtype=st.float64)
    assert t[2].data_ptr() == t.data_ptr() + 2 * 6 * 8
    assert t.storage().data_ptr == t.data_ptr()

"""Plugin ABI 1.1 streams, events and opaque handles, through the hostdev test plugin.

hostdev's streams run their work later, on worker threads, after a delay (Note [hostdev streams] in
tests/plugins/slimtensor-hostdev/src/hostdev_streams.c), and its memory handles are tokens that cannot be
dereferenced (Note [hostdev tokens]). The first part drives the plugin's own table directly (its raw_*
functions) to show that the delays bite: a missing event wait *does* read stale data. The second part runs
the core over it: every result must be right under the delays, with no handle the plugin refuses.
"""

from __future__ import annotations

import ctypes
import gc
import os
import shutil
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import slimtensor as st
from slimtensor import _plugins

hostdev = pytest.importorskip(
    "slimtensor_hostdev",
    reason="the test plugin slimtensor-hostdev is not installed (make build-test puts it in .venv-test)",
)

INDICES = [0, 1]
TOKEN_TAG = 0xDEAD << 48
STALL_US = 150_000  # long against hostdev's per-operation delay (a few hundred microseconds)
# Counters that tests here move on purpose (the fixture checks everything else stays put).
EXPECTED = Counter()


def _counters():
    return [hostdev.counters(i) for i in INDICES]


def _sync_all():
    for i in INDICES:
        hostdev.synchronize(i)


@pytest.fixture(scope="module", autouse=True)
def _hostdev_baseline():
    _plugins.load_plugins()
    record = [r for r in _plugins.plugin_records() if r.name == "hostdev"]
    assert record and record[0].loaded, f"hostdev did not load: {record}"
    gc.collect()
    _sync_all()
    before = _counters()
    core_before = [st.memory_stats(f"hostdev:{i}")["live_bytes"] for i in INDICES]
    yield
    gc.collect()
    _sync_all()
    after = _counters()
    assert [st.memory_stats(f"hostdev:{i}")["live_bytes"] for i in INDICES] == core_before
    for b, a in zip(before, after, strict=True):
        for key in ("live_bytes", "live_tokens", "pending_frees"):
            assert a[key] == b[key], f"{key}: {b[key]} -> {a[key]}"
        assert a["bad_handles"] == b["bad_handles"], "the core passed handles that are not live tokens"
        assert a["stream_errors"] == b["stream_errors"]
    unordered = sum(a["unordered_frees"] - b["unordered_frees"] for b, a in zip(before, after, strict=True))
    assert unordered == EXPECTED["unordered_frees"], "memory was freed while another stream still used it"


@pytest.fixture
def streams():
    """Two fresh streams of hostdev:0, the current stream left as it was."""
    current = hostdev.current_stream(0)
    yield hostdev.stream_create(0), hostdev.stream_create(0)
    hostdev.set_current_stream(0, current)
    _sync_all()


def _raw_bad():
    return sum(c["bad_handles_raw"] for c in _counters())


def _bad_raw_delta(before):
    return _raw_bad() - before


# --- the plugin itself: tokens ----------------------------------------------------------------------


def test_handles_are_tokens_and_offsets_travel_separately():
    token = hostdev.raw_allocate(0, 1024)
    try:
        assert token & (0xFFFF << 48) == TOKEN_TAG and token & 0xFFF == 0
        data = bytes(range(256)) * 4
        hostdev.raw_write(0, token, 0, data)
        assert hostdev.raw_read(0, token, 16, 32) == data[16:48]  # the offset in st_memory_ref.byte_offset
        assert hostdev.locate_pointer(token) == 0
        before, core_bad = _raw_bad(), hostdev.counters(0)["bad_handles"]
        with pytest.raises(RuntimeError, match=r"copy_to_host\(\).*plus 0x10 bytes.*byte_offset"):
            hostdev.raw_read(0, token + 16, 0, 16)  # token + offset: what a core must never produce
        with pytest.raises(RuntimeError, match=r"copy_from_host\(\).*outside the allocation"):
            hostdev.raw_write(0, token, 1000, b"x" * 100)
        with pytest.raises(RuntimeError, match=r"copy_to_host\(\).*memory of hostdev:0.*device_index says 1"):
            hostdev.raw_read(1, token, 0, 4)
        with pytest.raises(RuntimeError, match=r"fill_v2\(\).*not a hostdev allocation token"):
            hostdev.raw_fill(0, 0x7F0000001000, 0, 4, b"\0\0\0\0")
        with pytest.raises(ValueError, match="not hostdev memory"):
            hostdev.locate_pointer(token + 8)
        assert _bad_raw_delta(before) == 4  # locate_pointer is a question, not a bad handle
        assert hostdev.counters(0)["bad_handles"] == core_bad
    finally:
        hostdev.raw_free(0, token, 1024)
    before = _raw_bad()
    with pytest.raises(RuntimeError, match=r"freed already|stale"):
        hostdev.raw_read(0, token, 0, 4)
    hostdev.raw_free(0, token, 1024)  # a double free is refused (free_v2 cannot fail) and counted
    assert _bad_raw_delta(before) == 2


def test_a_token_cannot_be_dereferenced():
    # A token is a non-canonical address: reading it faults. In a child process, so this one survives.
    code = (
        "import ctypes, slimtensor as st, slimtensor_hostdev as h; st.load_plugins(); "
        "t = h.raw_allocate(0, 64); print(hex(t), flush=True); ctypes.string_at(t, 8)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and proc.stdout.startswith("0xdead"), (
        proc.returncode,
        proc.stdout,
        proc.stderr,
    )


# --- the plugin itself: streams, delays, events -----------------------------------------------------


def test_a_missing_event_wait_reads_stale_data(streams):
    # The proof that hostdev's delays bite: without an event wait, stream 2 copies before stream 1 filled.
    s1, s2 = streams
    n = 4096
    a, b = hostdev.raw_allocate(0, n, s1), hostdev.raw_allocate(0, n, s2)
    try:
        hostdev.raw_write(0, a, 0, bytes(n), s1)
        hostdev.raw_write(0, b, 0, bytes(n), s2)
        hostdev.stream_stall(s1, STALL_US)
        hostdev.raw_fill(0, a, 0, n, b"\x07", s1)
        hostdev.raw_copy(0, b, 0, 0, a, 0, n, s2)  # no wait: races with s1
        assert hostdev.raw_read(0, b, 0, n, s2) == bytes(n), "stream 2 saw stream 1's fill without waiting"
        hostdev.synchronize_stream(0, s1)
        assert hostdev.raw_read(0, a, 0, n, s1) == b"\x07" * n

        before = hostdev.counters(0)
        waits = hostdev.stream_counters(s2)["waits"]
        event = hostdev.event_create(0)
        hostdev.stream_stall(s1, STALL_US)
        hostdev.raw_fill(0, a, 0, n, b"\x09", s1)
        hostdev.event_record(0, event, s1)
        hostdev.stream_wait_event(0, s2, event)
        hostdev.event_destroy(0, event)  # allowed once the wait is queued
        hostdev.raw_copy(0, b, 0, 0, a, 0, n, s2)
        assert hostdev.raw_read(0, b, 0, n, s2) == b"\x09" * n
        after = hostdev.counters(0)
        for key in ("events_created", "events_recorded", "events_waited", "events_destroyed"):
            assert after[key] == before[key] + 1, key
        assert hostdev.stream_counters(s2)["waits"] == waits + 1
    finally:
        _sync_all()
        hostdev.raw_free(0, a, n, s1)
        hostdev.raw_free(0, b, n, s2)


def test_operations_run_later_and_in_order_on_their_stream(streams):
    s1, _ = streams
    n = 256
    a = hostdev.raw_allocate(0, n, s1)
    try:
        counts = hostdev.stream_counters(s1)
        hostdev.stream_stall(s1, STALL_US)
        for value in range(1, 6):
            hostdev.raw_fill(0, a, 0, n, bytes([value]), s1)
        mid = hostdev.stream_counters(s1)
        assert mid["ops_queued"] - counts["ops_queued"] == 6
        assert mid["ops_run"] - counts["ops_run"] < 6  # the stall holds them back: nothing ran synchronously
        assert hostdev.raw_read(0, a, 0, n, s1) == bytes([5]) * n  # a blocking read waits for all, in order
        done = hostdev.stream_counters(s1)
        assert done["ops_run"] - counts["ops_run"] == 7 and done["ops_delayed"] > mid["ops_delayed"] - 1
    finally:
        hostdev.raw_free(0, a, n, s1)


def test_event_synchronize_waits_on_the_host(streams):
    s1, s2 = streams
    n = 1024
    a = hostdev.raw_allocate(0, n, s1)
    try:
        event = hostdev.event_create(0)
        hostdev.event_synchronize(0, event)  # never recorded: nothing to wait for
        hostdev.stream_stall(s1, STALL_US)
        hostdev.raw_fill(0, a, 0, n, b"\x05", s1)
        hostdev.event_record(0, event, s1)
        hostdev.event_synchronize(0, event)
        assert hostdev.raw_read(0, a, 0, n, s2) == b"\x05" * n  # s2 needs no wait: the host waited
        hostdev.event_destroy(0, event)
        before = _raw_bad()
        with pytest.raises(RuntimeError, match=r"event_record\(\).*not a live hostdev event"):
            hostdev.event_record(0, event, s1)
        assert _bad_raw_delta(before) == 1
    finally:
        hostdev.raw_free(0, a, n, s1)


def test_free_is_stream_ordered(streams):
    s1, _ = streams
    n = 1 << 16
    before = hostdev.counters(0)
    a = hostdev.raw_allocate(0, n, s1)
    hostdev.stream_stall(s1, STALL_US)
    hostdev.raw_fill(0, a, 0, n, b"\x01", s1)
    hostdev.raw_free(0, a, n, s1)
    mid = hostdev.counters(0)
    assert mid["live_bytes"] == before["live_bytes"]  # what the core sees: freed
    assert mid["pending_frees"] == before["pending_frees"] + 1  # what the plugin holds until s1 gets there
    assert mid["live_tokens"] == before["live_tokens"] + 1
    hostdev.synchronize_stream(0, s1)
    after = hostdev.counters(0)
    assert after["pending_frees"] == before["pending_frees"] and after["live_tokens"] == before["live_tokens"]


def test_a_free_on_the_wrong_stream_is_caught_and_record_stream_orders_it(streams):
    s1, s2 = streams
    n = 4096
    for record in (False, True):
        before = hostdev.counters(0)
        a, b = hostdev.raw_allocate(0, n, s1), hostdev.raw_allocate(0, n, s2)
        hostdev.raw_write(0, a, 0, b"\x03" * n, s1)
        hostdev.stream_stall(s2, STALL_US)
        hostdev.raw_copy(0, b, 0, 0, a, 0, n, s2)  # s2 reads `a` later
        if record:
            hostdev.raw_record_stream(0, a, s2)
        hostdev.raw_free(0, a, n, s1)  # s1 is idle: without record_stream the free overtakes s2's read
        assert hostdev.raw_read(0, b, 0, n, s2) == b"\x03" * n  # never corrupted: the block is kept
        hostdev.synchronize_stream(0, s1)
        hostdev.raw_free(0, b, n, s2)
        _sync_all()
        after = hostdev.counters(0)
        assert after["unordered_frees"] - before["unordered_frees"] == (0 if record else 1)
        assert after["record_streams"] - before["record_streams"] == (1 if record else 0)
        assert after["live_tokens"] == before["live_tokens"]
    EXPECTED["unordered_frees"] += 1


def test_current_stream_and_device_are_per_thread(streams):
    s1, _ = streams
    assert hostdev.current_stream(0) == hostdev.default_stream(0)
    seen = {}

    def other():
        seen["stream"] = hostdev.current_stream(0)
        seen["device"] = hostdev.get_current_device()
        hostdev.set_current_device(1)
        seen["device_after"] = hostdev.get_current_device()

    with hostdev.stream(0, s1):
        assert hostdev.current_stream(0) == s1
        hostdev.set_current_device(0)
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert hostdev.get_current_device() == 0
    assert seen == {"stream": hostdev.default_stream(0), "device": 0, "device_after": 1}
    assert hostdev.current_stream(0) == hostdev.default_stream(0)
    with pytest.raises(ValueError, match="belongs to hostdev:0, not hostdev:1"):
        hostdev.set_current_stream(1, s1)
    with pytest.raises(ValueError, match="out of range"):
        hostdev.set_current_device(2)


def test_dlpack_stream_values(streams):
    s1, _ = streams
    assert hostdev.stream_to_dlpack(0, hostdev.default_stream(0)) == 1
    assert hostdev.stream_from_dlpack(0, 1) == hostdev.default_stream(0)
    per_thread = hostdev.stream_from_dlpack(0, 2)
    assert per_thread != hostdev.default_stream(0)
    assert hostdev.stream_to_dlpack(0, per_thread) == 2
    assert hostdev.stream_from_dlpack(0, 2) == per_thread  # the same one for this thread
    other = {}
    t = threading.Thread(target=lambda: other.setdefault("id", hostdev.stream_from_dlpack(0, 2)))
    t.start()
    t.join()
    assert other["id"] != per_thread  # per thread
    assert hostdev.stream_to_dlpack(0, s1) == s1 + 100
    assert hostdev.stream_from_dlpack(0, s1 + 100) == s1
    assert hostdev.stream_to_dlpack(0, None) == 1  # None: ST_STREAM_CURRENT, here the default stream
    for value in (0, -1, 50):
        with pytest.raises(ValueError, match="names no hostdev stream"):
            hostdev.stream_from_dlpack(0, value)
    with pytest.raises(ValueError, match="belongs to hostdev:0, not hostdev:1"):
        hostdev.stream_from_dlpack(1, s1 + 100)
    before = hostdev.counters(1)
    with pytest.raises(RuntimeError, match=r"stream_to_dlpack\(\).*belongs to hostdev:0"):
        hostdev.stream_to_dlpack(1, s1)
    assert hostdev.counters(1)["bad_handles_raw"] == before["bad_handles_raw"] + 1


def test_pinned_host_memory():
    before = hostdev.pinned_stats()
    p = hostdev.host_allocate(4096)
    try:
        assert hostdev.host_is_pinned(p) and hostdev.host_is_pinned(p + 4095)
        assert not hostdev.host_is_pinned(p + 4096)
        with pytest.raises(ValueError, match="pinned host memory"):
            hostdev.locate_pointer(p)
        ctypes.memset(p, 1, 4096)  # real host memory
        assert hostdev.pinned_stats()["bytes"] == before["bytes"] + 4096
    finally:
        hostdev.host_free(p, 4096)
    assert hostdev.pinned_stats() == before
    bad = hostdev.counters(0)["bad_handles_raw"]
    hostdev.host_free(p, 4096)  # freed already: refused, counted, no crash
    assert hostdev.counters(0)["bad_handles_raw"] == bad + 1


def test_the_plugin_is_threadsanitizer_and_addresssanitizer_clean(tmp_path):
    # The stream workers, queues, events and tokens under several threads, built with both sanitizers
    # (check/hostdev_stress.c plays the core; no Python in the process).
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler to build the sanitizer check")
    root = Path(__file__).resolve().parents[1] / "plugins" / "slimtensor-hostdev"
    include = Path(st.__file__).parent / "include"
    if not (include / "slimtensor" / "c" / "device_plugin.h").exists():
        include = Path(__file__).resolve().parents[2] / "packages" / "slimtensor-core" / "include"
    sources = (
        [root / "check" / "hostdev_stress.c"]
        + [
            root / "src" / f
            for f in (
                "hostdev_device.c",
                "hostdev_memory.c",
                "hostdev_streams.c",
                "hostdev_strided.c",
                "hostdev_variants.c",
            )
        ]
        + [root / "src" / "abi10" / "hostdev_abi10.c"]
    )
    for sanitizer in ("thread", "address"):
        exe = tmp_path / f"stress_{sanitizer}"
        build = subprocess.run(
            [
                cc,
                "-std=c11",
                "-O1",
                "-g",
                f"-fsanitize={sanitizer}",
                "-D_POSIX_C_SOURCE=200809L",
                "-Wall",
                "-Wextra",
                "-Werror",
                f"-I{root / 'src'}",
                f"-I{include}",
                *map(str, sources),
                "-pthread",
                "-o",
                str(exe),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if build.returncode != 0 and "sanitize" in build.stderr and "unrecognized" in build.stderr:
            pytest.skip(f"{cc} has no -fsanitize={sanitizer}")
        assert build.returncode == 0, build.stderr
        env = dict(os.environ, TSAN_OPTIONS="halt_on_error=1 exitcode=66", ASAN_OPTIONS="detect_leaks=1")
        env.pop("LD_PRELOAD", None)
        run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300, env=env)
        assert run.returncode == 0 and "hostdev stress: ok" in run.stdout, (
            sanitizer,
            run.stdout,
            run.stderr[-4000:],
        )


# --- the core over hostdev: every result right under the delays ---------------------------------------


def test_fill_then_read_back_on_every_path():
    a = np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5)
    with hostdev.delay(300, 300):
        t = st.from_numpy(a).to("hostdev:0")
        t.fill_(4.5)  # fill_v2, queued
        np.testing.assert_array_equal(t.cpu().numpy(), np.full_like(a, 4.5))
        t[1, :, ::2] = -1.0  # a fill of a strided view
        b = np.full_like(a, 4.5)
        b[1, :, ::2] = -1.0
        np.testing.assert_array_equal(t.cpu().numpy(), b)
        assert t[1, 2, 4].item() == -1.0 and t[0, 0, 0].item() == 4.5  # item: a blocking copy_to_host
        z = st.zeros((7, 3), dtype=st.int16, device="hostdev:1")
        np.testing.assert_array_equal(z.cpu().numpy(), np.zeros((7, 3), np.int16))


def test_peer_copy_waits_for_the_source_device():
    # The source's fill is held back on hostdev:0's current stream; the copy runs on hostdev:1's stream.
    t0 = st.zeros((256,), dtype=st.float32, device="hostdev:0")
    t0.cpu()
    hostdev.stream_stall(hostdev.current_stream(0), STALL_US)
    t0.fill_(3.0)
    t1 = t0.to("hostdev:1")
    np.testing.assert_array_equal(t1.cpu().numpy(), np.full(256, 3.0, np.float32))
    strided = st.empty((128,), dtype=st.float64, device="hostdev:1")
    hostdev.stream_stall(hostdev.current_stream(0), STALL_US)
    t0.fill_(5.0)
    strided.copy_(t0[::2])  # strided, converting, across devices
    np.testing.assert_array_equal(strided.cpu().numpy(), np.full(128, 5.0))


def test_non_blocking_copy_to_host_completes_at_synchronize():
    a = np.arange(1000, dtype=np.float32)
    t = st.from_numpy(a).to("hostdev:0")
    out = st.zeros((1000,), dtype=st.float32)
    before = hostdev.counters(0)["non_blocking_copies"]
    hostdev.stream_stall(hostdev.current_stream(0), STALL_US)
    out.copy_(t, non_blocking=True)
    assert hostdev.counters(0)["non_blocking_copies"] == before + 1
    early = out.numpy().copy()
    st.synchronize("hostdev:0")
    np.testing.assert_array_equal(out.numpy(), a)
    assert not np.array_equal(early, a), (
        "the stalled copy was already done: the core did not pass non_blocking"
    )


def test_non_blocking_upload_of_a_strided_source_keeps_its_staging_alive():
    # The core packs a strided host source into a staging buffer; the plugin reads it only when the stalled
    # stream gets there, so the core must keep that buffer until the stream has run.
    a = np.arange(64 * 64, dtype=np.float64).reshape(64, 64)
    src = st.from_numpy(a).T[::2]
    dst = st.empty(src.shape, dtype=st.float64, device="hostdev:0")
    hostdev.stream_stall(hostdev.current_stream(0), STALL_US)
    dst.copy_(src, non_blocking=True)
    junk = [np.full((64, 64), -7.0) for _ in range(8)]  # reuse freed host memory, if it was freed
    del junk
    st.synchronize("hostdev:0")
    np.testing.assert_array_equal(dst.cpu().numpy(), a.T[::2])


def test_synchronize_and_current_device_through_the_core():
    before = hostdev.counters(1)["synchronizes"]
    st.synchronize("hostdev:1")
    assert hostdev.counters(1)["synchronizes"] == before + 1
    assert st.current_device("hostdev") == 0
    st.set_device("hostdev:1")
    try:
        assert st.current_device("hostdev") == 1 and hostdev.get_current_device() == 1
        t = st.ones((3,), device="hostdev")
        assert str(t.device) == "hostdev:1"
        seen = {}
        th = threading.Thread(
            target=lambda: seen.setdefault("d", str(st.empty((1,), device="hostdev").device))
        )
        th.start()
        th.join()
        assert seen["d"] == "hostdev:0"  # the current device is per thread
        del t
    finally:
        st.set_device("hostdev:0")


def test_work_on_a_user_stream_is_ordered_by_the_stream(streams):
    s1, _ = streams
    a = np.arange(500, dtype=np.int32)
    with hostdev.stream(0, s1):
        before = hostdev.stream_counters(s1)["ops_queued"]
        t = st.from_numpy(a).to("hostdev:0")
        t2 = t.to(dtype=st.int64)
        np.testing.assert_array_equal(t2.cpu().numpy(), a.astype(np.int64))
        assert hostdev.stream_counters(s1)["ops_queued"] > before  # the core used ST_STREAM_CURRENT
        del t, t2
    gc.collect()


def test_a_tensor_used_on_another_stream_is_freed_after_that_use(streams):
    # As with torch: a tensor used on a stream other than its allocation stream is marked with record_stream,
    # and the core hands the mark to the plugin's record_stream (here by the stream's DLPack number).
    s1, s2 = streams
    before = hostdev.counters(0)["unordered_frees"]
    recorded = hostdev.counters(0)["record_streams"]
    with hostdev.stream(0, s1):
        t = st.zeros((4096,), dtype=st.float32, device="hostdev:0")
        t.cpu()
    with hostdev.stream(0, s2):
        hostdev.stream_stall(s2, STALL_US)
        t.fill_(1.0)
        t.record_stream(hostdev.stream_to_dlpack(0, s2))
        assert hostdev.counters(0)["record_streams"] == recorded + 1
        del t  # the storage frees on s1, its allocation stream, while s2 still has the fill queued
        gc.collect()
    _sync_all()
    EXPECTED["unordered_frees"] += hostdev.counters(0)["unordered_frees"] - before
    assert hostdev.counters(0)["unordered_frees"] == before


def test_threads_on_their_own_streams():
    from concurrent.futures import ThreadPoolExecutor

    a = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)

    def work(i: int) -> bool:
        index = i % 2
        s = hostdev.stream_create(index)
        hostdev.set_current_stream(index, s)
        ok = True
        for k in range(15):
            t = st.from_numpy(a).to(f"hostdev:{index}")
            expect = a
            if k % 3 == 0:
                t.fill_(float(k))
                expect = np.full_like(a, float(k))
            ok &= bool(np.array_equal(t.T.contiguous().cpu().numpy(), expect.T))
            ok &= bool(np.array_equal(t.to(dtype=st.float64).cpu().numpy(), expect.astype(np.float64)))
        return ok

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8)))
    gc.collect()


def test_memory_stats_show_the_allocator():
    t = st.empty((1000,), dtype=st.uint8, device="hostdev:0")
    stats = st.memory_stats("hostdev:0")
    allocator = stats.get("allocator")
    if allocator is None:
        pytest.skip("the core's memory_stats has no 'allocator' entry")
    assert allocator["live_tokens"] >= 1 and allocator["reserved_bytes"] >= 1024 and allocator["streams"] >= 1
    del t


# --- DLPack: the stream handshake ---------------------------------------------------------------------


def _core_exports_device_handles() -> str:
    """Empty when the core exports hostdev tensors through DLPack as handle + byte_offset, else why not."""
    t = st.zeros((4,), device="hostdev:0")
    try:
        capsule = t.__dlpack__()
    except Exception as exc:  # noqa: BLE001
        return f"the core refuses to export hostdev (kDLExtDev) tensors: {type(exc).__name__}: {exc}"
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    data = ctypes.c_void_p.from_address(get(capsule, b"dltensor")).value or 0
    if data & (0xFFFF << 48) != TOKEN_TAG:
        return f"the core's DLPack export of non-addressable memory puts {data:#x} in data, not the handle"
    return ""


@pytest.fixture
def dlpack_ready():
    reason = _core_exports_device_handles()
    if reason:
        pytest.skip(f"needs the one DLPack codec of issue 9 (branch dlpack): {reason}")


def test_dlpack_round_trip_keeps_handle_and_offset(dlpack_ready):
    a = np.arange(40, dtype=np.float32).reshape(5, 8)
    t = st.from_numpy(a).to("hostdev:0")
    view = t[2:, 3:]
    assert view.__dlpack_device__() == (hostdev._hostdev.DLPACK_DEVICE_TYPE, 0)
    back = st.from_dlpack(view)
    assert str(back.device) == "hostdev:0"
    np.testing.assert_array_equal(back.cpu().numpy(), a[2:, 3:])
    del back, view, t


def test_dlpack_consumer_stream_waits_for_the_producer(dlpack_ready, streams):
    s1, s2 = streams
    with hostdev.stream(0, s1):
        t = st.zeros((512,), dtype=st.float32, device="hostdev:0")
        t.cpu()
        hostdev.stream_stall(s1, STALL_US)
        t.fill_(2.0)  # queued on the producer's stream s1
        # Exported while s1 is the producer's current stream (DLPack: the producer orders its current stream
        # before the consumer's; work queued on another stream is the producer's to synchronise).
        before = hostdev.counters(0)
        capsule = t.__dlpack__(stream=hostdev.stream_to_dlpack(0, s2))  # the consumer works on s2
        del capsule
        after = hostdev.counters(0)
    assert (
        after["events_recorded"] > before["events_recorded"]
        and after["events_waited"] > before["events_waited"]
    )
    # s2 now waits for s1's fill: a copy on s2 sees it without any host synchronisation.
    out = hostdev.raw_allocate(0, 512 * 4, s2)
    try:
        with hostdev.stream(0, s2):
            hostdev.raw_copy(0, out, 0, 0, _handle_of(t), 0, 512 * 4, s2)
            assert hostdev.raw_read(0, out, 0, 512 * 4, s2) == np.full(512, 2.0, np.float32).tobytes()
    finally:
        _sync_all()
        hostdev.raw_free(0, out, 512 * 4, s2)
    del t


def test_dlpack_stream_special_values(dlpack_ready):
    t = st.zeros((3,), device="hostdev:0")
    with pytest.raises((ValueError, BufferError)):
        t.__dlpack__(stream=0)  # 0 is not a stream
    t.__dlpack__(stream=-1)  # no synchronisation
    t.__dlpack__(stream=None)
    t.__dlpack__(stream=2)
    with pytest.raises((ValueError, BufferError, RuntimeError), match="hostdev"):
        t.__dlpack__(stream=99)  # no hostdev stream has that value


def _handle_of(t) -> int:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    capsule = t.__dlpack__(stream=-1)
    base = get(capsule, b"dltensor")
    data = ctypes.c_void_p.from_address(base).value or 0
    return data  # byte_offset is 0 for a whole fresh tensor

"""Memory statistics: live/peak bytes, live storages and tensors, total allocations; every operation
returns the counters to their baseline once its results are gone (DESIGN.md §5: no leaks)."""

from __future__ import annotations

import gc
import pickle

import numpy as np
import pytest
import slimtensor as st

KEYS = {"live_bytes", "peak_bytes", "live_storages", "live_tensors", "live_aoti_handles", "total_allocations"}


def cpu(device="cpu"):
    # no gc.collect(): these tests make no reference cycles, so refcounting frees everything at once
    return st.memory_stats(device)


def live(device="cpu"):
    s = cpu(device)
    return s["live_bytes"], s["live_storages"], s["live_tensors"]


def test_keys_and_per_device_dict():
    names = {d.name for d in st.devices()}  # loads the device plugins first
    s = st.memory_stats("cpu")
    assert set(s) >= KEYS
    assert all(isinstance(v, int) and v >= 0 for v in s.values())
    every = st.memory_stats()
    assert "cpu" in every and set(every["cpu"]) >= KEYS
    assert set(every) == names
    assert st.memory_stats(st.Device("cpu")) == st.memory_stats("cpu")


def test_bad_device_argument():
    with pytest.raises(ValueError):
        st.memory_stats("gpu")
    with pytest.raises(TypeError):
        st.memory_stats(3)


def test_counts_follow_a_tensor_and_its_views(device):
    b0, s0, t0 = live(device)
    total0 = cpu(device)["total_allocations"]
    a = st.empty(1000, dtype=st.float64, device=device)
    b1, s1, t1 = live(device)
    assert b1 - b0 >= 8000 and s1 == s0 + 1 and t1 == t0 + 1
    assert cpu(device)["total_allocations"] == total0 + 1
    v = a[10:].reshape(2, -1).t()
    assert live(device) == (b1, s1, t1 + 1)  # views add tensors, not storages or bytes
    del a
    assert live(device) == (b1, s1, t1)  # the view keeps the storage
    del v
    assert live(device) == (b0, s0, t0)


def test_peak_and_reset(device):
    st.reset_peak_memory_stats(device)
    base = cpu(device)
    assert base["peak_bytes"] == base["live_bytes"]
    a = st.empty(1 << 16, dtype=st.uint8, device=device)
    del a
    after = cpu(device)
    assert after["peak_bytes"] >= base["live_bytes"] + (1 << 16)
    assert after["live_bytes"] == base["live_bytes"]
    st.reset_peak_memory_stats(device)
    assert cpu(device)["peak_bytes"] == cpu(device)["live_bytes"]


def test_borrowed_storages_are_counted():
    arr = np.zeros(100)
    _, s0, t0 = live()
    t = st.from_numpy(arr)
    _, s1, t1 = live()
    assert (s1, t1) == (s0 + 1, t0 + 1)
    del t
    _, s2, t2 = live()
    assert (s2, t2) == (s0, t0)


def test_storage_use_count(device):
    a = st.empty(4, device=device)
    n = a.storage().use_count
    views = [a[i:] for i in range(3)]
    assert a.storage().use_count == n + 3
    del views
    gc.collect()
    assert a.storage().use_count == n


def _dlpack_round_trip(d="cpu"):
    t = st.arange(10, device=d)
    st.from_dlpack(t.__dlpack__(max_version=(1, 0)))
    st.from_dlpack(t.__dlpack__())
    t.__dlpack__()  # never consumed
    st.from_dlpack(t)


def _raise(f):
    try:
        f()
    except (ValueError, TypeError, IndexError, RuntimeError, BufferError, MemoryError):
        pass


# Each operation runs on the device it is given; HOST_ONLY ones exist for the CPU alone.
OPERATIONS = {
    "factories": lambda d: [
        st.empty(10, device=d),
        st.zeros(3, 4, device=d),
        st.ones(2, device=d),
        st.full((3,), 2, device=d),
        st.arange(10, device=d),
        st.empty_strided((2, 3), (1, 2), device=d),
        st.empty_like(st.empty(3, device=d)),
    ],
    "views": lambda d: (
        st.arange(24, device=d).reshape(2, 3, 4).permute(2, 0, 1)[1:, ::2].unsqueeze(0).expand(2, -1, -1, -1)
    ),
    "reshape-copy": lambda d: st.arange(24, device=d).reshape(4, 6).t().reshape(-1),
    "copies": lambda d: (
        st.zeros(3, 4, device=d).copy_(st.arange(4)),
        st.arange(6, device=d).clone(),
        st.arange(6, device=d).to(st.float16),
        st.arange(6, device=d).reshape(2, 3).t().contiguous(),
        st.arange(6).to(d).cpu(),
    ),
    "fill-item-tolist": lambda d: (
        st.zeros(5, device=d).fill_(2).tolist(),
        st.full((), 3, device=d).item(),
        repr(st.arange(5, device=d)),
    ),
    "numpy": lambda d: (
        st.from_numpy(np.arange(5)).numpy(),
        np.asarray(st.arange(5)),
        memoryview(st.arange(3)),
    ),
    "asarray": lambda d: (
        st.asarray([1, 2, 3]),
        st.asarray(np.arange(4)),
        st.asarray(st.arange(2), copy=True),
    ),
    "pickle": lambda d: pickle.loads(pickle.dumps(st.arange(6, device=d).reshape(2, 3).t())),
    "dlpack": _dlpack_round_trip,
    "iteration": lambda d: [list(r) for r in st.arange(6, device=d).reshape(2, 3)],
    "setitem": lambda d: st.zeros(3, 3, device=d).__setitem__((slice(None), 1), st.arange(3)),
    "failed-views": lambda d: [
        _raise(f)
        for f in [
            lambda: st.arange(4, device=d).as_strided((5,), (1,)),
            lambda: st.arange(4, device=d).permute(0, 0),
            lambda: st.arange(6, device=d).reshape(4),
            lambda: st.arange(6, device=d).reshape(2, 3).t().view(6),
            lambda: st.arange(4, device=d)[::-1],
            lambda: st.arange(4, device=d).select(0, 9),
            lambda: st.arange(4, device=d).narrow(0, 2, 5),
            lambda: st.arange(4, device=d).expand(3, 5),
            lambda: st.arange(4, device=d).view(st.float64).view(3),
        ]
    ],
    "failed-copies": lambda d: [
        _raise(f)
        for f in [
            lambda: st.zeros(2, 3, device=d).copy_(st.zeros(4)),
            lambda: st.zeros(1, 3, device=d).expand(2, 3).copy_(st.zeros(2, 3)),
            lambda: st.zeros(2, device=d).item(),
            lambda: st.arange(10, device=d)[1:].copy_(st.arange(10, device=d)[:-1]),
        ]
    ],
    "failed-factories": lambda d: [
        _raise(f)
        for f in [
            lambda: st.empty(-1, device=d),
            lambda: st.empty(2**62, device=d),
            lambda: st.empty(3, dtype="nope", device=d),
            lambda: st.empty_strided((2, 3), (1,), device=d),
            lambda: st.from_numpy(np.arange(3)[::-1]),
        ]
    ],
    "failed-allocation": lambda d: _raise(lambda: st.empty(1 << 50, dtype=st.uint8, device=d)),
}
HOST_ONLY = {"numpy", "asarray"}


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_operations_return_counters_to_baseline(name, device):
    if device != "cpu" and name in HOST_ONLY:
        pytest.skip(f"{name}: numpy and the buffer protocol exist for host memory only")
    OPERATIONS[name](device)  # warm up (module-level caches, first-use imports)
    before = live(device)
    for _ in range(3):
        OPERATIONS[name](device)
    after = live(device)
    if after != before:
        gc.collect()
        after = live(device)
    assert after == before, f"{name}: (bytes, storages, tensors) went from {before} to {after}"


def test_failed_view_does_not_change_the_tensor_count():
    a = st.arange(4)
    before = live()
    for _ in range(5):
        with pytest.raises(ValueError):
            a.as_strided((5,), (1,))
    assert live() == before


def test_memory_error_for_huge_allocations():
    before = live()
    with pytest.raises(MemoryError) as info:
        st.empty(1 << 50, dtype=st.uint8)
    assert "out of memory" in str(info.value)
    assert live() == before


SHUTDOWN = """
import ctypes, numpy as np, slimtensor as st
a = np.arange(10.0)
t1 = st.from_numpy(a)
t2 = st.from_blob(a.ctypes.data, (5,), dtype=st.float64, owner=a)
t3 = st.from_dlpack(np.arange(4))
unconsumed = st.arange(3).__dlpack__(max_version=(1, 0))
class Cycle: pass
c = Cycle(); c.self = c; c.t = st.zeros(3); c.v = t1[2:]; c.n = st.arange(4).numpy()
print("done")
"""


def test_borrowed_memory_alive_at_interpreter_shutdown():
    """Deleters of borrowed memory run (or are skipped) safely while the interpreter shuts down."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", SHUTDOWN], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "done"
    assert "Exception ignored" not in proc.stderr and "Fatal" not in proc.stderr, proc.stderr[-2000:]


def test_views_from_many_threads_keep_counts_exact():
    """Atomic reference counts: threads that make and drop views of one storage leave it exactly as it was."""
    import threading

    base = st.arange(1000, dtype=st.float32)
    uses = base.storage().use_count
    before = live()
    errors = []

    def work(seed):
        try:
            for i in range(2000):
                v = base[(seed + i) % 100 :].reshape(-1)[::3].unsqueeze(0)
                assert v.storage().id == base.storage().id
                del v
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert base.storage().use_count == uses
    assert live() == before


def test_concurrent_large_copies_are_exact():
    import threading

    src = np.random.default_rng(3).standard_normal((512, 300)).astype(np.float32)
    s = st.from_numpy(src)
    results = {}

    def work(k):
        results[k] = (
            s.t().contiguous().numpy().copy(),
            s.to(dtype=st.float64).numpy().copy(),
            s[::2, 1::3].clone().numpy().copy(),
        )

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for k in range(4):
        np.testing.assert_array_equal(results[k][0], src.T)
        np.testing.assert_array_equal(results[k][1], src.astype(np.float64))
        np.testing.assert_array_equal(results[k][2], src[::2, 1::3])


def test_memory_stats_lists_plugin_devices_in_a_fresh_process():
    import subprocess
    import sys

    plugins = [d.name for d in st.devices() if d.source != "built-in"]
    if not plugins:
        pytest.skip("no device plugin is installed")
    code = "import slimtensor as st; print(sorted(st.memory_stats()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # in this environment, e.g. ['cpu', 'hostdev'] is expected; got ['cpu']
    assert out.stdout.strip() == str(sorted(["cpu", *plugins]))


def test_set_num_threads_while_other_threads_copy():
    """Changing the kernel thread count while copies run on other Python threads: exact results, no hang."""
    import threading
    import time

    src = st.from_numpy(np.random.default_rng(0).standard_normal((512, 1024)).astype(np.float32))
    ref = np.ascontiguousarray(src.numpy().T)
    old = st.get_num_threads()
    stop, errors = [], []

    def copier():
        while not stop:
            if not np.array_equal(src.t().contiguous().numpy(), ref):
                errors.append("mismatch")

    def toggler():
        i = 0
        while not stop:
            st.set_num_threads(1 + i % 4)
            i += 1

    threads = [threading.Thread(target=copier) for _ in range(2)] + [threading.Thread(target=toggler)]
    try:
        for th in threads:
            th.start()
        time.sleep(1.5)
    finally:
        stop.append(True)
        for th in threads:
            th.join(timeout=60)
        st.set_num_threads(old)
    assert not any(th.is_alive() for th in threads), "a copy hung"
    assert not errors


def test_a_storage_object_keeps_its_memory_alive():
    before = live()
    t = st.empty(256, dtype=st.uint8)
    s = t.storage()
    ptr, sid = s.data_ptr, s.id
    del t
    mid = live()
    assert mid[1] == before[1] + 1 and mid[0] >= before[0] + 256  # still allocated, no tensor left
    assert mid[2] == before[2]
    assert (s.data_ptr, s.id, s.nbytes) == (ptr, sid, 256) and s.use_count == 1
    del s
    assert live() == before

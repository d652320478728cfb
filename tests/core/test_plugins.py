"""Device plugins: the hostdev test plugin through the public API, ABI refusals, discovery, autoload."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
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


@pytest.fixture(scope="module", autouse=True)
def _hostdev_registered():
    # Explicit, so these tests also run under SLIMTENSOR_DEVICE_AUTOLOAD=0; autoload itself is tested in
    # subprocesses below.
    _plugins.load_plugins()
    record = [r for r in _plugins.plugin_records() if r.name == "hostdev"]
    assert record and record[0].loaded, f"hostdev did not load: {record}"
    hostdev.register_abi10()  # the plugin built against ABI 1.0 (Note [hostdev_abi10]): must load
    gc.collect()
    _synchronize_hostdev()
    core_before, plugin_before = _core_live(), _counters()
    abi10_before = [hostdev.abi10_counters(i) for i in INDICES]
    yield
    # The hostdev counterpart of conftest's CPU leak check: the core's statistics for the device and the
    # plugin's own counters are back where the module found them, and the core never passed a handle the
    # plugin did not give it (a token plus an offset, a freed token).
    gc.collect()
    _synchronize_hostdev()
    assert _core_live() == core_before, "hostdev storages outlived the test module"
    keys = ("live_allocations", "live_bytes", "live_tokens", "pending_frees", "bad_handles", "unordered_frees",
            "stream_errors")
    after = _counters()
    for key in keys:
        assert [c[key] for c in after] == [c[key] for c in plugin_before], f"hostdev {key} changed"
    abi10_after = [hostdev.abi10_counters(i) for i in INDICES]
    for key in ("live_allocations", "live_bytes"):
        assert [c[key] for c in abi10_after] == [c[key] for c in abi10_before], f"hostdev_abi10 {key} changed"


def _synchronize_hostdev():
    for i in INDICES:
        hostdev.synchronize(i)  # frees are stream-ordered: the plugin holds freed memory until its stream ran


def _field(entry, key):
    return entry[key] if isinstance(entry, dict) else getattr(entry, key)


def _device_entry(name):
    for entry in st.devices():
        if _field(entry, "name") == name:
            return entry
    return None


def _counters():
    return [hostdev.counters(i) for i in INDICES]


def _core_live(device="hostdev:0"):
    stats = st.memory_stats(device)
    return _field(stats, "live_bytes"), _field(stats, "live_storages")


# --- registration -----------------------------------------------------------------------------------


def test_hostdev_is_listed_and_available():
    entry = _device_entry("hostdev")
    assert entry is not None, f"hostdev missing from st.devices(): {st.devices()}"
    assert _field(entry, "available") is True
    assert not _field(entry, "reason")
    assert st.Device("hostdev:1").index == 1


def test_plugin_record_names_the_distribution():
    (record,) = [r for r in _plugins.plugin_records() if r.name == "hostdev"]
    assert record.value == "slimtensor_hostdev:register"
    assert record.distribution.startswith("slimtensor-hostdev ")
    assert "loaded" in record.describe()


def test_load_plugins_is_public():
    assert st.load_plugins is _plugins.load_plugins  # docs/plugins.md tells users to call st.load_plugins()
    assert any(r.name == "hostdev" and r.loaded for r in st.load_plugins())


def test_registering_twice_is_refused_cleanly():
    from slimtensor import _C

    hostdev.register()  # the plugin's own entry point is idempotent
    with pytest.raises(RuntimeError, match="already registered"):  # the core refuses a second table
        _C._register_device_plugin(hostdev._hostdev.plugin_capsule("ok"), "a second copy of hostdev")
    assert _device_entry("hostdev") is not None


def test_plugin_does_not_link_libslimtensor():
    # The boundary is the C header only: the extension must not depend on the core's shared library.
    path = Path(hostdev._hostdev.__file__)
    assert b"libslimtensor" not in path.read_bytes(), f"{path} names libslimtensor"


# --- tensors on the device --------------------------------------------------------------------------


@pytest.mark.parametrize("index", INDICES)
def test_empty_and_zeros_allocate_through_the_plugin(index):
    before = hostdev.counters(index)
    device = f"hostdev:{index}"
    e = st.empty((2, 3), dtype=st.float32, device=device)
    z = st.zeros((2, 3), dtype=st.float32, device=device)
    assert str(e.device) == device and str(z.device) == device
    assert e.shape == (2, 3) and e.stride() == (3, 1)
    after = hostdev.counters(index)
    assert after["allocations"] - before["allocations"] == 2
    assert after["live_bytes"] - before["live_bytes"] == 2 * 6 * 4
    np.testing.assert_array_equal(z.cpu().numpy(), np.zeros((2, 3), np.float32))
    del e, z


def test_default_index_is_the_current_device():
    t = st.empty((4,), device="hostdev")
    assert str(t.device) == "hostdev:0"  # "hostdev" means the current device, resolved when allocating
    st.set_device("hostdev:1")
    try:
        u = st.zeros((4,), device="hostdev")
        assert str(u.device) == "hostdev:1" and hostdev.get_current_device() == 1
        np.testing.assert_array_equal(u.cpu().numpy(), np.zeros(4, np.float32))
        del u
    finally:
        st.set_device("hostdev:0")


@pytest.mark.parametrize("index", INDICES)
def test_roundtrip_cpu_hostdev_cpu(index):
    a = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5
    before = hostdev.counters(index)
    t = st.from_numpy(a).to(f"hostdev:{index}")
    assert str(t.device) == f"hostdev:{index}"
    back = t.cpu()
    assert str(back.device).startswith("cpu")
    np.testing.assert_array_equal(back.numpy(), a)
    after = hostdev.counters(index)
    assert after["copies_host_to_device"] > before["copies_host_to_device"]
    assert after["copies_device_to_host"] > before["copies_device_to_host"]


def test_to_same_device_returns_self():
    t = st.zeros((3,), device="hostdev:1")
    assert t.to("hostdev:1") is t


@pytest.mark.parametrize(
    "dtype, np_dtype",
    [
        ("float32", np.float32),
        ("float64", np.float64),
        ("int64", np.int64),
        ("uint8", np.uint8),
        ("bool", np.bool_),
    ],
)
def test_roundtrip_dtypes(dtype, np_dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((5, 7)) * 100).astype(np_dtype)
    t = st.from_numpy(a).to("hostdev:0")
    assert t.dtype == getattr(st, dtype)
    np.testing.assert_array_equal(t.cpu().numpy(), a)


def test_synchronize_waits_for_every_stream():
    before = hostdev.counters(0)
    t = st.zeros((1000,), device="hostdev:0")
    s = hostdev.stream_create(0)
    with hostdev.stream(0, s):
        hostdev.stream_stall(s, 100_000)
        t.fill_(1.0)  # on s, held back
    st.synchronize("hostdev:0")  # every stream of the device
    assert hostdev.stream_counters(s)["ops_run"] == hostdev.stream_counters(s)["ops_queued"]
    np.testing.assert_array_equal(t.cpu().numpy(), np.ones(1000, np.float32))
    assert hostdev.counters(0)["synchronizes"] > before["synchronizes"]
    del t


def test_fill_and_factories_on_hostdev():
    before = hostdev.counters(0)
    np.testing.assert_array_equal(
        st.ones((2, 5), device="hostdev:0").cpu().numpy(), np.ones((2, 5), np.float32)
    )
    np.testing.assert_array_equal(
        st.full((3, 2), 7, dtype=st.int64, device="hostdev:0").cpu().numpy(), np.full((3, 2), 7, np.int64)
    )
    t = st.empty((4, 4), dtype=st.float64, device="hostdev:0")
    t.fill_(2.5)
    np.testing.assert_array_equal(t.cpu().numpy(), np.full((4, 4), 2.5))
    assert hostdev.counters(0)["allocations"] > before["allocations"]
    assert hostdev.counters(0)["fills"] > before["fills"]  # fill_v2 on the device, not an upload


# --- strided copies across and within devices --------------------------------------------------------


def test_noncontiguous_cpu_to_hostdev():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    src = st.from_numpy(a).T[1:, ::2]  # (5, 2) view with strides (1, 12)
    dst = st.empty(src.shape, dtype=st.float32, device="hostdev:0")
    dst.copy_(src)
    np.testing.assert_array_equal(dst.cpu().numpy(), a.T[1:, ::2])


def test_hostdev_view_to_cpu():
    a = np.arange(30, dtype=np.int32).reshape(5, 6)
    t = st.from_numpy(a).to("hostdev:0")
    view = t.transpose(0, 1)[::2, 1:]
    assert view.storage().id == t.storage().id and view.storage_offset() == 6  # a view, not a copy
    # hostdev memory is a token, not an address: there is no data pointer to give out
    with pytest.raises(RuntimeError, match="data_ptr"):
        view.data_ptr()
    np.testing.assert_array_equal(view.cpu().numpy(), a.T[::2, 1:])
    np.testing.assert_array_equal(view.contiguous().cpu().numpy(), a.T[::2, 1:])


def test_views_with_offsets_reach_the_plugin_as_byte_offsets():
    # Every view below starts inside its storage; the core must pass (token, byte_offset), never token + n.
    bad = hostdev.counters(0)["bad_handles"]
    a = np.arange(4 * 6 * 5, dtype=np.float64).reshape(4, 6, 5)
    t = st.from_numpy(a).to("hostdev:0")
    for view, expect in [(t[2], a[2]), (t[1:, 3:, 2], a[1:, 3:, 2]), (t[3, 5, 4:], a[3, 5, 4:]),
                         (t.permute(2, 0, 1)[1:, 1:], a.transpose(2, 0, 1)[1:, 1:])]:
        np.testing.assert_array_equal(view.cpu().numpy(), expect)  # to host
        np.testing.assert_array_equal(view.clone().cpu().numpy(), expect)  # on the device
        assert view.reshape(-1)[-1].item() == expect.reshape(-1)[-1]  # item
    patch = t[1:3, 2:4, 1:]
    patch.fill_(-2.0)  # fill_v2 at an offset
    patch2 = np.arange(16, dtype=np.float32).reshape(2, 2, 4)
    t[2:, 4:, 1:].copy_(st.from_numpy(patch2))  # a converting upload into a view at an offset
    b = a.copy()
    b[1:3, 2:4, 1:] = -2.0
    b[2:, 4:, 1:] = patch2
    np.testing.assert_array_equal(t.cpu().numpy(), b)
    assert hostdev.counters(0)["bad_handles"] == bad


def test_hostdev_abi10_loads_and_works():
    # hostdev_abi10 is compiled against a frozen copy of the ABI 1.0 header: old table size, old memory
    # functions, raw addresses, synchronous calls, no copy_strided. A 1.1 core must load and use it.
    assert hostdev._hostdev.ABI10_MINOR == 0
    assert hostdev._hostdev.ABI10_TABLE_SIZE == hostdev._hostdev.TABLE_SIZE_1_0 < hostdev._hostdev.TABLE_SIZE
    entry = _device_entry("hostdev_abi10")
    assert entry is not None and _field(entry, "available") is True
    before = hostdev.abi10_counters(1)
    a = np.arange(24, dtype=np.float32).reshape(4, 6) - 7.5
    t = st.from_numpy(a).to("hostdev_abi10:1")
    assert str(t.device) == "hostdev_abi10:1"
    assert t[1:].data_ptr() == t.data_ptr() + 24  # addressable: the core may hand out addresses
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    np.testing.assert_array_equal(t.T.contiguous().cpu().numpy(), a.T)  # staged: no copy_strided in 1.0
    np.testing.assert_array_equal(t.to(dtype=st.bfloat16).to(dtype=st.float32).cpu().numpy(),
                                  a.astype(np.float32))
    t.fill_(2.0)  # the 1.0 fill
    assert t[3, 5].item() == 2.0
    u = t.to("hostdev_abi10:0")
    np.testing.assert_array_equal(u.cpu().numpy(), np.full((4, 6), 2.0, np.float32))
    st.synchronize("hostdev_abi10:1")
    after = hostdev.abi10_counters(1)
    assert after["allocations"] > before["allocations"]
    assert after["fills"] == before["fills"] + 1 and after["synchronizes"] > before["synchronizes"]
    assert after["copies_host_to_device"] > before["copies_host_to_device"]
    assert after["errors"] == before["errors"]
    del t, u


def test_copy_into_a_hostdev_view():
    a = np.zeros((4, 5), np.float32)
    t = st.from_numpy(a).to("hostdev:0")
    patch = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    t[1:3, ::2].copy_(st.from_numpy(patch))
    a[1:3, ::2] = patch
    np.testing.assert_array_equal(t.cpu().numpy(), a)


def test_copy_between_hostdev_devices():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    t0 = st.from_numpy(a).to("hostdev:0")
    t1 = t0.to("hostdev:1")
    assert str(t1.device) == "hostdev:1"
    np.testing.assert_array_equal(t1.cpu().numpy(), a)
    strided = st.empty((4, 3), dtype=st.float64, device="hostdev:1")
    strided.copy_(t0.T)
    np.testing.assert_array_equal(strided.cpu().numpy(), a.T)


def test_dtype_conversion_on_hostdev():
    a = (np.arange(12, dtype=np.float64).reshape(3, 4) - 5) * 0.75
    t = st.from_numpy(a).to("hostdev:0")
    f = t.to(dtype=st.float32)
    assert str(f.device) == "hostdev:0" and f.dtype == st.float32
    np.testing.assert_array_equal(f.cpu().numpy(), a.astype(np.float32))
    i = st.empty((4, 3), dtype=st.int32, device="hostdev:0")
    i.copy_(t.T)
    np.testing.assert_array_equal(i.cpu().numpy(), a.T.astype(np.int32))


# fmt: off
_CONVERT_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
                   "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
_SPECIAL = [0.0, -0.0, 1.0, -1.5, 2.5, 3.5, 300.0, -300.7, 65504.0, 65520.0, 1e-8, 6e-8, 1e-40, 3e38, 1e300,
            -1e300, 2.0**53 + 1, 2.0**63, -(2.0**63), 2.0**64, float("inf"), float("-inf"), float("nan"), 0.1,
            1 / 3]
_SPECIAL_INT = [0, 1, -1, 127, 128, -129, 255, 256, 65535, 65536, 2**31 - 1, -(2**31), 2**31, 2**32 + 3,
                2**53 + 1, 2**62 + 2**40 + 1, -(2**63), 2**63 - 1, 7, -7]
# fmt: on


def _bits(t):
    a = np.ascontiguousarray(t.cpu().numpy())
    return a.view(np.uint8).tobytes()


@pytest.mark.parametrize("src_dtype", ["float64", "float32", "int64", "bfloat16", "complex128"])
@pytest.mark.parametrize("dst_dtype", _CONVERT_DTYPES)
def test_conversions_on_hostdev_equal_the_cpu(src_dtype, dst_dtype):
    # The plugin converts dtypes itself (copy_strided); its results must be bit-identical to the CPU's.
    values = np.array(_SPECIAL * 2, dtype=np.float64).reshape(5, 10)
    if src_dtype == "int64":
        values = np.array(_SPECIAL_INT * 2 + [3] * 10, dtype=np.int64).reshape(5, 10)
    src_cpu = st.from_numpy(values).to(dtype=getattr(st, src_dtype)).T  # (10, 5), not contiguous
    src_dev = src_cpu.to("hostdev:0")
    on_cpu = st.empty((10, 5), dtype=getattr(st, dst_dtype))
    on_dev = st.empty((10, 5), dtype=getattr(st, dst_dtype), device="hostdev:0")
    before = hostdev.counters(0)["strided_copies"]
    on_cpu.copy_(src_cpu)
    on_dev.copy_(src_dev)  # same device, different dtype: the plugin's copy_strided_v2, converting through
    assert hostdev.counters(0)["strided_copies"] == before + 1  # the core table's convert_strided
    assert _bits(on_dev) == _bits(on_cpu)
    if src_dtype in ("float64", "bfloat16"):  # the ABI 1.0 plugin: the core stages and converts
        on_old = st.empty((10, 5), dtype=getattr(st, dst_dtype), device="hostdev_abi10:0")
        on_old.copy_(src_cpu.to("hostdev_abi10:0"))
        assert _bits(on_old) == _bits(on_cpu)


def test_tensor_operations_on_hostdev_match_numpy():
    a = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    t = st.from_numpy(a).to("hostdev:1")
    np.testing.assert_array_equal(
        t.permute(3, 1, 0, 2).reshape(60, 2).cpu().numpy(), a.transpose(3, 1, 0, 2).reshape(60, 2)
    )
    cl = t.contiguous(memory_format=st.channels_last)
    assert str(cl.device) == "hostdev:1" and cl.is_contiguous(memory_format=st.channels_last)
    np.testing.assert_array_equal(cl.cpu().numpy(), a)
    np.testing.assert_array_equal(t[1, ::2, 1:].clone().cpu().numpy(), a[1, ::2, 1:])
    assert t[1, 2, 3, 4].item() == a[1, 2, 3, 4]
    t[0, :, 1] = 5.0
    b = a.copy()
    b[0, :, 1] = 5.0
    np.testing.assert_array_equal(t.cpu().numpy(), b)
    row = st.from_numpy(np.arange(5, dtype=np.float32)).to("hostdev:1")
    np.testing.assert_array_equal(
        row.expand(3, 5).contiguous().cpu().numpy(), np.broadcast_to(np.arange(5), (3, 5))
    )


def test_pickle_keeps_the_device():
    import pickle

    t = st.from_numpy(np.arange(6, dtype=np.int16).reshape(2, 3)).to("hostdev:1")
    back = pickle.loads(pickle.dumps(t))
    assert str(back.device) == "hostdev:1" and back.dtype == st.int16
    np.testing.assert_array_equal(back.cpu().numpy(), np.arange(6, dtype=np.int16).reshape(2, 3))


def test_broadcast_copy_into_hostdev():
    row = np.arange(5, dtype=np.float32)
    t = st.empty((3, 5), dtype=st.float32, device="hostdev:0")
    t.copy_(st.from_numpy(row))
    np.testing.assert_array_equal(t.cpu().numpy(), np.broadcast_to(row, (3, 5)))


# --- memory: counters return to their baseline -------------------------------------------------------


def test_memory_stats_show_the_plugin_allocator():
    t = st.empty((3000,), dtype=st.uint8, device="hostdev:1")
    stats = st.memory_stats("hostdev:1")
    assert stats["allocator"]["live_tokens"] >= 1 and stats["allocator"]["reserved_bytes"] >= 3072
    assert set(stats["allocator"]) == {"reserved_bytes", "live_tokens", "pending_frees", "streams"}
    del t


def test_core_and_plugin_agree_on_live_bytes():
    gc.collect()
    core0, plugin0 = _core_live()[0], hostdev.counters(0)["live_bytes"]
    t = st.empty((1000,), dtype=st.float32, device="hostdev:0")
    assert _core_live()[0] - core0 == 4000
    assert hostdev.counters(0)["live_bytes"] - plugin0 == 4000
    del t
    gc.collect()
    assert _core_live()[0] == core0
    assert hostdev.counters(0)["live_bytes"] == plugin0


def test_everything_allocated_is_freed_through_the_plugin():
    gc.collect()
    core0 = _core_live()
    plugin0 = _counters()
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    t = st.from_numpy(a).to("hostdev:0")
    views = [t[1:], t.permute(2, 0, 1), t.transpose(0, 2)[::2], t.reshape(12, 5), t.flatten()[3:]]
    copies = [v.contiguous() for v in views] + [
        t.clone(),
        t.to("hostdev:1"),
        t.to("hostdev:1").T.contiguous(),
    ]
    for v in views + copies:
        v.cpu()
    moved = _counters()
    assert sum(c["allocations"] for c in moved) > sum(c["allocations"] for c in plugin0)
    del t, views, copies, v
    gc.collect()
    assert _core_live() == core0
    for before, after in zip(plugin0, _counters(), strict=True):
        assert after["live_bytes"] == before["live_bytes"]
        assert after["live_allocations"] == before["live_allocations"], (before, after)


def test_threads_allocate_and_free_through_the_plugin():
    from concurrent.futures import ThreadPoolExecutor

    gc.collect()
    core0, plugin0 = _core_live(), _counters()
    a = np.arange(4096, dtype=np.float32).reshape(64, 64)

    def work(i: int) -> bool:
        ok = True
        for _ in range(50):
            t = st.from_numpy(a).to(f"hostdev:{i % 2}")
            ok &= bool(np.array_equal(t.T.contiguous().cpu().numpy(), a.T))
        return ok

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8)))
    gc.collect()
    assert _core_live() == core0
    for before, after in zip(plugin0, _counters(), strict=True):
        assert after["live_bytes"] == before["live_bytes"]
        assert after["allocations"] - before["allocations"] == after["frees"] - before["frees"] > 0


# --- bad input never crashes -------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["hostdev:0", "hostdev_abi10:0"])
def test_device_memory_is_not_readable_as_host_memory(device):
    t = st.zeros((2, 3), device=device)
    with pytest.raises((TypeError, RuntimeError, BufferError), match=r"cpu\(\)"):
        t.numpy()
    with pytest.raises((TypeError, RuntimeError, BufferError)):
        memoryview(t)
    if device.startswith("hostdev_abi10"):
        with pytest.raises(BufferError, match="DLPack"):  # hostdev_abi10 declares no DLPack device type
            t.__dlpack__()


def test_index_out_of_range_is_an_error():
    with pytest.raises((RuntimeError, ValueError), match="out of range"):
        st.empty((2,), device="hostdev:2")


def test_allocation_beyond_the_device_capacity():
    gc.collect()
    core0 = _core_live()
    before = hostdev.counters(0)
    with pytest.raises((MemoryError, RuntimeError), match="hostdev"):
        st.empty((1 << 31,), dtype=st.float32, device="hostdev:0")  # 8 GiB > hostdev's 1 GiB
    assert hostdev.counters(0)["failed_allocations"] == before["failed_allocations"] + 1
    assert _core_live() == core0
    assert st.zeros((3,)).numpy().tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("variant", ["bad_major", "bad_minor", "small_struct", "no_v2_memory"])
def test_incompatible_plugin_is_refused_with_the_fix(variant):
    match = {"no_v2_memory": r"allocate_v2", "small_struct": r"1\.1.*pip install -U slimtensor-core"}.get(
        variant, r"pip install -U slimtensor-core"
    )
    with pytest.raises(RuntimeError, match=match):
        hostdev.register_incompatible(variant)
    assert _device_entry(f"hostdev_{variant}") is None
    with pytest.raises(ValueError):
        st.Device(f"hostdev_{variant}")
    # CPU and the real plugin keep working.
    np.testing.assert_array_equal(st.ones((2,)).numpy(), np.ones(2, np.float32))
    np.testing.assert_array_equal(st.ones((2,), device="hostdev:0").cpu().numpy(), np.ones(2, np.float32))


def test_failing_plugin_init_is_refused():
    with pytest.raises(RuntimeError, match="st_plugin_init"):
        hostdev.register_incompatible("init_fails")
    assert st.zeros((2,)).numpy().tolist() == [0.0, 0.0]


def test_capsule_of_the_wrong_kind_is_refused():
    import slimtensor._C as core

    with pytest.raises((TypeError, ValueError, RuntimeError)):
        core._register_device_plugin(object(), "not a capsule")
    import datetime  # any capsule with another name: the datetime C API capsule

    with pytest.raises((TypeError, ValueError, RuntimeError)):
        core._register_device_plugin(datetime.datetime_CAPI, "a capsule with another name")


# --- discovery, in fresh interpreters ----------------------------------------------------------------


def _run(code: str, tmp_path: Path | None = None, timeout: float = 120, **env: str) -> dict:
    """Runs `code` in a fresh interpreter; it prints one JSON object on its last line."""
    full_env = {
        k: v for k, v in os.environ.items() if k not in ("SLIMTENSOR_DEVICE_AUTOLOAD", hostdev.ABSENT_ENV)
    }
    full_env.update(env)
    if tmp_path is not None:
        full_env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), full_env.get("PYTHONPATH", "")])
    try:
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the subprocess hung for {timeout} s (a deadlock?):\n{exc.stdout}\n{exc.stderr}")
    assert proc.returncode == 0, f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fake_distribution(tmp_path: Path, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """A real (if minimal) installed distribution on sys.path: dist-info metadata + entry_points.txt."""
    info = tmp_path / "fakeplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 0.1\n")
    lines = ["[slimtensor.devices]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for name, source in modules.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))


_REPORT = """
    import json, sys, warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # import slimtensor must neither warn nor load a plugin
        import slimtensor as st
    imported_at_import = "slimtensor_hostdev" in sys.modules
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = [d["name"] if isinstance(d, dict) else d.name for d in st.devices()]
    from slimtensor import _plugins
    cpu_ok = st.ones((3,)).numpy().tolist() == [1.0, 1.0, 1.0]
    print(json.dumps({
        "imported_at_import": imported_at_import,
        "devices": names,
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
        "records": {r.name: [r.loaded, r.reason] for r in _plugins.plugin_records()},
        "cpu_ok": cpu_ok,
    }))
"""


def test_discovery_is_lazy_and_devices_loads_plugins():
    out = _run(_REPORT)
    assert out["imported_at_import"] is False
    assert "hostdev" in out["devices"] and "cpu" in out["devices"]
    assert out["records"]["hostdev"] == [True, ""]
    assert out["warnings"] == []


def test_unknown_device_name_triggers_autoload():
    out = _run("""
        import json, sys
        import slimtensor as st
        t = st.zeros((2, 2), device="hostdev:1")
        print(json.dumps({"device": str(t.device), "values": t.cpu().numpy().tolist(),
                          "loaded": "slimtensor_hostdev" in sys.modules}))
    """)
    assert out == {"device": "hostdev:1", "values": [[0.0, 0.0], [0.0, 0.0]], "loaded": True}


def test_plugin_that_raises_warns_with_its_traceback(tmp_path):
    _fake_distribution(
        tmp_path,
        {"broken": "fake_broken_plugin:register", "missing": "fake_no_such_module:register"},
        {
            "fake_broken_plugin": """
            def register():
                _helper()

            def _helper():
                raise ValueError("boom from the fake plugin")
        """
        },
    )
    out = _run(_REPORT, tmp_path)
    assert out["imported_at_import"] is False
    assert out["cpu_ok"] is True
    assert "hostdev" in out["devices"]  # the good plugin still loads
    broken = [w for w in out["warnings"] if "'broken'" in w]
    assert len(broken) == 1, out["warnings"]
    assert broken[0].startswith("RuntimeWarning")
    assert "boom from the fake plugin" in broken[0]
    assert "Traceback" in broken[0] and "_helper" in broken[0]  # the plugin's own traceback
    assert "SLIMTENSOR_DEVICE_AUTOLOAD=0" in broken[0]
    assert any("'missing'" in w and "ModuleNotFoundError" in w for w in out["warnings"]), out["warnings"]
    assert out["records"]["broken"] == [False, "ValueError: boom from the fake plugin"]
    assert out["records"]["missing"][0] is False


def test_failing_plugin_on_the_unknown_name_path(tmp_path):
    # The core's autoload hook (first unknown device name) must warn and carry on the same way.
    _fake_distribution(
        tmp_path,
        {"broken": "fake_broken_plugin:register"},
        {"fake_broken_plugin": "def register():\n    raise OSError('no driver in the fake plugin')\n"},
    )
    out = _run(
        """
        import json, warnings
        import slimtensor as st
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values = st.ones((2,), device="hostdev:1").cpu().numpy().tolist()
        print(json.dumps({"values": values, "warnings": [str(w.message) for w in caught]}))
    """,
        tmp_path,
    )
    assert out["values"] == [1.0, 1.0]
    assert any("no driver in the fake plugin" in w and "Traceback" in w for w in out["warnings"]), out


def test_plugin_that_looks_up_devices_while_registering(tmp_path):
    # Re-entrancy: autoload started by an unknown device name runs a plugin that itself looks up an
    # unknown name and lists the devices. That must neither recurse nor deadlock.
    _fake_distribution(
        tmp_path,
        {"curious": "fake_curious_plugin:register"},
        {
            "fake_curious_plugin": """
            def register():
                import slimtensor as st
                try:
                    st.Device("fake_device_nobody_registers")
                except ValueError:
                    pass
                st.devices()
            """
        },
    )
    out = _run(
        """
        import json
        import slimtensor as st
        from slimtensor import _plugins
        values = st.zeros((2,), device="hostdev:0").cpu().numpy().tolist()
        records = {r.name: r.loaded for r in _plugins.plugin_records()}
        print(json.dumps({"values": values, "records": records}))
    """,
        tmp_path,
        timeout=30,
    )
    assert out["values"] == [0.0, 0.0]
    # Other installed plugins (the CUDA one, where nvcc built it) load too; each must load.
    assert out["records"].get("curious") and out["records"].get("hostdev") and all(out["records"].values())


def test_incompatible_plugin_through_an_entry_point_warns(tmp_path):
    _fake_distribution(tmp_path, {"hostdev_bad": "slimtensor_hostdev:register_incompatible"}, {})
    out = _run(_REPORT, tmp_path)
    assert out["cpu_ok"] is True and "hostdev" in out["devices"]
    assert "hostdev_bad_major" not in out["devices"]
    (warning,) = [w for w in out["warnings"] if "'hostdev_bad'" in w]
    assert "pip install -U slimtensor-core" in warning


def test_entry_point_that_is_not_callable_warns(tmp_path):
    _fake_distribution(
        tmp_path, {"notcallable": "fake_constant_plugin:VALUE"}, {"fake_constant_plugin": "VALUE = 3\n"}
    )
    out = _run(_REPORT, tmp_path)
    assert out["cpu_ok"] is True
    assert any("'notcallable'" in w and "must name a callable" in w for w in out["warnings"]), out["warnings"]


def test_autoload_off_disables_discovery():
    out = _run(
        """
        import json, sys
        import slimtensor as st
        from slimtensor import _plugins
        names = lambda: [d["name"] if isinstance(d, dict) else d.name for d in st.devices()]
        before = names()
        try:
            st.empty((2,), device="hostdev:0")
            unknown_error = None
        except ValueError as e:
            unknown_error = str(e)
        imported = "slimtensor_hostdev" in sys.modules
        _plugins.load_plugins()  # explicit loading still works
        zeros = st.zeros((2,), device="hostdev:0").cpu().numpy().tolist()
        print(json.dumps({"before": before, "unknown_error": unknown_error, "imported": imported,
                          "after": names(), "zeros": zeros}))
    """,
        SLIMTENSOR_DEVICE_AUTOLOAD="0",
    )
    assert "hostdev" not in out["before"]
    assert out["unknown_error"] is not None and "hostdev" in out["unknown_error"]
    assert out["imported"] is False
    assert "hostdev" in out["after"]
    assert out["zeros"] == [0.0, 0.0]


def test_absent_device_is_unavailable_with_the_reason():
    out = _run(
        """
        import json
        import slimtensor as st
        entry = [d for d in st.devices() if (d["name"] if isinstance(d, dict) else d.name) == "hostdev"][0]
        get = (lambda k: entry[k]) if isinstance(entry, dict) else (lambda k: getattr(entry, k))
        try:
            st.empty((2,), device="hostdev:0")
            error = None
        except RuntimeError as e:
            error = str(e)
        print(json.dumps({"available": get("available"), "reason": get("reason"), "error": error,
                          "cpu": st.ones((1,)).numpy().tolist()}))
    """,
        **{hostdev.ABSENT_ENV: "1"},
    )
    assert out["available"] is False
    assert "no hostdev hardware" in out["reason"]
    assert out["error"] is not None and "no hostdev hardware" in out["error"]
    assert out["cpu"] == [1.0]


def test_info_lists_plugins_and_their_failures(tmp_path):
    _fake_distribution(
        tmp_path,
        {"broken": "fake_broken_plugin:register"},
        {"fake_broken_plugin": "def register():\n    raise ValueError('boom for info')\n"},
    )
    env = {k: v for k, v in os.environ.items() if k != "SLIMTENSOR_DEVICE_AUTOLOAD"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "slimtensor", "info"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "hostdev" in proc.stdout and "slimtensor_hostdev 0.1.0" in proc.stdout
    assert "broken" in proc.stdout and "ValueError: boom for info" in proc.stdout

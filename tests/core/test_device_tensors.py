"""The same tensor tests on every available device (the CPU and whatever plugins register): factories,
views, copies within and across devices with dtype conversion, fill, item, refusals of host-only APIs,
and per-device memory statistics returning to baseline."""

from __future__ import annotations

import gc
import os
import pickle

import numpy as np
import pytest
import slimtensor as st


def _devices():
    out = []
    for info in st.devices():
        if not info.available:
            # SLIMTENSOR_REQUIRE_MPS=1 (tests/conftest.py): run on it anyway; each test fails with the reason
            if info.name == "mps" and os.environ.get("SLIMTENSOR_REQUIRE_MPS", "") == "1":
                out.append("mps:0")
            continue
        if info.name == "cpu":
            out.append("cpu")
            continue
        out.append(f"{info.name}:0")
        if info.count > 1:
            out.append(f"{info.name}:{info.count - 1}")
    return out


DEVICES = _devices()
NON_CPU = [d for d in DEVICES if d != "cpu"]


def host(t):
    return t.cpu().numpy()


def dev_stats(device, collect=False):
    if collect:
        import sys

        for name in (
            "last_type",
            "last_value",
            "last_traceback",
            "last_exc",
        ):  # a failure's frames hold tensors
            if hasattr(sys, name):
                setattr(sys, name, None)
        gc.collect()
    s = st.memory_stats(device.split(":")[0])
    return s["live_bytes"], s["live_storages"], s["live_tensors"]


@pytest.fixture(params=DEVICES)
def device(request):
    before = dev_stats(request.param)
    yield request.param
    after = dev_stats(request.param)
    if after != before:  # maybe garbage not yet collected (gc is slow with torch loaded: only when needed)
        after = dev_stats(request.param, collect=True)
    assert all(a <= b for a, b in zip(after, before, strict=False)), (
        f"memory on {request.param} did not return to its baseline: {before} -> {after}"
    )


def test_factories(device):
    dev = st.Device(device)
    for t in [
        st.empty(2, 3, device=device),
        st.zeros(2, 3, device=device),
        st.ones((2, 3), device=dev),
        st.full((2, 3), 7, device=device),
        st.empty_strided((2, 3), (1, 2), device=device),
        st.arange(6, device=device).reshape(2, 3),
    ]:
        assert t.device == dev and t.storage().device == dev
        assert t.shape == (2, 3)
    np.testing.assert_array_equal(host(st.zeros(2, 3, device=device)), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(host(st.ones(4, dtype=st.int8, device=device)), np.ones(4, np.int8))
    np.testing.assert_array_equal(host(st.full((3,), 2.5, device=device)), np.full(3, 2.5, np.float32))
    np.testing.assert_array_equal(host(st.arange(5, device=device)), np.arange(5))
    e = st.empty_like(st.zeros(2, device=device))
    assert e.device == dev
    assert st.empty_like(st.zeros(2), device=device).device == dev


def test_views_keep_device_and_layout(device):
    t = st.arange(60, device=device).reshape(3, 4, 5)
    cpu = st.arange(60).reshape(3, 4, 5)
    for op in [
        lambda x: x.permute(2, 0, 1),
        lambda x: x[1:, ::2, 3],
        lambda x: x.transpose(0, 2).unsqueeze(1),
        lambda x: x.narrow(2, 1, 3).select(0, 2),
        lambda x: x.view(12, 5),
        lambda x: x.as_strided((2, 2), (7, 1), 3),
        lambda x: x[:, :1].expand(3, 6, 5),
        lambda x: x.view(st.int32),
    ]:
        v, c = op(t), op(cpu)
        assert v.device == t.device
        assert (v.shape, v.stride(), v.storage_offset()) == (c.shape, c.stride(), c.storage_offset())
        assert v.storage().id == t.storage().id
        np.testing.assert_array_equal(host(v), c.numpy())


@pytest.mark.parametrize(
    "src_dt,dst_dt",
    [
        ("float32", "float32"),
        ("int64", "float16"),
        ("float32", "bfloat16"),
        ("uint8", "complex64"),
        ("float64", "int32"),
    ],
)
def test_copies_to_from_and_within_the_device(device, src_dt, dst_dt):
    a = (np.arange(60).reshape(3, 4, 5) % 17).astype(src_dt)
    src_cpu = st.from_numpy(a).permute(2, 0, 1)[1:]
    ref = np.ascontiguousarray(a.transpose(2, 0, 1)[1:]).astype(
        dst_dt if dst_dt != "bfloat16" else np.float32
    )
    on_dev = src_cpu.to(device)
    assert on_dev.device == st.Device(device)
    np.testing.assert_array_equal(host(on_dev), src_cpu.numpy())
    converted = on_dev.to(dtype=getattr(st, dst_dt))
    assert converted.device == st.Device(device)
    np.testing.assert_array_equal(
        host(converted.to(dtype=st.float32) if dst_dt == "bfloat16" else converted), ref
    )
    # strided destination on the device, source on the CPU (broadcast too)
    base = st.full((4, 3, 6), -1, dtype=getattr(st, dst_dt), device=device)
    dst = base[:, :, 1:5]
    dst.copy_(src_cpu)
    np.testing.assert_array_equal(host(dst.to(dtype=st.float32) if dst_dt == "bfloat16" else dst), ref)
    whole = host(base.to(dtype=st.float64)) if dst_dt != "complex64" else host(base).real
    assert np.all(whole[:, :, [0, 5]] == -1), "elements outside the destination view were written"
    row = st.zeros(4, 3, 4, dtype=st.float32, device=device)
    row.copy_(st.arange(4, dtype=st.float32))
    np.testing.assert_array_equal(host(row), np.broadcast_to(np.arange(4, dtype=np.float32), (4, 3, 4)))
    # device -> CPU into a strided destination
    back = st.zeros(4, 4, 3, dtype=getattr(st, src_dt)).permute(2, 1, 0)
    back.copy_(on_dev.permute(1, 2, 0))
    np.testing.assert_array_equal(back.numpy(), src_cpu.permute(1, 2, 0).numpy())


@pytest.mark.parametrize("other", NON_CPU)
def test_copies_between_devices(device, other):
    a = st.arange(24, dtype=st.float32, device=device).reshape(4, 6)
    b = st.zeros(6, 4, dtype=st.float64, device=other)
    b.copy_(a.t())
    np.testing.assert_array_equal(host(b), np.arange(24, dtype=np.float64).reshape(4, 6).T)
    c = a.to(other)
    assert c.device == st.Device(other)
    np.testing.assert_array_equal(host(c), host(a))


def test_clone_contiguous_fill_item(device):
    t = st.arange(24, dtype=st.float32, device=device).reshape(2, 3, 4)
    c = t.permute(2, 0, 1).contiguous()
    assert c.device == t.device and c.is_contiguous() and c.storage().id != t.storage().id
    np.testing.assert_array_equal(
        host(c), np.arange(24, dtype=np.float32).reshape(2, 3, 4).transpose(2, 0, 1)
    )
    assert t.contiguous() is t and t.to(device) is t
    k = t[:, 1:].clone()
    assert k.device == t.device and k.shape == (2, 2, 4)
    cl = (
        st.arange(120, dtype=st.float32, device=device)
        .reshape(2, 3, 4, 5)
        .contiguous(memory_format=st.channels_last)
    )
    assert cl.stride() == (60, 1, 15, 3) and cl.is_contiguous(memory_format=st.channels_last)
    t[0].fill_(-1.0)
    t[1, 2, 3] = 9.0
    assert t[0, 1, 2].item() == -1.0 and t[1, 2, 3].item() == 9.0
    assert t[1].tolist()[2] == [20.0, 21.0, 22.0, 9.0]
    z = st.ones(3, device=device).zero_()
    assert z.tolist() == [0.0, 0.0, 0.0]
    u = pickle.loads(pickle.dumps(t))
    assert u.device == t.device and u.tolist() == t.tolist()


def test_errors_on_the_device(device):
    t = st.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError):
        t.item()
    with pytest.raises(RuntimeError):
        st.zeros(1, 3, device=device).expand(2, 3).copy_(st.ones(2, 3))
    with pytest.raises(RuntimeError):
        t.copy_(st.zeros(4))
    with pytest.raises(ValueError):
        t.as_strided((3, 3), (3, 1))


@pytest.mark.parametrize(
    "device", NON_CPU or [pytest.param("none", marks=pytest.mark.skip("no plugin device"))]
)
def test_host_only_apis_refuse_clearly(device):
    t = st.zeros(2, device=device)
    with pytest.raises(TypeError) as info:
        t.numpy()
    assert "numpy()" in str(info.value) and ".cpu()" in str(info.value)
    with pytest.raises(TypeError):
        np.asarray(t)
    with pytest.raises(BufferError):
        memoryview(t)
    np.testing.assert_array_equal(np.asarray(t.cpu()), [0, 0])


@pytest.mark.parametrize(
    "device", NON_CPU or [pytest.param("none", marks=pytest.mark.skip("no plugin device"))]
)
def test_bad_device_index(device):
    name = device.split(":")[0]
    count = next(d.count for d in st.devices() if d.name == name)
    with pytest.raises((RuntimeError, ValueError)) as info:
        st.empty(2, device=f"{name}:{count}")
    assert "out of range" in str(info.value) or "index" in str(info.value)

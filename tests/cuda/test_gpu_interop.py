"""DLPack (kDLCUDA, with the stream handshake) and __cuda_array_interface__ v3 both ways with torch and cupy
on a real GPU: the same memory (by pointer), a write seen on both sides, and the consumer ordered after
the producer's stream without any host synchronisation."""

from __future__ import annotations

import gc

import pytest

from ._busy import keep_busy

pytestmark = pytest.mark.needs_cuda
st = pytest.importorskip("slimtensor")


@pytest.fixture(autouse=True)
def _registered(stc):
    stc.register()
    yield
    gc.collect()
    stc.synchronize()


def test_dlpack_torch_consumer_waits_for_our_stream(stc, cuda_torch) -> None:
    torch = cuda_torch
    s = stc.Stream()  # a non-blocking stream: torch's default stream does not wait for it by itself
    busy = keep_busy(s, value=5.0)  # the last fill writes 5, long after the host returns
    assert not s.query()
    with stc.stream(s):
        t = torch.from_dlpack(busy)  # torch passes its current stream; we make it wait for s
    assert t.data_ptr() == busy.data_ptr() and t.device.type == "cuda"
    head = t[:8].clone()  # on torch's stream: after the handshake, after our fills
    torch.cuda.synchronize()
    assert head.tolist() == [5.0] * 8
    t[0] = -1.0  # a write through torch, seen by slimtensor
    torch.cuda.synchronize()
    assert busy[0].item() == -1.0
    del t, head, busy


def test_dlpack_from_torch_waits_for_torchs_stream(stc, cuda_torch) -> None:
    torch = cuda_torch
    ts = torch.cuda.Stream()
    x = torch.empty(64 << 20, device="cuda")
    with torch.cuda.stream(ts):
        for k in range(100):
            x.fill_(float(k))  # the last fill writes 99
        s = st.from_dlpack(x)  # we pass our current stream; torch orders it after ts
    assert s.data_ptr() == x.data_ptr() and str(s.device) == "cuda:0"
    assert s[:4].clone().tolist() == [99.0] * 4  # our stream reads after torch's fills
    s[1] = 3.0  # a write through slimtensor, seen by torch
    stc.synchronize()
    assert x[1].item() == 3.0
    del s, x


def test_dlpack_stream_values(stc) -> None:
    x = st.zeros(4, device="cuda")
    assert x.__dlpack_device__() == (2, 0)
    x.__dlpack__(stream=-1)  # -1: the consumer asks for no synchronisation
    x.__dlpack__(stream=1)  # the legacy default stream
    x.__dlpack__(stream=stc.Stream().cuda_stream)
    with pytest.raises((ValueError, BufferError)):
        x.__dlpack__(stream=0)  # 0 is ambiguous for CUDA and not allowed
    del x


def test_dlpack_with_cupy_both_ways(stc, cupy) -> None:
    a = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    s = st.from_dlpack(a)
    assert s.data_ptr() == a.data.ptr and s.tolist() == a.get().tolist()
    s[2, 3] = 100.0
    stc.synchronize()
    assert float(a[2, 3]) == 100.0
    back = cupy.from_dlpack(s.T)
    assert back.data.ptr == a.data.ptr and back.shape == (4, 3) and back.strides == (4, 16)
    back[0, 1] = -7.0
    cupy.cuda.runtime.deviceSynchronize()
    assert s[1, 0].item() == -7.0
    del s, back


def test_cuda_array_interface_with_torch_both_ways(stc, cuda_torch) -> None:
    torch = cuda_torch
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4).t()  # strided
    s = st.asarray(t)  # torch has both protocols: DLPack first ...
    u = stc.from_cuda_array_interface(t)  # ... and the interface, explicitly
    assert s.data_ptr() == u.data_ptr() == t.data_ptr()
    assert u.shape == (4, 3) and u.stride() == (1, 4)
    u[0, 2] = 42.0
    stc.synchronize()
    assert t[0, 2].item() == 42.0
    x = st.arange(6, dtype=st.float32).to("cuda").reshape(2, 3)[:, 1:]
    v = torch.as_tensor(x, device="cuda")  # torch reads x.__cuda_array_interface__
    assert v.data_ptr() == x.data_ptr() and v.stride() == (3, 1)
    v[1, 0] = -2.0
    torch.cuda.synchronize()
    assert x[1, 0].item() == -2.0
    del s, u, t, x, v


def test_cuda_array_interface_with_cupy_both_ways(stc, cupy) -> None:
    c = cupy.arange(10, dtype=cupy.int32)[::2]
    s = st.asarray(c)
    assert s.data_ptr() == c.data.ptr and s.stride() == (2,) and s.tolist() == [0, 2, 4, 6, 8]
    s[4] = 80
    stc.synchronize()
    assert int(c[4]) == 80
    x = st.arange(8, dtype=st.float64).to("cuda")
    y = cupy.asarray(x)  # x.__cuda_array_interface__
    assert y.data.ptr == x.data_ptr()
    y[3] = 0.5
    cupy.cuda.runtime.deviceSynchronize()
    assert x[3].item() == 0.5
    del s, x, y

"""CUDA device tests on a real GPU (skipped with the reason elsewhere): allocator, streams, events, copies,
conversions bit-exact with the CPU, pinned memory, interop with torch and cupy, out-of-memory recovery."""

from __future__ import annotations

import gc
import json

import numpy as np
import pytest

from ._dtype_cases import DTYPES, cpu_convert, special_bytes
from .conftest import run_python

pytestmark = pytest.mark.needs_cuda
st = pytest.importorskip("slimtensor")


@pytest.fixture(autouse=True)
def _registered(stc):
    stc.register()
    yield
    gc.collect()
    stc.synchronize()


def test_no_context_in_a_fresh_process_after_import() -> None:
    # The driver's own view: the primary context of device 0 is inactive after importing both packages.
    code = (
        "import ctypes, json, slimtensor, slimtensor_cuda as c\n"
        "cu = ctypes.CDLL('libcuda.so.1'); cu.cuInit(0)\n"
        "dev = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(dev), 0)\n"
        "flags, active = ctypes.c_uint(), ctypes.c_int()\n"
        "cu.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active))\n"
        "print(json.dumps([active.value, c._state()]))\n"
    )
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    active, state = json.loads(res.stdout.strip().splitlines()[-1])
    assert active == 0 and not state["context_touched"]


def test_allocator_reuse_split_and_stats(stc) -> None:
    stc.empty_cache()
    before = stc.memory_stats()
    a = st.empty(1000, dtype=st.uint8, device="cuda")
    p = a.data_ptr()
    del a
    b = st.empty(1000, dtype=st.uint8, device="cuda")
    s = stc.memory_stats()
    assert b.data_ptr() == p  # same stream, same size: the cached block
    assert s["cache_hits"] > before["cache_hits"]
    assert s["raw_mallocs"] - before["raw_mallocs"] <= 1
    c = st.empty(1000, dtype=st.uint8, device="cuda")  # carved from the same 2 MiB segment
    assert stc.memory_stats()["splits"] > before["splits"]
    assert abs(c.data_ptr() - b.data_ptr()) < (2 << 20)
    del b, c
    assert "cudaMalloc calls" in stc.memory_summary()


def test_cross_stream_reuse_waits(stc) -> None:
    s1, s2 = stc.Stream(), stc.Stream()
    with stc.stream(s1):
        x = st.empty(1 << 20, dtype=st.float32, device="cuda")
    p = x.data_ptr()
    with stc.stream(s2):
        x.fill_(1.0)  # s2 uses x
    x.record_stream(s2)  # the core hands it to the allocator (slimtensor_cuda.Stream: cuda_stream, device_index)
    del x
    with stc.stream(s1):
        y = st.empty(1 << 20, dtype=st.float32, device="cuda")
    if not s2.query():
        assert y.data_ptr() != p  # not handed back while s2's work may still run
    del y
    s2.synchronize()


def test_events_order_and_time(stc) -> None:
    s = stc.Stream()
    start, end = stc.Event(enable_timing=True), stc.Event(enable_timing=True)
    x = st.empty(1 << 24, dtype=st.float32, device="cuda")
    with stc.stream(s):
        start.record()
        x.fill_(2.0)
        end.record()
    stc.current_stream().wait_event(end)
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0
    assert float(x[123].item()) == 2.0
    del x


@pytest.mark.parametrize("src_code,src", DTYPES, ids=[d[1] for d in DTYPES])
def test_every_dtype_pair_bit_exact(src_code: int, src: str) -> None:
    data = special_bytes(src_code, np.random.default_rng(src_code), n_random=1 << 14)
    raw = st.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())
    g = raw.to("cuda").view(getattr(st, src))
    for _, dst in DTYPES:
        want = cpu_convert(st, data, src, dst)
        got = g.to(getattr(st, dst)).contiguous().view(st.uint8).cpu().numpy().tobytes()
        assert got == want, f"{src}->{dst} differs from the CPU"


@pytest.mark.parametrize(
    "shape,perm",
    [
        ((64, 96), (1, 0)),
        ((7, 513, 1025), (2, 0, 1)),
        ((1000, 3000), (1, 0)),
        ((3, 5, 7, 9), (3, 2, 1, 0)),
        ((4, 33, 65, 3), (0, 3, 1, 2)),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "uint8", "complex128", "float64"])
def test_permuted_copies(shape, perm, dtype) -> None:
    n = int(np.prod(shape))
    host = st.from_numpy(
        np.random.default_rng(0).integers(0, 256, n * getattr(st, dtype).itemsize, dtype=np.uint8)
    )
    src = host.view(getattr(st, dtype)).reshape(*shape)
    want = src.permute(*perm).contiguous().view(st.uint8).numpy()
    got = src.to("cuda").permute(*perm).contiguous().view(st.uint8).cpu().numpy()
    assert np.array_equal(got, want)


def test_non_blocking_and_pinned(stc) -> None:
    h = st.empty(1 << 20, dtype=st.float32, pin_memory=True)
    assert h.is_pinned() and h.is_pinned("cuda")
    assert st.arange(4).pin_memory(device="cuda").is_pinned("cuda")
    h.fill_(3.0)
    d = st.empty(1 << 20, dtype=st.float32, device="cuda")
    d.copy_(h, non_blocking=True)
    back = st.empty(1 << 20, dtype=st.float32, pin_memory=True)
    back.copy_(d, non_blocking=True)
    stc.current_stream().synchronize()
    assert float(back[-1].item()) == 3.0
    del h, d, back


def test_oom_too_large_raises_and_recovers(stc) -> None:
    total = stc.get_device_properties().total_memory
    with pytest.raises(MemoryError, match=rf"could not allocate {total * 2} bytes: .*out of memory"):
        st.empty(total * 2, dtype=st.uint8, device="cuda")
    x = st.zeros(16, device="cuda")  # still usable
    assert float(x.sum().item() if hasattr(x, "sum") else x[0].item()) == 0.0
    del x


def test_oom_flush_cache_then_succeeds(stc) -> None:
    stc.empty_cache()
    free, _ = stc.mem_get_info()
    chunk = (free // 3) // (2 << 20) * (2 << 20)
    a, b = st.empty(chunk, dtype=st.uint8, device="cuda"), st.empty(chunk, dtype=st.uint8, device="cuda")
    del a, b  # ~2/3 of the free memory now cached in two segments
    before = stc.memory_stats()
    big = st.empty(chunk * 2 + (4 << 20), dtype=st.uint8, device="cuda")  # fits only after flushing
    after = stc.memory_stats()
    assert after["ooms"] == before["ooms"] + 1 and after["alloc_retries"] == before["alloc_retries"] + 1
    assert after["raw_frees"] >= before["raw_frees"] + 2 and after["raw_mallocs"] == before["raw_mallocs"] + 1
    del big
    stc.empty_cache()


def test_dlpack_and_cai_with_torch(stc, cuda_torch) -> None:
    torch = cuda_torch
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    s = st.from_dlpack(t)
    assert s.data_ptr() == t.data_ptr()
    s[0, 0] = 42.0
    assert t[0, 0].item() == 42.0
    back = torch.from_dlpack(s)
    assert back.data_ptr() == t.data_ptr()
    u = stc.from_cuda_array_interface(t)
    assert u.data_ptr() == t.data_ptr()
    arr = stc.CudaArray(s)
    assert torch.as_tensor(arr, device="cuda").data_ptr() == t.data_ptr()
    del s, back, u, arr


def test_cai_with_cupy(stc, cupy) -> None:
    x = cupy.arange(10, dtype=cupy.float64)
    s = stc.from_cuda_array_interface(x)
    assert s.data_ptr() == x.data.ptr
    s[3] = -1.0
    assert float(x[3]) == -1.0
    y = cupy.asarray(stc.CudaArray(s))
    assert y.data.ptr == x.data.ptr
    del s, y


def test_second_gpu_index_is_a_clear_error(stc) -> None:
    n = stc.device_count()
    with pytest.raises((RuntimeError, ValueError, IndexError), match="out of range|index"):
        st.ones(2).to(f"cuda:{n}")
    with pytest.raises(RuntimeError, match="out of range"):
        stc.Stream(device=n)


def test_streams_api(stc) -> None:
    s = stc.Stream()
    assert stc.current_stream() != s
    with stc.stream(s):
        assert stc.current_stream() == s
    assert stc.current_stream() == stc.default_stream()
    with stc.device(0):
        assert stc.current_device() == 0
    assert stc.get_device_capability()[0] >= 7


def test_core_integration_st_cuda_from_blob_and_cai(stc) -> None:
    assert st.cuda is stc
    x = st.arange(12, dtype=st.float32).to("cuda").reshape(3, 4)
    assert x.cuda() is x or x.cuda()._is_same(x)
    host = np.zeros(4, dtype=np.float32)
    with pytest.raises(ValueError, match="is not memory of cuda"):
        st.from_blob(host.ctypes.data, (4,), dtype=st.float32, device="cuda")
    y = st.from_blob(x.data_ptr() + 16, (2, 4), dtype=st.float32, device="cuda", owner=x)  # located: cuda:0
    assert str(y.device) == "cuda:0" and y.tolist() == [[4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]
    s = stc.Stream()
    with stc.stream(s):
        cai = x.T.__cuda_array_interface__
    assert cai["version"] == 3 and cai["data"] == (x.data_ptr(), False) and cai["stream"] == s.cuda_stream
    assert cai["shape"] == (4, 3) and cai["strides"] == (4, 16) and cai["typestr"] == "<f4"
    assert x.__cuda_array_interface__["stream"] == 1 and x.__cuda_array_interface__["strides"] is None
    assert not hasattr(x.to(dtype=st.bfloat16), "__cuda_array_interface__")  # no typestr: DLPack instead

    class Producer:  # only the CAI, as numba's arrays
        def __init__(self, cai):
            self.__cuda_array_interface__ = cai

    z = st.asarray(Producer(x.__cuda_array_interface__))
    assert z.data_ptr() == x.data_ptr() and z.tolist() == x.tolist()
    del x, y, z


def test_cai_export_to_torch(stc, cuda_torch) -> None:
    torch = cuda_torch
    x = st.arange(6, dtype=st.float32).to("cuda")
    t = torch.as_tensor(x, device="cuda")  # through x.__cuda_array_interface__
    assert t.data_ptr() == x.data_ptr()
    t[0] = 5.0
    assert x[0].item() == 5.0
    del t, x

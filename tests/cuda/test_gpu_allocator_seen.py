"""What the CUDA allocator shows on a real GPU: its events in st.trace() (cudaMalloc, cache hits, frees,
cudaFree) and copies between host and device, st.cuda.memory_summary() with the statistics' own numbers,
and the SLIMTENSOR_CUDA_ALLOC_CONF environment variable changing what it does (in fresh processes)."""

from __future__ import annotations

import gc
import json

import pytest

from .conftest import run_python

pytestmark = pytest.mark.needs_cuda
st = pytest.importorskip("slimtensor")


@pytest.fixture(autouse=True)
def _registered(stc):
    stc.register()
    yield
    gc.collect()
    stc.synchronize()


def test_the_trace_shows_allocations_cache_hits_frees_and_copies(stc) -> None:
    stc.empty_cache()
    with st.trace() as tr:
        host = st.arange(1 << 18, dtype=st.float32)  # 1 MiB
        dev = host.to("cuda")  # a new segment: cudaMalloc; a host -> device copy
        del dev
        gc.collect()  # the block goes back to the cache
        again = st.empty(1 << 18, dtype=st.float32, device="cuda")  # handed out again: a cache hit
        back = again.cpu()  # device -> host
        del again, back
        gc.collect()
        stc.synchronize()
        stc.empty_cache()  # the segment goes back: cudaFree
    ops = [e.op for e in tr.events if e.kind == "device_event"]
    for op in ("malloc", "cache_hit", "free", "cudaFree"):
        assert op in ops, f"no {op} event in {ops}"
    assert ops.index("malloc") < ops.index("free") < ops.index("cache_hit") < ops.index("cudaFree")
    assert all(e.device == "cuda:0" for e in tr.events if e.kind == "device_event")
    copies = [(e.src_device, e.device) for e in tr.events if e.kind == "copy"]
    assert ("cpu", "cuda:0") in copies and ("cuda:0", "cpu") in copies
    allocs = {e.device for e in tr.events if e.kind == "storage_alloc"}
    assert allocs == {"cpu", "cuda:0"}
    fig = st.viz.lifetimes(tr)  # device memory in its own lane, with the allocator's row
    assert any(a.get_label() == "lifetimes" for a in fig.axes)
    texts = [t.get_text() for a in fig.axes for t in a.texts]
    assert any(t.startswith("cuda:0 allocator:") for t in texts), texts
    del host


def test_a_device_to_device_conversion_makes_no_host_transfer(stc) -> None:
    a = st.arange(1 << 16, dtype=st.float32).to("cuda").reshape(256, 256)
    with st.trace() as tr:
        b = a.T.to(dtype=st.bfloat16).contiguous()
    copies = [(e.src_device, e.device, e.src_dtype, e.dtype) for e in tr.events if e.kind == "copy"]
    assert copies and all(src == dst == "cuda:0" for src, dst, _, _ in copies), copies
    assert ("cuda:0", "cuda:0", "float32", "bfloat16") in copies
    assert {e.device for e in tr.events if e.kind == "storage_alloc"} == {"cuda:0"}  # no host staging buffer
    assert (
        b.cpu().view(st.int16).tolist()
        == a.cpu().T.to(dtype=st.bfloat16).contiguous().view(st.int16).tolist()
    )
    del a, b


def test_a_free_waiting_for_another_stream_is_traced_as_deferred(stc) -> None:
    s1, s2 = stc.Stream(), stc.Stream()
    with stc.stream(s1):
        x = st.empty(1 << 20, dtype=st.float32, device="cuda")
    with stc.stream(s2):
        x.fill_(1.0)
    x.record_stream(s2)
    with st.trace() as tr:
        del x
        gc.collect()
    ops = [e.op for e in tr.events if e.kind == "device_event"]
    assert "free_deferred" in ops, ops
    s2.synchronize()


def test_memory_summary_reports_the_statistics(stc) -> None:
    x = st.empty(3 << 20, dtype=st.uint8, device="cuda")
    s = stc.memory_stats()
    text = stc.memory_summary()
    assert text.startswith("slimtensor CUDA allocator, cuda:0 (SLIMTENSOR_CUDA_ALLOC_CONF=")
    line = {row.split("  ")[0]: row for row in text.splitlines()[2:]}
    assert (
        str(s["raw_mallocs"]) in line["cudaMalloc calls"] and str(s["raw_frees"]) in line["cudaMalloc calls"]
    )
    assert str(s["cache_hits"]) in line["cache hits"] and f"{s['segments']} segments" in line["reserved"]
    assert s["allocated_bytes"] >= 3 << 20
    del x


ALLOC_PROBE = (
    "import gc, json, slimtensor as st, slimtensor_cuda as c\n"
    "for _ in range(3):\n"
    "    x = st.empty(1 << 20, dtype=st.float32, device='cuda'); del x; gc.collect()\n"
    "y = st.empty(3 << 20, dtype=st.uint8, device='cuda')\n"
    "s = c.memory_stats(); c.synchronize()\n"
    "print(json.dumps({k: s[k] for k in ('raw_mallocs', 'raw_frees', 'cache_hits', 'reserved_bytes')}))\n"
)


def _probe(conf: str) -> dict:
    res = run_python(ALLOC_PROBE, env={"SLIMTENSOR_CUDA_ALLOC_CONF": conf})
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_the_allocator_configuration_variable_changes_what_it_does() -> None:
    default = _probe("")
    assert default["cache_hits"] >= 2 and default["raw_mallocs"] <= 2
    uncached = _probe("caching:0")  # every free goes back to CUDA at once
    assert uncached["cache_hits"] == 0 and uncached["raw_mallocs"] >= 4 and uncached["raw_frees"] >= 3
    big = _probe("large_segment_mb:64")  # a 3 MiB request reserves a 64 MiB segment
    assert big["reserved_bytes"] >= 64 << 20 > default["reserved_bytes"]


def test_a_bad_allocator_configuration_is_a_clear_error() -> None:
    res = run_python(
        "import slimtensor as st\n"
        "try:\n    st.empty(4, device='cuda')\nexcept Exception as e:\n    print(type(e).__name__, e)\n",
        env={"SLIMTENSOR_CUDA_ALLOC_CONF": "caching:7"},
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "SLIMTENSOR_CUDA_ALLOC_CONF" in res.stdout and "caching:7" in res.stdout, res.stdout

"""CUDA device faults and hostile values on a real GPU (issue 14, "Device faults"; skipped with the reason
elsewhere): allocation beyond the GPU's memory, bad device pointers in from_blob, hostile values through
``device="cuda"`` calls, and kernel faults that poison the CUDA context (an illegal address, a device-side
assert), which must become clear errors in a process that then exits normally, never a hang or a crash.

Every case runs in a child interpreter: a poisoned context cannot be recovered in-process (CUDA errors such
as cudaErrorIllegalAddress are sticky), and a crash must fail its own test, not end the whole tests/cuda run.
A child prints one JSON line per step (flushed, "start" first), so a crash names the step it died in, with
the faulthandler's traceback.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from .conftest import run_python

pytestmark = pytest.mark.needs_cuda

PRELUDE = textwrap.dedent(
    """
    import faulthandler, gc, json, numpy as np, slimtensor as st, slimtensor_cuda as stc
    faulthandler.enable()
    stc.register()

    def report(**kw):
        print(json.dumps(kw), flush=True)

    def usable():
        x = st.arange(8, dtype=st.float32).to("cuda")
        return x.cpu().tolist() == [float(i) for i in range(8)]

    def attempt(name, fn):
        report(start=name)
        try:
            fn()
            out = {"name": name, "raised": None}
        except Exception as e:
            out = {"name": name, "raised": type(e).__name__, "message": str(e)}
        report(**out)
        return out
    """
)


def run_child(body: str, timeout: int = 120) -> tuple[dict, list[dict]]:
    """Runs PRELUDE + body in a fresh interpreter: ({name: result}, every JSON line). A crash or a non-zero
    exit fails the calling test, naming the last step started."""
    res = run_python(PRELUDE + textwrap.dedent(body), env={"PYTHONFAULTHANDLER": "1"}, timeout=timeout)
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    if res.returncode != 0:
        started = [line["start"] for line in lines if "start" in line]
        pytest.fail(
            f"the child exited with {res.returncode} in step {started[-1] if started else '(before any step)'}:\n"
            f"{res.stderr[-4000:]}"
        )
    return {line["name"]: line for line in lines if "name" in line}, lines


# ---- out of memory ---------------------------------------------------------------------------------------


def test_filling_the_gpu_raises_memory_error_then_everything_is_given_back() -> None:
    _, lines = run_child(
        """
        stc.empty_cache()
        before = stc.memory_stats()
        free, total = stc.mem_get_info()
        chunk = 1 << 30
        held, error = [], None
        try:
            for _ in range(total // chunk + 2):  # more than the device has: one must fail
                held.append(st.empty(chunk, dtype=st.uint8, device="cuda"))
        except MemoryError as e:
            error = str(e)
        held[-1].fill_(7)  # the tensors made before the failure are intact and usable
        last = held[-1][chunk - 1].item()
        n = len(held)
        del held
        gc.collect()
        stc.synchronize()
        stc.empty_cache()
        after = stc.memory_stats()
        report(error=error, n=n, free=free, last=last, before=before, after=after, again=stc.mem_get_info()[0],
               usable=usable())
        """
    )
    r = lines[-1]
    assert r["error"] and "could not allocate" in r["error"], r
    assert r["n"] >= (r["free"] >> 30) // 2, f"only {r['n']} GiB allocated of {r['free'] / 2**30:.1f} free"
    assert r["last"] == 7
    assert r["after"]["allocated_bytes"] == r["before"]["allocated_bytes"]
    assert r["after"]["reserved_bytes"] == r["before"]["reserved_bytes"], (
        "empty_cache() gives every segment back"
    )
    assert r["after"]["ooms"] > r["before"]["ooms"]
    assert r["again"] >= r["free"] - (64 << 20), "device memory not given back"
    assert r["usable"]


# ---- refusals: hostile values, impossible sizes, bad device pointers ------------------------------------

# name -> an expression that must raise an ordinary exception (never crash, never succeed), after which the
# device still works. Evaluated in one child, in order (module fixture `refusals`).
# Impossible sizes run in their own child (`impossible`), after the others: round 2 on the H200 saw a child that
# had run them crash (SIGSEGV) some steps later, so where a crash happens says which state caused it.
IMPOSSIBLE = {
    "empty-2^62-bytes": 'st.empty(2**62, dtype=st.uint8, device="cuda")',
    "empty-bytes-overflow": 'st.empty((2**31, 2**31), dtype=st.float64, device="cuda")',
    "empty-int64-max": 'st.empty(2**63 - 1, dtype=st.uint8, device="cuda")',
    "zeros-2^61-floats": 'st.zeros(2**61, dtype=st.float32, device="cuda")',
    "expand-to-device": "st.ones(1 << 20).expand(1 << 20, 1 << 20).to('cuda')",
}
REFUSED = {
    "empty-negative": 'st.empty(-1, device="cuda")',
    "empty-int64-min": 'st.empty(-(2**63), device="cuda")',
    "full-array-value": 'st.full((2,), np.array([1, 2]), device="cuda")',
    "fill-array-value": 'st.zeros(4, device="cuda").fill_(np.array([1, 2]))',
    "fill-raising-index": 'st.zeros(4, device="cuda").fill_(RaisingIndex())',
    "fill-nan-into-int": 'st.zeros(4, dtype=st.int64, device="cuda").fill_(float("nan"))',
    "fill-huge-into-int": 'st.zeros(4, dtype=st.int32, device="cuda").fill_(1e300)',
    "full-inf-into-int": 'st.full((3,), float("inf"), dtype=st.int16, device="cuda")',
    "narrow-huge-length": 'st.zeros(4, device="cuda").narrow(0, 2, 2**63 - 1)',
    "as_strided-past-storage": 'st.zeros(4, device="cuda").as_strided((4,), (2**62,))',
    "as_strided-huge-offset": 'st.zeros(4, device="cuda").as_strided((2,), (1,), 2**63 - 1)',
    "negative-step": 'st.zeros(4, device="cuda")[::-1]',
    "copy-onto-own-transpose": "(lambda m: m.copy_(m.T))(st.zeros((3, 3), device='cuda'))",
    "copy-partial-overlap": "(lambda b: b[2:10].copy_(b[0:8]))(st.arange(16, dtype=st.float32).to('cuda'))",
    "copy-into-expanded": 'st.zeros(1, device="cuda").expand(4).copy_(st.arange(4, dtype=st.float32))',
    "item-of-two": 'st.zeros(2, device="cuda").item()',
    "view-dtype-bad-size": 'st.zeros(3, device="cuda").view(st.complex128)',
    "pin-a-device-tensor": 'st.zeros(4, device="cuda").pin_memory()',
    "device-index-negative": 'st.zeros(4).to("cuda:-1")',
    "device-index-99": 'st.zeros(4).to("cuda:99")',
    "device-index-text": 'st.zeros(4).to("cuda:x")',
    "dlpack-stream-negative": 'st.zeros(4, device="cuda").__dlpack__(stream=-7)',
    "dlpack-stream-huge": 'st.zeros(4, device="cuda").__dlpack__(stream=2**70)',
    "dlpack-other-device": 'st.zeros(4, device="cuda").__dlpack__(max_version=(1, 0), dl_device=(2, 5))',
    "from_blob-null": 'st.from_blob(0, (4,), dtype=st.float32, device="cuda")',
    "from_blob-numpy-memory": 'st.from_blob(HOST.ctypes.data, (4,), dtype=st.float32, device="cuda")',
    "from_blob-pinned-memory": 'st.from_blob(PINNED.data_ptr(), (4,), dtype=st.float32, device="cuda")',
    "from_blob-unmapped": 'st.from_blob(0x7F0000000000 - 4096, (4,), dtype=st.float32, device="cuda")',
    "from_blob-kernel-half": 'st.from_blob(0xFFFF800000000000, (4,), dtype=st.float32, device="cuda")',
    "from_blob-freed": 'st.from_blob(FREED, (16,), dtype=st.float32, device="cuda")',
    "from_blob-wrong-index": 'st.from_blob(DEV.data_ptr(), (4,), dtype=st.uint8, device=f"cuda:{stc.device_count()}")',
    "from_blob-misaligned-float32": 'st.from_blob(DEV.data_ptr() + 2, (4,), dtype=st.float32, device="cuda")',
    "from_blob-misaligned-float64": 'st.from_blob(DEV.data_ptr() + 4, (2,), dtype=st.float64, device="cuda")',
    "view-misaligned-float16": 'st.from_blob(DEV.data_ptr() + 1, (16,), dtype=st.uint8, device="cuda").view(st.float16)',
}
# What each message must say, where the call alone does not say it.
REFUSAL_WORDS = {
    "from_blob-misaligned-float32": "not a multiple of 4 bytes",
    "from_blob-misaligned-float64": "not a multiple of 8 bytes",
    "view-misaligned-float16": "not a multiple of 2 bytes",
    "from_blob-freed": "from_blob",
    "from_blob-null": "is NULL",
    "from_blob-numpy-memory": "not memory of cuda",
    "from_blob-pinned-memory": "pinned host memory",
    "negative-step": "step must be positive",
    "copy-onto-own-transpose": "own memory in another layout",
    "copy-partial-overlap": "overlap",
}


@pytest.fixture(scope="module")
def refusals() -> dict:
    body = """
    class RaisingIndex:
        def __index__(self):
            raise ZeroDivisionError("hostile __index__")

    HOST = np.zeros(16, dtype=np.float32)
    PINNED = st.empty(16, dtype=st.float32, pin_memory=True)
    DEV = st.zeros(64, dtype=st.uint8, device="cuda")
    stc.empty_cache()
    gone = st.empty(64 << 20, dtype=st.uint8, device="cuda")
    FREED = gone.data_ptr()
    del gone
    gc.collect()
    stc.synchronize()
    stc.empty_cache()  # the segment is given back to CUDA: FREED is no memory of ours any more
    for name, expr in CALLS.items():
        r = attempt(name, lambda: eval(expr))
        report(name=name + ":usable", raised=None, usable=usable())
    ok = st.from_blob(DEV.data_ptr() + 8, (2,), dtype=st.float64, device="cuda", owner=DEV)
    report(name="aligned-view", raised=None, values=ok.cpu().tolist())
    base = st.arange(16, dtype=st.float32).to("cuda")
    base[8:16].copy_(base[0:8])  # disjoint: allowed
    report(name="disjoint-copy", raised=None, values=base.cpu().tolist())
    """
    results, _ = run_child(f"CALLS = {REFUSED!r}\n" + textwrap.dedent(body), timeout=300)
    return results


@pytest.fixture(scope="module")
def impossible() -> dict:
    body = """
    for name, expr in CALLS.items():
        attempt(name, lambda: eval(expr))
        report(name=name + ":usable", raised=None, usable=usable())
    for k in range(200):  # the allocator after its failures: many small tensors made, viewed and dropped
        report(start=f"small-{k}")
        x = st.zeros(4 + k % 7, device="cuda")
        attempt(f"small-{k}-negative-step", lambda: x[::-1])
        del x
    report(name="after", raised=None, stats=stc.memory_stats())
    """
    results, _ = run_child(f"CALLS = {IMPOSSIBLE!r}\n" + textwrap.dedent(body), timeout=300)
    return results


@pytest.mark.parametrize("name", list(IMPOSSIBLE))
def test_impossible_sizes_on_cuda_are_clear_errors(impossible, name) -> None:
    r = impossible[name]
    assert r["raised"] in ("ValueError", "MemoryError", "RuntimeError"), r
    assert r["message"], r
    assert impossible[name + ":usable"]["usable"], "the device does not work after the refusal"


def test_allocator_works_after_impossible_sizes(impossible) -> None:
    assert all(impossible[f"small-{k}-negative-step"]["raised"] == "ValueError" for k in range(200))
    assert impossible["after"]["stats"]["failed_allocations"] + impossible["after"]["stats"]["ooms"] > 0


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_on_cuda_with_a_clear_error(refusals, name) -> None:
    r = refusals[name]
    assert r["raised"] is not None, f"{REFUSED[name]} succeeded"
    assert r["raised"] in (
        "ValueError",
        "TypeError",
        "IndexError",
        "RuntimeError",
        "MemoryError",
        "OverflowError",
        "BufferError",
    ), r
    assert r["message"], r
    assert REFUSAL_WORDS.get(name, "") in r["message"], r
    assert refusals[name + ":usable"]["usable"], "the device does not work after the refusal"


def test_aligned_views_and_disjoint_copies_still_work(refusals) -> None:
    assert refusals["aligned-view"]["values"] == [0.0, 0.0]
    assert refusals["disjoint-copy"]["values"] == [float(i % 8) for i in range(16)]


# ---- kernel faults: the context is poisoned, the process is not ------------------------------------------

# After `fault` poisoned the context, every slimtensor CUDA call must raise a clear error (never hang, never
# crash), CPU tensors keep working, device tensors made before can be deleted, and the interpreter exits.
_AFTER_FAULT = """
attempt("synchronize", lambda: st.synchronize("cuda"))
attempt("to_host", lambda: keep.cpu())
attempt("new_tensor", lambda: st.zeros(4, device="cuda").cpu())
attempt("to_device", lambda: st.arange(4).to("cuda").cpu())
cpu_ok = st.arange(4).tolist() == [0, 1, 2, 3]
del keep
gc.collect()
report(cpu_ok=cpu_ok)
"""


def _run_fault(fault: str, error: str) -> None:
    body = "keep = st.arange(1024, dtype=st.float32).to('cuda')\n" + textwrap.dedent(fault) + _AFTER_FAULT
    results, lines = run_child(body)  # a hang fails on the timeout, a crash on the exit code
    assert lines[-1].get("cpu_ok"), lines
    seen = [r.get("message", "") for r in results.values() if r.get("raised")]
    assert any(error in m for m in seen), f"no error names {error}: {results}"
    for name in ("synchronize", "to_host", "new_tensor", "to_device"):  # none silently succeeds
        assert results[name]["raised"], f"{name} succeeded on a poisoned context: {results}"
        assert "cuda" in results[name]["message"].lower(), f"{name}: unclear error {results[name]}"


def test_illegal_address_in_a_copy_kernel_is_a_clear_error() -> None:
    # from_blob trusts a device pointer's extent (CUDA's runtime cannot tell an allocation's size): a view
    # of 1 TiB strides over a 4 KiB allocation makes the strided copy kernel read unmapped memory.
    _run_fault(
        """
        small = st.zeros(1024, dtype=st.float32, device="cuda")
        bad = st.from_blob(small.data_ptr(), (64,), (1 << 38,), dtype=st.float32, device="cuda", owner=small)
        attempt("fault", lambda: (bad.contiguous().cpu(), st.synchronize("cuda")))
        del bad, small
        """,
        "cudaErrorIllegalAddress",
    )


def test_device_side_assert_from_another_library_is_a_clear_error(cuda_torch) -> None:
    # torch's indexing kernel asserts on an out-of-range index; a device-side assert poisons the context for
    # every library in the process, and slimtensor then reports it.
    _run_fault(
        """
        import torch
        def fault():
            x = torch.zeros(4, device="cuda")
            x[torch.tensor([10], device="cuda")] = 1.0
            torch.cuda.synchronize()
        attempt("fault", fault)
        """,
        "cudaErrorAssert",
    )


def test_illegal_address_from_a_raw_kernel_is_a_clear_error(cupy) -> None:
    _run_fault(
        """
        import cupy
        k = cupy.RawKernel(r'extern "C" __global__ void poke(float* p) { p[threadIdx.x] = 1.0f; }', "poke")
        def fault():
            k((1,), (32,), (cupy.uint64(0xdead0000),))
            cupy.cuda.runtime.deviceSynchronize()
        attempt("fault", fault)
        """,
        "cudaErrorIllegalAddress",
    )

"""Device indices, peer copies and device properties on a real GPU: an index the machine does not have is a
clear error everywhere it can be given, the staged peer route (forced on one GPU) copies exactly what the
direct one does, `with st.cuda.device(i)` restores the device, and the properties agree with torch's."""

from __future__ import annotations

import gc
import json

import numpy as np
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


@pytest.fixture
def staged(stc):
    """Every device-to-device copy takes the staged peer route (Note [Peer copies]) inside the test."""
    from slimtensor_cuda import _C

    _C._set_peer_route("staged")
    try:
        yield _C
    finally:
        _C._set_peer_route("auto")


def test_an_index_past_the_last_gpu_is_a_clear_error_everywhere(stc) -> None:
    n = stc.device_count()
    bad = f"cuda:{n}"
    calls = {
        "to": lambda: st.ones(2).to(bad),
        "empty": lambda: st.empty(2, device=bad),
        "zeros": lambda: st.zeros(2, device=bad),
        "copy_ into": lambda: st.ones(2).to(bad, copy=True),
        "Stream": lambda: stc.Stream(device=n),
        "set_device": lambda: stc.set_device(n),
        "properties": lambda: stc.get_device_properties(n),
        "memory_stats": lambda: stc.memory_stats(n),
    }
    for name, call in calls.items():
        with pytest.raises((RuntimeError, ValueError, IndexError)) as info:
            call()
        message = str(info.value)
        assert "out of range" in message or "index" in message, f"{name}: {message}"
    with pytest.raises((RuntimeError, ValueError)):
        with stc.device(n):
            pass
    assert stc.current_device() == 0  # a refused switch leaves the current device as it was


def test_device_context_restores_the_device_also_on_errors(stc) -> None:
    assert stc.current_device() == 0
    with stc.device("cuda:0"):
        assert stc.current_device() == 0
        x = st.ones(3, device="cuda")  # "cuda" is the current device
    assert str(x.device) == "cuda:0"
    with pytest.raises(KeyError):
        with stc.device(0):
            raise KeyError("inside")
    assert stc.current_device() == 0
    with pytest.raises(ValueError, match="not a CUDA device"):
        with stc.device("cpu"):
            pass
    del x


@pytest.mark.parametrize(
    "shape,perm,src,dst",
    [
        ((64, 96), (1, 0), "float32", "float32"),
        ((7, 33, 65), (2, 0, 1), "float32", "bfloat16"),
        ((5, 6), (0, 1), "int64", "float16"),
    ],
)
def test_the_staged_peer_route_copies_exactly(staged, shape, perm, src, dst) -> None:
    n = int(np.prod(shape))
    host = st.arange(n, dtype=getattr(st, src)).reshape(*shape)
    want = host.permute(*perm).to(dtype=getattr(st, dst)).contiguous().view(st.uint8).numpy()
    on_gpu = host.to("cuda")[..., 1:] if shape[-1] > 1 else host.to("cuda")  # an offset view as the source
    before = staged._peer_copy_counts()
    out = st.empty(*[shape[p] for p in perm], dtype=getattr(st, dst), device="cuda")
    out.copy_(host.to("cuda").permute(*perm))
    counts = staged._peer_copy_counts()
    assert counts["staged"] > before["staged"] and counts["direct"] == before["direct"]
    assert np.array_equal(out.view(st.uint8).cpu().numpy(), want)
    part = st.empty_like(on_gpu).copy_(on_gpu)  # the staged extent starts at the view's offset
    np.testing.assert_array_equal(part.cpu().numpy(), on_gpu.cpu().numpy())
    whole = st.empty_like(host, device="cuda").copy_(host.to("cuda"))  # contiguous: one peer memcpy
    np.testing.assert_array_equal(whole.cpu().numpy(), host.numpy())
    del on_gpu, out, part, whole


def test_copies_on_one_gpu_take_no_peer_route_normally(stc) -> None:
    from slimtensor_cuda import _C

    before = _C._peer_copy_counts()
    a = st.arange(100, dtype=st.float32).to("cuda")
    b = a.reshape(10, 10).T.contiguous()
    assert b.cpu().tolist()[0][:3] == [0.0, 10.0, 20.0]
    assert _C._peer_copy_counts() == before
    with pytest.raises(ValueError, match="'auto' or 'staged'"):
        _C._set_peer_route("sideways")
    del a, b


def test_device_properties_agree_with_torch(stc, cuda_torch) -> None:
    torch = cuda_torch
    mine, theirs = stc.get_device_properties(0), torch.cuda.get_device_properties(0)
    assert mine.name == theirs.name and mine.total_memory == theirs.total_memory
    assert (mine.major, mine.minor) == (theirs.major, theirs.minor)
    assert mine.multi_processor_count == theirs.multi_processor_count
    assert stc.get_device_name() == theirs.name and stc.get_device_capability(0) == (
        theirs.major,
        theirs.minor,
    )
    assert stc.device_count() == torch.cuda.device_count()
    free, total = stc.mem_get_info()
    assert 0 < free <= total == mine.total_memory


def test_a_process_that_imported_slimtensor_can_fork_and_use_cuda_in_the_child() -> None:
    # Importing creates no context and initialises no driver (Note [Lazy CUDA]): a child forked after the
    # imports can use CUDA, and so can the parent afterwards. (Asking about devices initialises the driver,
    # as cudaGetDeviceCount does; a child forked after that cannot use CUDA, as with any CUDA program.)
    code = (
        "import os, slimtensor as st, slimtensor_cuda as c\n"
        "assert not c._state()['driver_initialised']\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    ok = st.arange(4, dtype=st.float32).to('cuda').tolist()\n"
        "    os._exit(0 if ok == [0.0, 1.0, 2.0, 3.0] else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status\n"
        "assert st.ones(2, device='cuda').tolist() == [1.0, 1.0]  # and the parent too, afterwards\n"
        "print('forked fine')\n"
    )
    res = run_python(code)
    assert res.returncode == 0 and "forked fine" in res.stdout, res.stdout + res.stderr[-2000:]


def test_cuda_visible_devices_is_honoured() -> None:
    probe = (
        "import json, slimtensor as st, slimtensor_cuda as c\n"
        "d = next(x for x in st.devices() if x.name == 'cuda')\n"
        "print(json.dumps([d.available, d.count, d.reason, c.device_count()]))\n"
    )
    none = run_python(probe, env={"CUDA_VISIBLE_DEVICES": ""})
    assert none.returncode == 0, none.stderr[-2000:]
    available, count, reason, n = json.loads(none.stdout.strip().splitlines()[-1])
    assert not available and count == 0 and n == 0 and reason
    first = run_python(probe, env={"CUDA_VISIBLE_DEVICES": "0"})
    assert first.returncode == 0, first.stderr[-2000:]
    available, count, _, n = json.loads(first.stdout.strip().splitlines()[-1])
    assert available and count == n == 1

"""The "nccl" backend of slimtensor.distributed (slimtensor_cuda._nccl, src/collectives/): what is checked
without NCCL or a GPU (the dtype and reduce-op tables against NCCL's and torch's names, a missing libnccl, the
refusals) and, on one GPU, world size 1 through NCCL (all_reduce values, streams, errors, no leaks).
Two ranks on two GPUs: test_nccl_two_gpus.py."""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys

import numpy as np
import pytest

# NCCL's enumerators (nccl.h; NVIDIA's API reference, "Types":
# https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/types.html), written here as the oracle.
NCCL_TYPES = {
    "ncclInt8": 0,
    "ncclUint8": 1,
    "ncclInt32": 2,
    "ncclUint32": 3,
    "ncclInt64": 4,
    "ncclUint64": 5,
    "ncclFloat16": 6,
    "ncclFloat32": 7,
    "ncclFloat64": 8,
    "ncclBfloat16": 9,
}
NCCL_OPS = {"ncclSum": 0, "ncclProd": 1, "ncclMax": 2, "ncclMin": 3, "ncclAvg": 4}
# torch dtype name -> the NCCL type torch's ProcessGroupNCCL sends it as
TORCH_TO_NCCL = {
    "int8": "ncclInt8",
    "uint8": "ncclUint8",
    "int32": "ncclInt32",
    "uint32": "ncclUint32",
    "int64": "ncclInt64",
    "uint64": "ncclUint64",
    "float16": "ncclFloat16",
    "float32": "ncclFloat32",
    "float64": "ncclFloat64",
    "bfloat16": "ncclBfloat16",
}
REFUSED = ["bool", "complex64", "complex128", "float8_e4m3fn", "int16", "uint16"]
# functional-collective op string -> torch.distributed.ReduceOp member -> NCCL op
OPS = {"sum": ("SUM", "ncclSum"), "avg": ("AVG", "ncclAvg"), "product": ("PRODUCT", "ncclProd")}
OPS |= {"min": ("MIN", "ncclMin"), "max": ("MAX", "ncclMax")}


def _nccl_module():
    try:
        from slimtensor_cuda import _nccl

        _nccl.library()
    except Exception as exc:  # noqa: BLE001  (the plugin or its shim library is not usable here)
        pytest.skip(f"libslimtensor_cuda_aoti is not loadable here: {type(exc).__name__}: {exc}")
    return _nccl


def _nccl_missing_reason() -> str:
    """Empty when NCCL opens here, else why not."""
    try:
        from slimtensor_cuda import _nccl

        _nccl.version()
    except Exception as exc:  # noqa: BLE001
        return f"NCCL is not usable here: {exc}"
    return ""


# ---- no GPU, no NCCL needed ---------------------------------------------------------------------------------


def test_dtype_table_matches_ncclDataType_t_and_torch():
    import slimtensor as st

    _nccl = _nccl_module()
    for name, nccl_name in TORCH_TO_NCCL.items():
        assert _nccl.datatype(getattr(st, name).code) == NCCL_TYPES[nccl_name], name
    for name in REFUSED:
        assert _nccl.datatype(getattr(st, name).code) == -1, f"{name} must be refused"


def test_reduce_ops_match_torch_and_ncclRedOp_t():
    from slimtensor.distributed import REDUCE_OPS

    _nccl = _nccl_module()
    assert set(REDUCE_OPS) == set(OPS)
    try:
        import torch.distributed as tdist
    except Exception:  # noqa: BLE001
        tdist = None
    for op, (member, nccl_name) in OPS.items():
        assert _nccl.reduce_op(op) == NCCL_OPS[nccl_name], op
        if tdist is not None and tdist.is_available():
            assert hasattr(tdist.ReduceOp, member), f"torch has no ReduceOp.{member}"


_PROBE = """
import ctypes, sys
from slimtensor_cuda import _nccl
try:
    _nccl.version()
    print("opened")
except RuntimeError as exc:
    print("error", exc)
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
print("NVLS", libc.getenv(b"NCCL_NVLS_ENABLE"))
"""


def test_missing_libnccl_names_the_pip_package(tmp_path):
    """SLIMTENSOR_CUDA_LIBRARY_DIRS pins the search to an empty folder; NVLS is still put off first."""
    import os

    _nccl_module()
    env = {k: v for k, v in os.environ.items() if k != "NCCL_NVLS_ENABLE"}
    env["SLIMTENSOR_CUDA_LIBRARY_DIRS"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "error" in r.stdout and "needs NCCL, which is not installed" in r.stdout, r.stdout
    assert "pip install nvidia-nccl-cu13" in r.stdout and "libnccl.so.2" in r.stdout
    assert str(tmp_path) in r.stdout
    assert "NVLS b'0'" in r.stdout, "the plugin sets NCCL_NVLS_ENABLE=0 before NCCL is used"


def test_the_user_choice_of_nvls_is_kept(tmp_path):
    import os

    _nccl_module()
    env = dict(os.environ, SLIMTENSOR_CUDA_LIBRARY_DIRS=str(tmp_path), NCCL_NVLS_ENABLE="1")
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "NVLS b'1'" in r.stdout


def test_the_backend_is_found_through_the_plugin_entry_point():
    import slimtensor.distributed as dist
    from slimtensor.distributed import _backend

    _nccl = _nccl_module()
    assert _backend.backend_factory("nccl") is _nccl.NcclBackend
    assert "nccl" in [ep.name for ep in _backend.metadata.entry_points(group=_backend.ENTRY_POINTS)]
    assert dist.is_initialized() is False


def test_cpu_tensors_are_refused_clearly():
    import slimtensor as st

    _nccl = _nccl_module()
    with pytest.raises(ValueError, match=r"all_reduce\(\): the nccl backend reduces CUDA tensors.*cpu"):
        _nccl.cuda_address(st.ones((4,)), "all_reduce()", 0)


def test_without_a_gpu_init_is_a_clear_error(tmp_path):
    import slimtensor.distributed as dist
    import slimtensor_cuda as stc

    _nccl_module()
    if stc.is_available():
        pytest.skip("a CUDA device is usable here: the world-size-1 tests below cover init")
    with pytest.raises(RuntimeError, match=r"the nccl backend needs a CUDA device"):
        dist.init_process_group("nccl", rank=0, world_size=1, init_method=f"file://{tmp_path}", timeout=10)
    assert not dist.is_initialized()


def test_null_and_bad_arguments_of_the_c_functions():
    _nccl = _nccl_module()
    support, L = _nccl.library()
    assert L.slimtensor_cuda_nccl_all_reduce(None, None, 1, 6, 0, 0) == 1
    assert "comm is NULL" in support.last_error()
    assert L.slimtensor_cuda_nccl_wait(None, None, 0) == 1
    comm = ctypes.c_void_p()
    assert L.slimtensor_cuda_nccl_create(None, 128, 0, 1, 0, 10.0, ctypes.byref(comm)) == 1
    assert "unique id" in support.last_error() and comm.value is None
    uid = (ctypes.c_uint8 * 128)()
    assert L.slimtensor_cuda_nccl_create(uid, 128, 2, 2, 0, 10.0, ctypes.byref(comm)) == 1
    assert "rank 2 must be in [0, size=2)" in support.last_error()
    assert L.slimtensor_cuda_nccl_unique_id(uid, 64) == 1 and "128 bytes" in support.last_error()
    L.slimtensor_cuda_nccl_release(None)  # ignored


# ---- one GPU, world size 1 ----------------------------------------------------------------------------------


@pytest.fixture
def nccl_world(tmp_path):
    """slimtensor.distributed with backend "nccl", rank 0 of 1 on cuda:0; afterwards every communicator,
    group and pending collective is gone."""
    import slimtensor.distributed as dist
    from slimtensor import _C

    why = _nccl_missing_reason()
    if why:
        pytest.skip(why)
    _nccl = _nccl_module()
    dist.init_process_group("nccl", rank=0, world_size=1, init_method=f"file://{tmp_path}", timeout=60)
    try:
        yield dist
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        gc.collect()
        assert _C._collective_counts() == (0, 0)
        assert _nccl.live_communicators() == 0


def _cuda(a):
    import slimtensor as st

    return st.asarray(a).to("cuda")


def _bf16(a):
    import ml_dtypes

    return np.asarray(a, np.float32).astype(ml_dtypes.bfloat16)


CASES = [(dtype, op) for dtype in ("float32", "bfloat16") for op in ("sum", "avg", "max", "min", "product")]


@pytest.mark.needs_cuda
@pytest.mark.parametrize("dtype,op", CASES)
def test_world_size_1_all_reduce(nccl_world, dtype, op):
    """One rank: every reduction of one contribution is that contribution, bit for bit."""
    base = (np.arange(96, dtype=np.float32).reshape(8, 12) - 40) / 8  # exact in bfloat16
    x = base if dtype == "float32" else _bf16(base)
    t = _cuda(x)
    nccl_world.all_reduce(t, op)
    got = t.cpu().numpy()
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got.astype(np.float32), x.astype(np.float32))


@pytest.mark.needs_cuda
def test_world_size_1_int_and_async_on_a_side_stream(nccl_world):
    import slimtensor_cuda as stc

    s = stc.Stream()
    t = _cuda(np.arange(1000, dtype=np.int64) * 3)
    stc.synchronize()  # the copy to the GPU ran on the default stream; s does not wait for it by itself
    with stc.stream(s):
        nccl_world.all_reduce(t, "sum", async_op=True)
        nccl_world.wait_tensor(t)
    s.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(1000) * 3)
    empty = _cuda(np.zeros((0,), np.float32))
    nccl_world.all_reduce(empty, "max")  # nothing to do, no error


@pytest.mark.needs_cuda
def test_world_size_1_refusals(nccl_world):
    import slimtensor as st

    with pytest.raises(RuntimeError, match=r"NCCL cannot reduce c10 dtype 2 "):  # int16: NCCL has none
        nccl_world.all_reduce(_cuda(np.ones(4, np.int16)), "sum")
    with pytest.raises(RuntimeError, match=r"avg needs a floating-point tensor"):
        nccl_world.all_reduce(_cuda(np.ones(4, np.int32)), "avg")
    with pytest.raises(ValueError, match=r"reduces CUDA tensors, and this one is on cpu"):
        nccl_world.all_reduce(st.ones((4,)), "sum")
    with pytest.raises(ValueError, match=r"must be contiguous"):
        nccl_world.all_reduce(_cuda(np.ones((4, 4), np.float32)).T, "sum")
    # the group still works after refusals
    t = _cuda(np.full(5, 2.0, np.float32))
    nccl_world.all_reduce(t, "sum")
    np.testing.assert_array_equal(t.cpu().numpy(), np.full(5, 2.0, np.float32))


@pytest.mark.needs_cuda
def test_world_size_1_through_the_c10d_shims(nccl_world):
    """The group is registered natively: the core's shims reach NCCL without Python. The functional
    all_reduce returns a new, reduced tensor; all_reduce_ reduces in place; wait_tensor returns its input."""
    import slimtensor as st
    from slimtensor.aoti import _lib

    L = _lib.lib()
    x = (np.arange(12, dtype=np.float32) - 6) / 4
    handles = [_lib.handle_from_capsule(_cuda(x).__dlpack__())]

    def call(shim, *args) -> int:
        out = ctypes.c_void_p()
        assert getattr(L, shim)(*args, ctypes.byref(out)) == 0, _lib.last_error()
        handles.append(out.value)
        return out.value

    try:
        reduced = call("aoti_torch_cpu__c10d_functional_all_reduce", handles[0], b"max", b"0")
        waited = call("aoti_torch_cpu__c10d_functional_wait_tensor", reduced)
        in_place = call("aoti_torch_cpu__c10d_functional_all_reduce_", handles[0], b"sum", b"0")
        call("aoti_torch_cpu__c10d_functional_wait_tensor", in_place)
        bad = ctypes.c_void_p()
        assert L.aoti_torch_cpu__c10d_functional_all_reduce(handles[0], b"sum", b"1", ctypes.byref(bad)) != 0
        assert "no process group named '1'" in _lib.last_error()
        for h in (waited, in_place):
            handles.remove(h)
            capsule, _ = _lib.capsule_from_handle(h)
            np.testing.assert_array_equal(st.from_dlpack(capsule).cpu().numpy(), x)
    finally:
        for h in handles:
            assert L.aoti_torch_delete_tensor_object(h) == 0
    from slimtensor import _C

    assert _C._collective_counts() == (1, 0), "nothing left in flight after wait_tensor"


@pytest.mark.needs_cuda
def test_destroy_frees_the_communicator_and_device_memory(tmp_path):
    import slimtensor as st
    import slimtensor.distributed as dist
    import slimtensor_cuda as stc

    why = _nccl_missing_reason()
    if why:
        pytest.skip(why)
    _nccl = _nccl_module()
    stc.synchronize()
    before = (st.memory_stats("cuda").get("live_bytes", 0), stc.memory_allocated())
    for i in range(3):  # make and destroy a group three times: nothing accumulates
        dist.init_process_group("nccl", rank=0, world_size=1, init_method=f"file://{tmp_path}/{i}")
        t = _cuda(np.ones(1 << 16, np.float32))
        dist.all_reduce(t)
        del t
        dist.destroy_process_group()
    gc.collect()
    stc.synchronize()
    assert _nccl.live_communicators() == 0
    assert (st.memory_stats("cuda").get("live_bytes", 0), stc.memory_allocated()) == before

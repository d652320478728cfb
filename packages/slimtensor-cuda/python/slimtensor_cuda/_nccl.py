"""slimtensor_cuda._nccl: the "nccl" backend of slimtensor.distributed (the ``slimtensor.distributed`` entry point
``nccl``; Note [Collective backends] in slimtensor/distributed/_backend.py).

Each group is one NCCL communicator of libslimtensor_cuda_aoti (slimtensor/c/nccl_collectives.h, Note [NCCL
communicators] in src/collectives/nccl_communicator.cpp), registered with the core under the group's name, so
a compiled model's c10d shims reach NCCL without Python. Rank 0 of the group makes the NCCL unique id and
publishes it in the rendezvous store under ``<group>/nccl_unique_id``; the others read it there.

Each rank uses one GPU: ``$LOCAL_RANK`` (the launcher sets it) when set, else the current CUDA device.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

from slimtensor.distributed import REDUCE_OPS

PIP_PACKAGE = "nvidia-nccl-cu13"
UNIQUE_ID_BYTES = 128
HEADER = ("include", "slimtensor", "c", "nccl_collectives.h")
_CUDA_TYPE = 1  # c10 DeviceType CUDA

_lock = threading.Lock()
_declared: Any = None


def library() -> tuple[Any, Any]:
    """(the CUDA plugin's AOTI support, its shim library with the functions of nccl_collectives.h declared)."""
    global _declared
    from slimtensor.aoti import _cdecl

    from . import _aoti

    support = _aoti.support()
    with _lock:
        if _declared is None:
            here = os.path.dirname(os.path.abspath(__file__))
            with open(os.path.join(here, *HEADER), encoding="utf-8") as f:
                protos = _cdecl.parse(f.read())
            missing = _cdecl.declare(support._lib, protos)
            if missing:
                raise RuntimeError(
                    f"slimtensor_cuda: {support.shim_library} lacks {missing}; reinstall slimtensor-cuda"
                )
            _declared = support._lib
    return support, _declared


def version() -> tuple[int, int, int]:
    """NCCL's version (major, minor, patch); RuntimeError naming the pip package when NCCL is missing."""
    support, L = library()
    v = ctypes.c_int32()
    if L.slimtensor_cuda_nccl_version(ctypes.byref(v)) != 0:
        raise RuntimeError(support.last_error())
    code = v.value
    return (code // 10000, code // 100 % 100, code % 100)


def _device(function: str) -> int:
    import slimtensor_cuda as plugin

    why = plugin.unavailable_reason()
    if why:
        raise RuntimeError(f"{function}: the nccl backend needs a CUDA device, and there is none here: {why}")
    local = os.environ.get("LOCAL_RANK")
    return int(local) if local is not None else plugin.current_device()


def cuda_address(tensor: Any, function: str, device: int) -> tuple[int, int]:
    """(device address, device index) of a contiguous CUDA tensor; ValueError naming ``function`` otherwise."""
    where = tensor.device
    if where.type != "cuda":
        raise ValueError(
            f"{function}: the nccl backend reduces CUDA tensors, and this one is on {where}; move it to "
            f"this rank's GPU first (t.to('cuda:{device}'))"
        )
    if not tensor.is_contiguous():
        raise ValueError(f"{function}: the tensor must be contiguous (t.contiguous())")
    return (tensor.data_ptr() if tensor.numel() > 0 else 0), where.index


class NcclBackend:
    """One NCCL communicator per group (the factory of Note [Collective backends])."""

    def __init__(self, store: Any, group_name: str, rank: int, size: int, timeout: float) -> None:
        fn = "init_process_group(backend='nccl')"
        self.group, self.rank, self.size, self.timeout = group_name, rank, size, timeout
        self.device = _device(fn)
        self._support, self._lib = library()
        key = f"{group_name}/nccl_unique_id"
        if rank == 0:
            uid = (ctypes.c_uint8 * UNIQUE_ID_BYTES)()
            if self._lib.slimtensor_cuda_nccl_unique_id(uid, UNIQUE_ID_BYTES) != 0:
                raise RuntimeError(f"{fn}: {self._support.last_error()}")
            store.set(key, bytes(uid))
            raw = bytes(uid)
        else:
            raw = store.get(key, timeout)
        if len(raw) != UNIQUE_ID_BYTES:
            raise RuntimeError(f"{fn}: the store's {key} holds {len(raw)} bytes, not an NCCL unique id")
        comm = ctypes.c_void_p()
        buf = (ctypes.c_uint8 * UNIQUE_ID_BYTES).from_buffer_copy(raw)
        if (
            self._lib.slimtensor_cuda_nccl_create(
                buf, UNIQUE_ID_BYTES, rank, size, self.device, float(timeout), ctypes.byref(comm)
            )
            != 0
        ):
            raise RuntimeError(f"{fn}: group {group_name!r}: {self._support.last_error()}")
        self._comm: int | None = comm.value

    def _live(self, function: str) -> int:
        if self._comm is None:
            raise RuntimeError(f"{function}: group {self.group!r} was closed (destroy_process_group())")
        return self._comm

    def register_group(self, name: str) -> None:
        """Registers the communicator itself as the core's collective group ``name`` (no Python per call)."""
        if self._lib.slimtensor_cuda_nccl_register(self._live("register_group()"), name.encode()) != 0:
            raise ValueError(self._support.last_error())

    def all_reduce(self, tensor: Any, op: str) -> None:
        fn = "all_reduce()"
        comm = self._live(fn)
        if op not in REDUCE_OPS:
            raise ValueError(f"{fn}: op must be one of {', '.join(REDUCE_OPS)}, got {op!r}")
        address, index = cuda_address(tensor, fn, self.device)
        if tensor.numel() == 0:
            return
        code = REDUCE_OPS.index(op)  # the order of ST_REDUCE_* (slimtensor/c/collectives.h)
        if (
            self._lib.slimtensor_cuda_nccl_all_reduce(
                comm, address, tensor.numel(), tensor.dtype.code, index, code
            )
            != 0
        ):
            raise RuntimeError(f"{fn} on group {self.group!r}: {self._support.last_error()}")

    def wait(self, tensor: Any) -> None:
        fn = "wait_tensor()"
        comm = self._live(fn)
        if tensor.device.type != "cuda" or tensor.numel() == 0:
            return  # nothing of this backend can be in flight on it
        address, index = cuda_address(tensor, fn, self.device)
        if self._lib.slimtensor_cuda_nccl_wait(comm, address, index) != 0:
            raise RuntimeError(f"{fn} on group {self.group!r}: {self._support.last_error()}")

    def close(self) -> None:
        """Drops this object's reference; the communicator ends once the registered group lets go too."""
        comm, self._comm = self._comm, None
        if comm is not None:
            self._lib.slimtensor_cuda_nccl_release(comm)

    def __del__(self) -> None:
        if getattr(self, "_comm", None) is not None:
            self.close()


def live_communicators() -> int:
    """NCCL communicators alive in this process (leak checks)."""
    return int(library()[1].slimtensor_cuda_nccl_live_communicators())


def datatype(dtype_code: int) -> int:
    """The ncclDataType_t NCCL is given for a c10 dtype code (-1: refused); the one table is in C++."""
    return int(library()[1].slimtensor_cuda_nccl_datatype(dtype_code))


def reduce_op(op: str) -> int:
    """The ncclRedOp_t NCCL is given for one of REDUCE_OPS."""
    return int(library()[1].slimtensor_cuda_nccl_reduce_op(REDUCE_OPS.index(op)))

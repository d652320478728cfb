"""slimtensor_cuda._aoti: what the CUDA plugin gives ``st.aoti.load(path, device="cuda")`` (the
``slimtensor.aoti`` entry point ``cuda``; the contract is in docs/aoti.md, "Device support").

Note [Binding a CUDA model]
A CUDA model .so needs three kinds of names it does not resolve itself: the core's shims (aoti_torch_*),
the CUDA shims and op fallbacks (aoti_torch_create_cuda_stream_guard, aoti_torch_cuda_addmm_out, ...) and
the CUDA runtime (cudaMalloc, cudaEventRecord, ...; the driver's cuLaunchKernel etc. come from libcuda.so.1,
which the model lists itself). The core's loader gives the extracted model one DT_NEEDED entry, on
``libslimtensor_cuda_aoti.so`` (the soname this module reports), and opens it RTLD_LOCAL | RTLD_DEEPBIND.
The model then searches itself, its own DT_NEEDED (this library first, then libcuda, libc, ...), then the
dependencies of those: libslimtensor (the core shims) and the plugin's libcudart.so.13 (the runtime). The
shim library is loaded here, RTLD_LOCAL, before the model, so the model finds it by soname. Nothing goes
into the global scope, so a libtorch in the process keeps its own shims and runtime.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
import threading
from collections.abc import Iterator
from ctypes import c_char_p, c_int32, c_int64, c_void_p
from typing import Any

SHIM_SONAME = "libslimtensor_cuda_aoti.so"
_EM_CUDA = 190

_lock = threading.Lock()
_support: CudaAOTISupport | None = None


def support() -> CudaAOTISupport:
    """The ``slimtensor.aoti`` entry point: the CUDA model support, made once."""
    global _support
    with _lock:
        if _support is None:
            _support = CudaAOTISupport()
        return _support


def cubin_architectures(so_path: str) -> list[int]:
    """The SM versions (90 for sm_90) of the CUDA ELF images (cubins) embedded in a model .so."""
    with open(so_path, "rb") as f:
        data = f.read()
    out: set[int] = set()
    i = data.find(b"\x7fELF", 1)
    while i >= 0:
        if i + 52 <= len(data) and data[i + 4] == 2 and struct.unpack_from("<H", data, i + 18)[0] == _EM_CUDA:
            flags = struct.unpack_from("<I", data, i + 48)[0]
            # ELF ABI version 8 and later (CUDA 12.8+) keep the SM in bits 8..15, older ones in bits 0..7.
            sm = (flags >> 8) & 0xFF if data[i + 8] >= 8 else flags & 0xFF
            if sm:
                out.add(sm)
        i = data.find(b"\x7fELF", i + 4)
    return sorted(out)


class CudaAOTISupport:
    """The CUDA half of an AOTI model: the shim library, architecture checks, streams, graphs."""

    device_type = "cuda"
    soname = SHIM_SONAME

    def __init__(self) -> None:
        import slimtensor_cuda as plugin

        self._plugin = plugin
        self._C = C = plugin._C_or_raise()  # loads libslimtensor_cuda (and cudart) first
        here = os.path.dirname(os.path.abspath(C.__file__))
        path = os.path.join(here, SHIM_SONAME)
        if not os.path.exists(path):
            raise RuntimeError(
                f"slimtensor_cuda: the AOTI shim library {path} is missing; reinstall slimtensor-cuda"
            )
        from slimtensor.aoti import _lib

        _lib.lib()  # libslimtensor first: the shim library's DT_NEEDED on its soname binds that copy
        self.shim_library = path
        # RTLD_DEEPBIND (as for models): its own calls of the core's shims bind to its libslimtensor even
        # where a libtorch was put in the global scope before it (Note [Sanitizer binding] for ASan).
        from slimtensor.aoti import _runtime

        self._lib = ctypes.CDLL(path, mode=_runtime.model_dlopen_mode())
        L = self._lib
        L.slimtensor_cuda_aoti_last_error.restype = c_char_p
        L.slimtensor_cuda_aoti_last_error.argtypes = []
        L.slimtensor_cuda_aoti_clear_last_error.restype = None
        L.slimtensor_cuda_aoti_clear_last_error.argtypes = []
        for name in ("slimtensor_cuda_aoti_model_bytes", "slimtensor_cuda_aoti_model_blocks"):
            getattr(L, name).restype = c_int64
            getattr(L, name).argtypes = []
        L.slimtensor_cuda_aoti_capture_begin.restype = c_int32
        L.slimtensor_cuda_aoti_capture_begin.argtypes = [
            c_int32,
            c_void_p,
            c_int32,
            ctypes.POINTER(c_void_p),
            ctypes.POINTER(ctypes.c_uint64),
            ctypes.POINTER(c_void_p),
        ]
        L.slimtensor_cuda_aoti_capture_end.restype = c_int32
        L.slimtensor_cuda_aoti_capture_end.argtypes = [c_void_p, c_void_p]
        L.slimtensor_cuda_aoti_graph_destroy.restype = None
        L.slimtensor_cuda_aoti_graph_destroy.argtypes = [c_void_p]
        self.graphs = _Graphs(self)

    # ---- loading ------------------------------------------------------------------------------------
    def device_index(self, device: str) -> int:
        """The index of "cuda" (the current device) or "cuda:N", checked against the visible devices."""
        kind, _, idx = device.partition(":")
        if kind != "cuda" or (idx and not idx.isdigit()):
            raise ValueError(f"slimtensor.aoti.load(): device={device!r}: expected 'cuda' or 'cuda:N'")
        why = self._plugin.unavailable_reason()
        if why:
            raise RuntimeError(
                f"slimtensor.aoti.load(): device={device!r}: the CUDA device is unavailable: {why}"
            )
        index = self._plugin.current_device() if idx == "" else int(idx)
        n = self._plugin.device_count()
        if not 0 <= index < n:
            raise ValueError(
                f"slimtensor.aoti.load(): device={device!r}: {n} CUDA device(s) visible (indices 0..{n - 1})"
            )
        return index

    def check_model(self, so_path: str, metadata: dict, index: int, source: str) -> None:
        """Refuses a model whose kernels were built for another GPU architecture, naming the one it needs."""
        major, minor = self._plugin.get_device_capability(index)
        sms = cubin_architectures(so_path)
        if not sms and metadata.get("AOTI_COMPUTE_CAPABILITY", "").isdigit():
            sms = [int(metadata["AOTI_COMPUTE_CAPABILITY"])]
        # A cubin runs on devices of its major version whose minor is at least its own.
        bad = [sm for sm in sms if sm // 10 != major or sm % 10 > minor]
        if bad:
            need = ", ".join(f"sm_{sm} (compute capability {sm // 10}.{sm % 10})" for sm in bad)
            name = self._plugin.get_device_name(index)
            raise RuntimeError(
                f"slimtensor.aoti.load(): {source!r} holds GPU kernels built for {need}, but cuda:{index} "
                f"({name}) has compute capability {major}.{minor}; compile the model on a GPU of compute "
                f"capability {bad[0] // 10}.{bad[0] % 10} to run it there, or on this GPU to run it here"
            )

    # ---- running ------------------------------------------------------------------------------------
    def stream_handle(self, index: int, stream: Any) -> int:
        """The cudaStream_t (an int) a run uses: ``stream`` if given, else the thread's current stream."""
        if stream is None:
            return self._C.current_stream(index)[1]
        if isinstance(stream, self._plugin.Stream):
            if stream.device_index != index:
                raise ValueError(
                    f"slimtensor.aoti: stream= is a stream of cuda:{stream.device_index} but the model runs on "
                    f"cuda:{index}"
                )
            return stream.cuda_stream
        for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
            v = getattr(stream, attr, None)
            if isinstance(v, int):
                return v
        if isinstance(stream, int) and not isinstance(stream, bool):
            return stream
        raise TypeError(
            "slimtensor.aoti: stream= takes a slimtensor_cuda.Stream, a torch or cupy CUDA stream, or a "
            f"cudaStream_t as an int; got {type(stream).__name__}"
        )

    def private_stream(self, index: int) -> Any:
        """A stream of the plugin's pool that nothing else uses while the caller holds it (for captures)."""
        return self._plugin.Stream(index)

    @contextlib.contextmanager
    def current_stream(self, index: int, handle: int) -> Iterator[None]:
        """Makes the stream ``handle`` of device ``index`` current inside the block (copies go there)."""
        C = self._plugin._C_or_raise()
        prev_dev = C.current_device()
        _, prev = C.current_stream(index)
        C.set_device(index)
        C.set_current_stream(index, handle)
        try:
            yield
        finally:
            C.set_current_stream(index, prev)
            C.set_device(prev_dev)

    def wait_stream(self, index: int, waiter: int, producer: int) -> None:
        """Makes the work queued later on ``waiter`` wait for what is queued now on ``producer``."""
        if waiter == producer:
            return
        C = self._plugin._C_or_raise()
        e = C.event_create(index, False, False)
        try:
            C.event_record(index, e, producer)
            C.stream_wait_event(index, waiter, e)
        finally:
            C.event_destroy(e)

    def synchronize_stream(self, index: int, handle: int) -> None:
        self._plugin._C_or_raise().stream_synchronize(index, handle)

    def last_error(self) -> str:
        msg = self._lib.slimtensor_cuda_aoti_last_error()
        return msg.decode("utf-8", "replace") if msg else ""

    def clear_last_error(self) -> None:
        self._lib.slimtensor_cuda_aoti_clear_last_error()

    def model_memory(self) -> dict[str, int]:
        """Device memory the models' runtimes hold through cudaMalloc (Note [Model device memory])."""
        return {
            "bytes": int(self._lib.slimtensor_cuda_aoti_model_bytes()),
            "blocks": int(self._lib.slimtensor_cuda_aoti_model_blocks()),
        }


class _Graphs:
    """CUDA graphs of model runs (Note [Model capture] in slimtensor/aoti/_model.py)."""

    def __init__(self, support: CudaAOTISupport) -> None:
        self._s = support
        self._lib = support._lib
        # slimtensor's _C calls it with each replay's sources (Note [Graph replay from Python])
        self.replay_fn = ctypes.cast(self._lib.slimtensor_cuda_aoti_graph_replay, c_void_p).value

    def begin(self, index: int, stream: int, static_inputs: list) -> int:
        """Starts capturing on ``stream``; the graph's first nodes copy into ``static_inputs`` (dense tensors of
        the device) on each replay (Note [Replay in one call] in src/aoti/graphs.cpp)."""
        n = len(static_inputs)
        ptrs = (c_void_p * max(1, n))(*[t.data_ptr() for t in static_inputs])
        sizes = (ctypes.c_uint64 * max(1, n))(*[t.nbytes for t in static_inputs])
        g = c_void_p()
        if self._lib.slimtensor_cuda_aoti_capture_begin(index, stream, n, ptrs, sizes, ctypes.byref(g)) != 0:
            raise RuntimeError(self._s.last_error())
        return g.value

    def end(self, graph: int, stream: int) -> None:
        """Ends the capture; raises (the graph is gone then) when CUDA refused what the run did."""
        if self._lib.slimtensor_cuda_aoti_capture_end(graph, stream) != 0:
            raise RuntimeError(self._s.last_error())

    def destroy(self, graph: int) -> None:
        self._lib.slimtensor_cuda_aoti_graph_destroy(graph)

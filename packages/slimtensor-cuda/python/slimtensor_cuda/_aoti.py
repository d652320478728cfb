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

import ctypes
import os
import struct
import threading
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
        C = plugin._C_or_raise()  # loads libslimtensor_cuda (and cudart) first
        here = os.path.dirname(os.path.abspath(C.__file__))
        path = os.path.join(here, SHIM_SONAME)
        if not os.path.exists(path):
            raise RuntimeError(
                f"slimtensor_cuda: the AOTI shim library {path} is missing; reinstall slimtensor-cuda"
            )
        from slimtensor.aoti import _lib

        _lib.lib()  # libslimtensor first: the shim library's DT_NEEDED on its soname binds that copy
        self.shim_library = path
        self._lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        L = self._lib
        L.slimtensor_cuda_aoti_last_error.restype = c_char_p
        L.slimtensor_cuda_aoti_last_error.argtypes = []
        L.slimtensor_cuda_aoti_current_stream.restype = c_int32
        L.slimtensor_cuda_aoti_current_stream.argtypes = [c_int32, ctypes.POINTER(c_void_p)]
        for name in ("slimtensor_cuda_aoti_model_bytes", "slimtensor_cuda_aoti_model_blocks"):
            getattr(L, name).restype = c_int64
            getattr(L, name).argtypes = []

    # ---- loading ------------------------------------------------------------------------------------
    def device_index(self, device: str) -> int:
        """The index of "cuda" (the current device) or "cuda:N", checked against the visible devices."""
        why = self._plugin.unavailable_reason()
        if why:
            raise RuntimeError(f"slimtensor.aoti.load(): device={device!r}: the CUDA device is unavailable: {why}")
        _, _, idx = device.partition(":")
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
            s = c_void_p()
            if self._lib.slimtensor_cuda_aoti_current_stream(index, ctypes.byref(s)) != 0:
                raise RuntimeError(self.last_error())
            return s.value or 0
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

    def last_error(self) -> str:
        msg = self._lib.slimtensor_cuda_aoti_last_error()
        return msg.decode("utf-8", "replace") if msg else ""

    def model_memory(self) -> dict[str, int]:
        """Device memory the models' runtimes hold through cudaMalloc (Note [Model device memory])."""
        return {
            "bytes": int(self._lib.slimtensor_cuda_aoti_model_bytes()),
            "blocks": int(self._lib.slimtensor_cuda_aoti_model_blocks()),
        }

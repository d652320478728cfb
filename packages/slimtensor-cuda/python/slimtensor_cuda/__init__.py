"""slimtensor_cuda: the CUDA device of slimtensor (device "cuda"): streams, events, devices, the allocator.

``register`` is the ``slimtensor.devices`` entry point. Importing this package loads nothing native and
calls no CUDA function (Note [Lazy CUDA] in src/device/runtime.h); the native module is loaded the first
time it is needed, and CUDA is initialised the first time a device is asked about. The API follows
``torch.cuda`` where torch defines it (``st.cuda`` is this module).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Event",
    "Stream",
    "DeviceProperties",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "empty_cache",
    "from_cuda_array_interface",
    "cuda_array_interface",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "is_available",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "register",
    "reset_peak_memory_stats",
    "set_device",
    "set_stream",
    "stream",
    "stream_memory_allocated",
    "synchronize",
    "unavailable_reason",
]

CUDART_SONAME = "libcudart.so.13"
CUDART_INSTALL_HINT = "pip install 'nvidia-cuda-runtime>=13.0,<14'"

_lock = threading.Lock()
_native: Any = None
_native_error: str | None = None
_registered = False


def _wheel_cudart() -> str | None:
    """The libcudart.so.13 of the nvidia-cuda-runtime wheel, found without importing anything."""
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(base, "cu13", "lib", CUDART_SONAME)
        if os.path.exists(path):
            return path
    return None


def _load() -> Any:
    """slimtensor_cuda._C, loaded once; None with _native_error set when it cannot load."""
    global _native, _native_error
    with _lock:
        if _native is not None or _native_error is not None:
            return _native
        cudart = _wheel_cudart()
        if cudart is None:
            _native_error = f"the CUDA runtime {CUDART_SONAME} of the nvidia-cuda-runtime wheel is not installed: {CUDART_INSTALL_HINT}"
            return None
        try:
            import ctypes

            # Loaded by path first, so _C's DT_NEEDED on the soname binds this file (the one torch loads too)
            # whatever the RPATH finds; loading it initialises nothing.
            ctypes.CDLL(cudart, mode=os.RTLD_LOCAL)
            from . import _C

            _native = _C
        except Exception as exc:  # noqa: BLE001  (any load failure becomes the device's reason)
            _native_error = f"the CUDA plugin's native module could not load ({type(exc).__name__}: {exc})"
        return _native


def _C_or_raise() -> Any:
    mod = _load()
    if mod is None:
        raise RuntimeError(f"slimtensor_cuda: the CUDA device is unavailable: {_native_error}")
    return mod


def register() -> None:
    """Registers the "cuda" device with slimtensor (its plugin discovery calls this). Idempotent.

    Creates no CUDA context: when the native module cannot load, the device registers as unavailable
    with the reason.
    """
    global _registered
    if _registered:
        return
    from slimtensor import _C as core  # inside: slimtensor imports us while it loads plugins

    mod = _load()
    if mod is not None:
        capsule = mod.plugin_capsule()
    else:
        from . import _fallback

        capsule = _fallback.capsule(_native_error or "the CUDA plugin could not load")
    core._register_device_plugin(capsule, "slimtensor_cuda")
    _registered = True


def _state() -> dict[str, bool]:
    """Which lazy steps have run: native_loaded, probed, driver_initialised, context_touched."""
    if _native is None:
        return {
            "native_loaded": False,
            "probed": False,
            "driver_initialised": False,
            "context_touched": False,
        }
    return {"native_loaded": True, **_native.state()}


def unavailable_reason() -> str | None:
    """None when CUDA can be used, else why not."""
    mod = _load()
    if mod is None:
        return _native_error
    return mod.unavailable_reason()


def is_available() -> bool:
    return unavailable_reason() is None


def device_count() -> int:
    mod = _load()
    return 0 if mod is None else mod.device_count()


def _index(dev: Any, what: str = "device") -> int | None:
    """None (the current device), an int, "cuda", "cuda:N" or an object with .type/.index -> index or None."""
    if dev is None:
        return None
    if isinstance(dev, bool):
        raise TypeError(f"slimtensor_cuda: {what} must be an int, 'cuda:N' or a Device, not bool")
    if isinstance(dev, int):
        return dev
    if isinstance(dev, str):
        name, _, idx = dev.partition(":")
        if name != "cuda" or (idx and not idx.isdigit()):
            raise ValueError(
                f"slimtensor_cuda: {what} {dev!r} is not a CUDA device; expected 'cuda' or 'cuda:N'"
            )
        return int(idx) if idx else None
    index = getattr(dev, "index", None)
    dtype = getattr(dev, "type", "cuda")
    if str(dtype) != "cuda":
        raise ValueError(f"slimtensor_cuda: {what} {dev!r} is not a CUDA device")
    return None if index is None or index < 0 else int(index)


def current_device() -> int:
    return _C_or_raise().current_device()


def set_device(dev: Any) -> None:
    idx = _index(dev)
    if idx is not None:
        _C_or_raise().set_device(idx)


@contextlib.contextmanager
def device(dev: Any) -> Iterator[None]:
    """Makes `dev` the current device inside the block (restored after, also on errors)."""
    idx = _index(dev)
    if idx is None:
        yield
        return
    C = _C_or_raise()
    prev = C.current_device()
    C.set_device(idx)
    try:
        yield
    finally:
        C.set_device(prev)


def synchronize(device: Any = None) -> None:
    """Waits for all work on the device (every stream)."""
    _C_or_raise().synchronize(_index(device))


@dataclass(frozen=True)
class DeviceProperties:
    index: int
    name: str
    total_memory: int
    major: int
    minor: int
    multi_processor_count: int
    l2_cache_size: int
    shared_memory_per_block: int
    warp_size: int
    pci_bus_id: int
    uuid: str


def get_device_properties(device: Any = None) -> DeviceProperties:
    return DeviceProperties(**_C_or_raise().device_properties(_index(device)))


def get_device_name(device: Any = None) -> str:
    return get_device_properties(device).name


def get_device_capability(device: Any = None) -> tuple[int, int]:
    p = get_device_properties(device)
    return (p.major, p.minor)


# ---- streams ---------------------------------------------------------------------------------------------
class Stream:
    """A CUDA stream of one device. ``Stream()`` takes a non-blocking stream from the pool (Note [Stream pool]:
    streams are recycled, never destroyed); ``current_stream()`` and ``default_stream()`` wrap existing ones."""

    __slots__ = ("_handle", "_device", "_priority", "_owned", "__weakref__")

    def __init__(self, device: Any = None, priority: int = 0) -> None:
        C = _C_or_raise()
        idx = _index(device)
        self._device = C.current_device() if idx is None else idx
        self._priority = int(priority)
        self._owned = False
        self._handle = C.stream_acquire(self._device, self._priority)
        self._owned = True

    @classmethod
    def _wrap(cls, device: int, handle: int) -> Stream:
        s = object.__new__(cls)
        s._device, s._handle, s._priority, s._owned = device, handle, 0, False
        return s

    def __del__(self) -> None:
        if getattr(self, "_owned", False) and _native is not None:
            _native.stream_release(self._device, self._priority, self._handle)

    @property
    def cuda_stream(self) -> int:
        """The cudaStream_t value (0: the legacy default stream)."""
        return self._handle

    @property
    def device_index(self) -> int:
        return self._device

    @property
    def priority(self) -> int:
        return self._priority

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self._handle)

    def query(self) -> bool:
        return _C_or_raise().stream_query(self._device, self._handle)

    def synchronize(self) -> None:
        _C_or_raise().stream_synchronize(self._device, self._handle)

    def wait_event(self, event: Event) -> None:
        _C_or_raise().stream_wait_event(self._device, self._handle, event._event_for(self._device))

    def wait_stream(self, other: Stream) -> None:
        self.wait_event(other.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and (self._device, self._handle) == (other._device, other._handle)

    def __hash__(self) -> int:
        return hash((self._device, self._handle))

    def __repr__(self) -> str:
        return f"<slimtensor_cuda.Stream device=cuda:{self._device} cuda_stream={self._handle:#x}>"


def current_stream(device: Any = None) -> Stream:
    """The calling thread's current stream of the device (initially the legacy default stream)."""
    dev, handle = _C_or_raise().current_stream(_index(device))
    return Stream._wrap(dev, handle)


def default_stream(device: Any = None) -> Stream:
    idx = _index(device)
    return Stream._wrap(current_device() if idx is None else idx, 0)


def set_stream(s: Stream) -> None:
    _C_or_raise().set_current_stream(s.device_index, s.cuda_stream)


@contextlib.contextmanager
def stream(s: Stream | None) -> Iterator[Stream | None]:
    """Makes `s` the current stream (and its device the current device) inside the block; None does nothing."""
    if s is None:
        yield None
        return
    C = _C_or_raise()
    prev_dev = C.current_device()
    _, prev_stream = C.current_stream(s.device_index)
    C.set_device(s.device_index)
    C.set_current_stream(s.device_index, s.cuda_stream)
    try:
        yield s
    finally:
        C.set_current_stream(s.device_index, prev_stream)
        C.set_device(prev_dev)


# ---- events ----------------------------------------------------------------------------------------------
class Event:
    """A CUDA event: record on a stream, make streams wait on it, query, synchronize, time."""

    __slots__ = ("_handle", "_device", "enable_timing", "blocking", "__weakref__")

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        if interprocess:
            raise ValueError(
                "slimtensor_cuda.Event(): interprocess events are not supported; use interprocess=False"
            )
        self.enable_timing, self.blocking = bool(enable_timing), bool(blocking)
        self._handle: int | None = None  # created on first record, on that stream's device (as torch)
        self._device = -1

    def _event_for(self, device: int) -> int:
        if self._handle is None:
            raise RuntimeError("slimtensor_cuda.Event: the event was never recorded; call record() first")
        if device != self._device:
            pass  # waiting on another device's event is legal in CUDA
        return self._handle

    def record(self, stream: Stream | None = None) -> None:
        C = _C_or_raise()
        stream = current_stream() if stream is None else stream
        if self._handle is None:
            self._handle = C.event_create(stream.device_index, self.enable_timing, self.blocking)
            self._device = stream.device_index
        elif stream.device_index != self._device:
            raise ValueError(
                f"slimtensor_cuda.Event.record(): the event belongs to cuda:{self._device}; the stream is on "
                f"cuda:{stream.device_index}; use one event per device"
            )
        C.event_record(self._device, self._handle, stream.cuda_stream)

    def wait(self, stream: Stream | None = None) -> None:
        stream = current_stream() if stream is None else stream
        stream.wait_event(self)

    def query(self) -> bool:
        return True if self._handle is None else _C_or_raise().event_query(self._handle)

    def synchronize(self) -> None:
        if self._handle is not None:
            _C_or_raise().event_synchronize(self._handle)

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds from this event to `end` (both recorded, completed, with enable_timing=True)."""
        if not (self.enable_timing and end.enable_timing):
            raise ValueError("slimtensor_cuda.Event.elapsed_time(): both events need enable_timing=True")
        return _C_or_raise().event_elapsed_ms(self._event_for(self._device), end._event_for(end._device))

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None and _native is not None:
            _native.event_destroy(self._handle)

    def __repr__(self) -> str:
        state = "unrecorded" if self._handle is None else f"cuda:{self._device} {self._handle:#x}"
        return f"<slimtensor_cuda.Event {state}>"


# ---- the allocator ---------------------------------------------------------------------------------------
def memory_stats(device: Any = None) -> dict[str, int]:
    """The caching allocator's statistics for the device (bytes allocated/reserved/peaks, cudaMalloc calls,
    cache hits, splits, merges, out-of-memory retries, ...)."""
    return dict(_C_or_raise().memory_stats(_index(device)))


def stream_memory_allocated(stream: Stream) -> int:
    """Bytes handed out now for work on ``stream`` (the allocator keeps each block for the stream it was
    allocated on): shows on which stream a piece of code allocated, e.g. a model run under a stream guard."""
    if not isinstance(stream, Stream):
        raise TypeError(f"stream_memory_allocated(): expected a slimtensor_cuda.Stream, got {type(stream).__name__}")
    return int(_C_or_raise().stream_allocated_bytes(stream.device_index, stream.cuda_stream))


def memory_allocated(device: Any = None) -> int:
    return memory_stats(device)["allocated_bytes"]


def memory_reserved(device: Any = None) -> int:
    return memory_stats(device)["reserved_bytes"]


def max_memory_allocated(device: Any = None) -> int:
    return memory_stats(device)["peak_allocated_bytes"]


def max_memory_reserved(device: Any = None) -> int:
    return memory_stats(device)["peak_reserved_bytes"]


def reset_peak_memory_stats(device: Any = None) -> None:
    _C_or_raise().reset_peak_memory_stats(_index(device))


def empty_cache(device: Any = None) -> None:
    """Gives every wholly free cached segment back to CUDA (after pending cross-stream frees complete)."""
    _C_or_raise().empty_cache(_index(device))


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device, as cudaMemGetInfo says."""
    return tuple(_C_or_raise().mem_get_info(_index(device)))  # type: ignore[return-value]


def _fmt(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def memory_summary(device: Any = None) -> str:
    """A readable table of the allocator's state for the device."""
    C = _C_or_raise()
    idx = _index(device)
    idx = C.current_device() if idx is None else idx
    s = C.memory_stats(idx)
    conf = os.environ.get(C.ALLOC_CONF_ENV, "")
    rows = [
        ("allocated", _fmt(s["allocated_bytes"]), f"peak {_fmt(s['peak_allocated_bytes'])}"),
        ("requested", _fmt(s["requested_bytes"]), "what callers asked for (before rounding to 512 B)"),
        (
            "reserved",
            _fmt(s["reserved_bytes"]),
            f"peak {_fmt(s['peak_reserved_bytes'])}, {s['segments']} segments",
        ),
        ("cached (free)", _fmt(s["cached_bytes"]), "in free blocks, reused on the stream that freed them"),
        (
            "active blocks",
            str(s["active_blocks"]),
            f"{s['pending_free_blocks']} freed, waiting for other streams",
        ),
        ("cudaMalloc calls", str(s["raw_mallocs"]), f"{s['raw_frees']} cudaFree calls"),
        ("cache hits", str(s["cache_hits"]), f"{s['cache_misses']} misses"),
        ("splits / merges", f"{s['splits']} / {s['merges']}", ""),
        (
            "out of memory",
            str(s["ooms"]),
            f"{s['alloc_retries']} retries after freeing the cache, {s['failed_allocations']} failed",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [f"slimtensor CUDA allocator, cuda:{idx} ({C.ALLOC_CONF_ENV}={conf or '<unset>'})", "-" * 72]
    lines += [f"{a:<{width}}  {b:>12}  {c}".rstrip() for a, b, c in rows]
    return "\n".join(lines)


# ---- __cuda_array_interface__ (v3) -----------------------------------------------------------------------
_TYPESTR = {
    "bool": "|b1",
    "uint8": "|u1",
    "int8": "|i1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "uint16": "<u2",
    "uint32": "<u4",
    "uint64": "<u8",
    "float16": "<f2",
    "float32": "<f4",
    "float64": "<f8",
    "complex64": "<c8",
    "complex128": "<c16",
}
_FROM_TYPESTR = {v: k for k, v in _TYPESTR.items()}
_FROM_TYPESTR.update({"<b1": "bool", "<u1": "uint8", "<i1": "int8"})


def _stream_int(s: Stream) -> int:
    # CAI v3: 1 is the legacy default stream, 2 the per-thread default; 0 is disallowed.
    return 1 if s.cuda_stream == 0 else s.cuda_stream


def cuda_array_interface(t: Any, stream: Stream | None = None) -> dict[str, Any]:
    """The ``__cuda_array_interface__`` (v3) dict of a slimtensor CUDA tensor: data pointer, shape, byte
    strides, typestr and the stream its pending work is on (the consumer synchronises with it)."""
    if str(getattr(t.device, "type", t.device)) != "cuda":
        raise TypeError(
            f"cuda_array_interface(): the tensor is on {t.device}, not a CUDA device; use .cuda() first"
        )
    name = t.dtype.name
    if name not in _TYPESTR:
        raise TypeError(
            f"cuda_array_interface(): {name} has no __cuda_array_interface__ typestr; exchange it through DLPack "
            "(st.from_dlpack / torch.from_dlpack) instead"
        )
    s = current_stream(t.device.index) if stream is None else stream
    return {
        "version": 3,
        "shape": tuple(t.shape),
        "typestr": _TYPESTR[name],
        "data": (t.data_ptr() if t.numel() else 0, False),
        "strides": tuple(st_ * t.itemsize for st_ in t.stride()),
        "descr": [("", _TYPESTR[name])],
        "stream": _stream_int(s),
    }


class CudaArray:
    """Exports a slimtensor CUDA tensor through ``__cuda_array_interface__`` (keeps the tensor alive)."""

    def __init__(self, t: Any) -> None:
        self.tensor = t
        self.__cuda_array_interface__ = cuda_array_interface(t)


def from_cuda_array_interface(obj: Any) -> Any:
    """A slimtensor tensor sharing the memory of an object with ``__cuda_array_interface__`` (cupy, torch,
    numba). Synchronises as v3 says: the current stream waits for the producer's stream (no wait when the
    producer gives ``stream: None``). The tensor keeps `obj` alive."""
    import slimtensor as st

    cai = obj.__cuda_array_interface__
    version = cai.get("version", 0)
    if version < 2:
        raise ValueError(f"from_cuda_array_interface(): version {version}; expected 2 or 3")
    if cai.get("mask") is not None:
        raise ValueError(
            "from_cuda_array_interface(): masked arrays are not supported; pass the data without a mask"
        )
    typestr = cai["typestr"]
    if typestr not in _FROM_TYPESTR:
        raise TypeError(
            f"from_cuda_array_interface(): typestr {typestr!r} has no slimtensor dtype "
            f"(known: {sorted(_FROM_TYPESTR)})"
        )
    dtype = getattr(st, _FROM_TYPESTR[typestr])
    shape = tuple(int(x) for x in cai["shape"])
    ptr, _readonly = cai["data"]
    itemsize = dtype.itemsize
    if cai.get("strides") is None:
        strides, acc = [], 1
        for n in reversed(shape):
            strides.append(acc)
            acc *= max(n, 1)
        strides = tuple(reversed(strides))
    else:
        if any(b % itemsize for b in cai["strides"]):
            raise ValueError(
                f"from_cuda_array_interface(): byte strides {cai['strides']} are not multiples of "
                f"the itemsize {itemsize}"
            )
        strides = tuple(b // itemsize for b in cai["strides"])
    C = _C_or_raise()
    index = C.locate_pointer(ptr) if ptr else C.current_device()
    producer = cai.get("stream") if version >= 3 else None
    if producer is not None:
        if producer == 0:
            raise ValueError(
                "from_cuda_array_interface(): stream 0 is disallowed by the protocol (use 1 for the "
                "legacy default stream or None for no synchronisation)"
            )
        handle = 0 if producer == 1 else producer
        ev = Event()
        ev.record(Stream._wrap(index, handle))
        current_stream(index).wait_event(ev)
    return st.from_blob(ptr, shape, strides, dtype, f"cuda:{index}", owner=obj)

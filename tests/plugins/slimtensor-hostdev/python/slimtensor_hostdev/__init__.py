"""slimtensor_hostdev: a test device plugin; `register` is its `slimtensor.devices` entry point.

hostdev (ABI 1.1) has memory handles that are tokens, not addresses, and streams that run their work later,
on worker threads, after a delay (README.md). Besides registering, this module exposes what the tests read
and drive: the plugin's counters, its streams (a stream is an int id; None means the calling thread's
current stream), and raw calls into its device table (Note [hostdev raw calls] in src/hostdev_module.c).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from . import _hostdev
from ._hostdev import (
    allocator_stats,
    default_stream,
    event_create,
    event_destroy,
    event_record,
    event_synchronize,
    get_current_device,
    get_delay,
    host_allocate,
    host_free,
    host_is_pinned,
    last_error,
    locate_pointer,
    pinned_stats,
    raw_allocate,
    raw_copy,
    raw_fill,
    raw_free,
    raw_read,
    raw_record_stream,
    raw_write,
    set_current_device,
    set_current_stream,
    set_delay,
    stream_counters,
    stream_create,
    stream_from_dlpack,
    stream_stall,
    stream_to_dlpack,
    stream_wait_event,
    synchronize,
    synchronize_stream,
)
from ._hostdev import current_stream as current_stream

__all__ = [
    "ABI10_DEVICE_NAME",
    "ABSENT_ENV",
    "CAPACITY_ENV",
    "DELAY_ENV",
    "DEVICE_COUNT",
    "DEVICE_NAME",
    "INCOMPATIBLE_VARIANTS",
    "JITTER_ENV",
    "abi10_counters",
    "allocator_stats",
    "counters",
    "current_stream",
    "default_stream",
    "delay",
    "event_create",
    "event_destroy",
    "event_record",
    "event_synchronize",
    "get_current_device",
    "get_delay",
    "host_allocate",
    "host_free",
    "host_is_pinned",
    "last_error",
    "locate_pointer",
    "pinned_stats",
    "raw_allocate",
    "raw_copy",
    "raw_fill",
    "raw_free",
    "raw_read",
    "raw_record_stream",
    "raw_write",
    "register",
    "register_abi10",
    "register_incompatible",
    "set_current_device",
    "set_current_stream",
    "set_delay",
    "stream",
    "stream_counters",
    "stream_create",
    "stream_from_dlpack",
    "stream_stall",
    "stream_to_dlpack",
    "stream_wait_event",
    "synchronize",
    "synchronize_stream",
]

DEVICE_NAME: str = _hostdev.DEVICE_NAME
DEVICE_COUNT: int = _hostdev.DEVICE_COUNT
ABI10_DEVICE_NAME: str = _hostdev.ABI10_DEVICE_NAME
ABSENT_ENV: str = _hostdev.ABSENT_ENV
CAPACITY_ENV: str = _hostdev.CAPACITY_ENV
DELAY_ENV: str = _hostdev.DELAY_ENV
JITTER_ENV: str = _hostdev.JITTER_ENV

# Plugins a core must refuse (Note [hostdev variants] in src/hostdev_variants.c): variant -> what is wrong.
INCOMPATIBLE_VARIANTS: dict[str, str] = {
    "bad_major": "abi_major 99",
    "bad_minor": "abi_minor newer than the core's",
    "small_struct": "says ABI 1.1 but its table ends before allocator_stats",
    "no_v2_memory": "says ABI 1.1 but has no allocate_v2",
    "init_fails": "st_plugin_init returns an error",
}

_registered: set[str] = set()


def _register(variant: str, source: str) -> None:
    if variant in _registered:
        return
    # Imported here, not at module level: slimtensor imports this module while it loads plugins.
    from slimtensor import _C

    _C._register_device_plugin(_hostdev.plugin_capsule(variant), source)
    _registered.add(variant)


def register() -> None:
    """Registers the hostdev device with slimtensor (called by slimtensor's plugin discovery).

    Idempotent: a user who calls it before discovery does not make discovery fail later.
    """
    _register("ok", "slimtensor_hostdev")


def register_abi10() -> None:
    """Registers `hostdev_abi10`, the same plugin built against the frozen ABI 1.0 header (idempotent).

    Not an entry point, so that installing the test plugin adds one device to every session, not two.
    """
    _register("abi10", "slimtensor_hostdev:abi10")


def register_incompatible(variant: str = "bad_major") -> None:
    """Hands slimtensor a deliberately broken plugin; slimtensor must raise RuntimeError, never crash."""
    if variant not in INCOMPATIBLE_VARIANTS:
        raise ValueError(
            f"register_incompatible(): unknown variant {variant!r}; "
            f"expected one of {sorted(INCOMPATIBLE_VARIANTS)}"
        )
    from slimtensor import _C

    _C._register_device_plugin(_hostdev.plugin_capsule(variant), f"slimtensor_hostdev:{variant}")


def counters(index: int = 0) -> dict[str, int]:
    """The plugin's own counters for hostdev:index (allocations, live bytes and tokens, bad handles, events...)."""
    return _hostdev.counters(index)


def abi10_counters(index: int = 0) -> dict[str, int]:
    """The counters of hostdev_abi10:index."""
    return _hostdev.abi10_counters(index)


@contextlib.contextmanager
def stream(index: int, stream_id: int) -> Iterator[int]:
    """Makes `stream_id` this thread's current stream of hostdev:index inside the block (like torch.cuda.stream)."""
    previous = _hostdev.current_stream(index)
    _hostdev.set_current_stream(index, stream_id)
    try:
        yield stream_id
    finally:
        _hostdev.set_current_stream(index, previous)


@contextlib.contextmanager
def delay(delay_us: int, jitter_us: int = 0) -> Iterator[None]:
    """Every stream waits `delay_us` (+ up to `jitter_us`) before each operation inside the block."""
    previous = _hostdev.set_delay(delay_us, jitter_us)
    try:
        yield
    finally:
        _hostdev.set_delay(*previous)

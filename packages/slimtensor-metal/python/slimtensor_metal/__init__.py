"""slimtensor_metal: the Metal (MPS) device plugin of slimtensor; `register` is its `slimtensor.devices` entry point.

On a machine without Metal (Linux, or a Mac without a GPU) the device registers as unavailable with the reason,
so slimtensor keeps working and `st.devices()` says why "mps" cannot be used.
"""

from __future__ import annotations

import os
import sys

if sys.platform == "darwin":
    # Note [Out of the flat namespace] (slimtensor/aoti/_macho.py): Python opens extensions without RTLD_LOCAL,
    # which on macOS puts their exports (here the aoti_torch_mps_* shims) in the flat namespace.
    _flags = sys.getdlopenflags()
    sys.setdlopenflags(_flags | os.RTLD_LOCAL)
    try:
        from . import _metal
    finally:
        sys.setdlopenflags(_flags)
else:
    from . import _metal

__all__ = ["DEVICE_NAME", "empty_cache", "memory_stats", "register", "synchronize", "unavailable_reason"]

DEVICE_NAME: str = _metal.DEVICE_NAME

_registered = False


def register() -> None:
    """Registers the MPS device with slimtensor (called by slimtensor's plugin discovery). Idempotent."""
    global _registered
    if _registered:
        return
    # Imported here, not at module level: slimtensor imports this module while it loads plugins.
    from slimtensor import _C

    _C._register_device_plugin(_metal.plugin_capsule(), "slimtensor_metal")
    _registered = True


def unavailable_reason() -> str | None:
    """None when the MPS device can be used, otherwise why not."""
    return _metal.unavailable_reason()


def empty_cache() -> None:
    """Gives every cached (free) MTLBuffer whose GPU work has finished back to Metal."""
    _metal.empty_cache()


def synchronize() -> None:
    """Waits until all work queued on every MPS stream has finished."""
    _metal.synchronize()


def memory_stats() -> dict[str, int]:
    """The allocator's counters: allocated/reserved/cached bytes (and peaks), cache hits, misses, evictions, ..."""
    return dict(_metal.memory_stats())

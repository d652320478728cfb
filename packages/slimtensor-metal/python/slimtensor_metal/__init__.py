"""slimtensor_metal: the Metal (MPS) device plugin of slimtensor; `register` is its `slimtensor.devices` entry point.

On a machine without Metal (Linux, or a Mac without a GPU) the device registers as unavailable with the reason,
so slimtensor keeps working and `st.devices()` says why "mps" cannot be used.
"""

from __future__ import annotations

import os

from . import _metal

__all__ = [
    "DEVICE_NAME",
    "aoti_libraries",
    "empty_cache",
    "memory_stats",
    "register",
    "synchronize",
    "unavailable_reason",
]

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


def aoti_libraries() -> list[str]:
    """The library that defines the MPS AOTI shims (torch's shim_mps.h and the mm fallbacks): this package's
    extension module, the very copy this process runs. st.aoti.load(path, device="mps") binds models to it
    and to the core (Note [Device shim libraries] in slimtensor/aoti/_device_libraries.py)."""
    return [os.path.abspath(_metal.__file__)]


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

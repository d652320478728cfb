"""slimtensor_hostdev: a test device plugin; `register` is its `slimtensor.devices` entry point."""

from __future__ import annotations

from . import _hostdev

__all__ = [
    "ABSENT_ENV",
    "CAPACITY_ENV",
    "DEVICE_COUNT",
    "DEVICE_NAME",
    "INCOMPATIBLE_VARIANTS",
    "counters",
    "register",
    "register_incompatible",
]

DEVICE_NAME: str = _hostdev.DEVICE_NAME
DEVICE_COUNT: int = _hostdev.DEVICE_COUNT
ABSENT_ENV: str = _hostdev.ABSENT_ENV
CAPACITY_ENV: str = _hostdev.CAPACITY_ENV

# Plugins a core must refuse (Note [hostdev variants] in src/hostdev_variants.c): variant -> what is wrong.
INCOMPATIBLE_VARIANTS: dict[str, str] = {
    "bad_major": "abi_major 99",
    "bad_minor": "abi_minor newer than the core's",
    "small_struct": "struct_size smaller than the core's st_device_table",
    "init_fails": "st_plugin_init returns an error",
}


_registered = False


def register() -> None:
    """Registers the hostdev device with slimtensor (called by slimtensor's plugin discovery).

    Idempotent: a user who calls it before discovery does not make discovery fail later.
    """
    global _registered
    if _registered:
        return
    # Imported here, not at module level: slimtensor imports this module while it loads plugins.
    from slimtensor import _C

    _C._register_device_plugin(_hostdev.plugin_capsule("ok"), "slimtensor_hostdev")
    _registered = True


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
    """The plugin's own counters for hostdev:index (allocations, frees, live bytes, copies, fills, ...)."""
    return _hostdev.counters(index)

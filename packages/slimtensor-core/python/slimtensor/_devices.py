"""Devices, memory statistics and threads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import _C


@dataclass(frozen=True)
class DeviceInfo:
    """One registered device type: whether it can be used, and why not."""

    name: str
    code: int
    available: bool
    reason: str
    count: int
    source: str
    plugin_version: str

    def __str__(self) -> str:
        state = f"{self.count} device(s)" if self.available else f"unavailable: {self.reason}"
        return f"{self.name} (c10 code {self.code}, {self.source}): {state}"


def devices() -> list[DeviceInfo]:
    """The registered device types (CPU first), loading device plugins on first use."""
    from . import _plugins

    _plugins.autoload()  # once per process; off under SLIMTENSOR_DEVICE_AUTOLOAD=0 (Note [Plugin discovery])
    return [DeviceInfo(**{k: d[k] for k in DeviceInfo.__dataclass_fields__}) for d in _C._devices()]


def memory_stats(device: Any = None) -> dict[str, Any]:
    """Live and peak bytes, live storages, tensors and AOTI handles.

    With ``device`` (a Device or a string such as "cpu"), the counters of that device type; without it,
    a dict of every registered device's counters keyed by device name.
    """
    if device is not None:
        return _C._memory_stats(device)
    from . import _plugins

    _plugins.autoload()  # every device type, plugins included (Note [Plugin discovery])
    return {d["name"]: _C._memory_stats_by_code(d["code"]) for d in _C._devices()}


def set_num_threads(n: int) -> None:
    """Threads for slimtensor's own kernels (copies, fills), the BLAS behind the AOTI op fallbacks and the
    OpenMP kernels of AOTInductor models, together."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"set_num_threads(): expected an int but got {type(n).__name__}")
    _C.set_num_threads(n)  # validates 1..64 first
    from . import aoti

    aoti.set_num_threads(n)

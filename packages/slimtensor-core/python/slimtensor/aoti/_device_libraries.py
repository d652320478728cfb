"""The libraries a model compiled for a plugin's device binds to, as the plugin names them.

Note [Device shim libraries]
A model compiled for a device calls the core's device-generic ``aoti_torch_*`` functions, its device's own
shims (``aoti_torch_mps_*``; ``aoti_torch_cuda_*`` and the CUDA guards and streams) and perhaps functions of
the device's runtime that the model has no ``DT_NEEDED`` for (CUDA models call ``cudaMalloc``). The device
shims belong to the device's plugin (DESIGN.md §2), so the plugin names where they are: the Python module it
registered from (the device's ``source`` in ``st.devices()``, e.g. ``slimtensor_metal``) defines

    def aoti_libraries() -> list[str]

returning absolute paths of shared libraries: its shim library first, then any library its models need
besides. ``st.aoti.load(path, device=...)`` then
  1. resolves every undefined ``aoti_torch_*`` name of the model against the core and those libraries, in
     that order, and refuses a model that needs a name none of them defines (naming the libraries searched);
  2. refuses an unavailable device with the plugin's own reason (``mps`` on Linux: "Metal needs macOS on
     Apple silicon"), before anything is loaded;
  3. binds the model to the core and every listed library at once, through one library of ``DT_NEEDED``
     entries written for it (Note [A library of DT_NEEDED entries] in ``_elf.py``), opened
     ``RTLD_LOCAL | RTLD_DEEPBIND`` as CPU models are (Note [Binding the model to slimtensor]).
A CPU model needs only the core and keeps its single ``DT_NEEDED`` on ``libslimtensor``. A plugin without
``aoti_libraries`` runs no AOTI models: loading one for its device says so and names the plugin.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass

from . import _elf


@dataclass(frozen=True)
class DevicePlugin:
    """A registered device type and the libraries its plugin binds models to."""

    device: str  # "mps"
    source: str  # the module the plugin registered from: "slimtensor_metal"
    available: bool
    reason: str  # why not, when unavailable
    libraries: tuple[str, ...]  # from the plugin's aoti_libraries(): its shim library first


def device_plugin(device_type: str) -> DevicePlugin:
    """The plugin behind ``device_type`` (plugins are loaded first); RuntimeError when there is none, or when
    it names no usable libraries."""
    from .. import _devices

    entry = next((d for d in _devices.devices() if d.name == device_type), None)
    if entry is None:
        raise RuntimeError(
            f"slimtensor.aoti.load(): no device plugin registers {device_type!r} (see slimtensor.devices()); "
            f"install the plugin package of that device (pip install slimtensor-metal for 'mps', "
            f"slimtensor-cuda for 'cuda')"
        )
    what = f"the {device_type!r} plugin ({entry.source})"
    try:
        module = importlib.import_module(entry.source)
    except ImportError as e:
        raise RuntimeError(f"slimtensor.aoti.load(): cannot import {what}: {e}") from e
    name_libraries = getattr(module, "aoti_libraries", None)
    if name_libraries is None:
        raise RuntimeError(
            f"slimtensor.aoti.load(): {what} names no AOTI shim library ({entry.source}.aoti_libraries() is "
            f"not defined), so models compiled for {device_type!r} cannot run on it; a newer version of the "
            "plugin may support them (Note [Device shim libraries] in slimtensor/aoti/_device_libraries.py)"
        )
    libraries = name_libraries()
    if (
        not isinstance(libraries, (list, tuple))
        or not libraries
        or not all(isinstance(p, str) and os.path.isabs(p) and os.path.isfile(p) for p in libraries)
    ):
        raise RuntimeError(
            f"slimtensor.aoti.load(): {entry.source}.aoti_libraries() must return a non-empty list of absolute "
            f"paths of existing shared libraries (its shim library first), got {libraries!r}"
        )
    return DevicePlugin(device_type, entry.source, entry.available, entry.reason, tuple(libraries))


def resolve(needed: set[str], libraries: list[str]) -> dict[str, str | None]:
    """Each name of ``needed`` mapped to the first of ``libraries`` that defines it, or to None."""
    found: dict[str, str | None] = dict.fromkeys(needed)
    for library in libraries:
        defined = _elf.defined_symbols(library)
        for name in needed:
            if found[name] is None and name in defined:
                found[name] = library
    return found

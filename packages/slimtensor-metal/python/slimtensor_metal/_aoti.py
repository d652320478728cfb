"""slimtensor_metal._aoti: what the Metal plugin gives ``st.aoti.load(path, device="mps")`` (the
``slimtensor.aoti`` entry point ``mps``; the contract is Note [Device support for AOTI models] in
slimtensor/aoti/_device_support.py and docs/plugins.md, section 5a).

Note [Binding an MPS model]
An MPS model needs the core's shims (aoti_torch_*) and the MPS shims and op fallbacks (aoti_torch_mps_malloc,
..._create_shader_library, ..._mm_out), which live in this package's extension module ``_metal`` next to the
plugin whose state (buffer registry, command queues) they use. ``_metal`` does not link libslimtensor (a
plugin reaches the core only through the core table), so it cannot by itself bring the core to the model.
  - Linux (ELF): this module writes, once per process, ``libslimtensor_metal_aoti.so``: a library that defines
    nothing and whose DT_NEEDED entries are libslimtensor's soname and ``_metal``'s path (Note [A library of
    DT_NEEDED entries] in slimtensor/aoti/_elf.py), loads it RTLD_LOCAL and reports its soname. The loader
    gives the model its one DT_NEEDED on that soname and opens it RTLD_LOCAL | RTLD_DEEPBIND: the model
    searches itself, the written library's dependencies (the core, then ``_metal``, both the copies already
    loaded), then the global scope.
  - macOS (Mach-O): nothing is written. ``soname`` is None and ``shim_library`` is ``_metal``'s real path; the
    loader adds an LC_LOAD_DYLIB on the core and one on ``_metal`` to the model and binds each of its
    flat-lookup shims two-level to whichever of the two exports it (Note [Binding a Mach-O model] in
    slimtensor/aoti/_macho.py). ``_metal`` is an MH_BUNDLE, which dyld refuses to load as a dependent, but
    it never has to: it is loaded (imported by this module) before any model, and dyld matches a dependent to
    a loaded image by path, or inode and mtime, before it looks at the file type. ``_metal`` was imported
    RTLD_LOCAL (Note [Out of the flat namespace]), so its shims reach the model and no flat lookup.
Nothing goes into the global scope, on either system.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
import tempfile
import threading
from typing import Any

from . import _metal

SHIM_SONAME = "libslimtensor_metal_aoti.so"

_lock = threading.Lock()
_support: MpsAOTISupport | None = None


def support() -> MpsAOTISupport:
    """The ``slimtensor.aoti`` entry point: the MPS model support, made once."""
    global _support
    with _lock:
        if _support is None:
            _support = MpsAOTISupport()
        return _support


class MpsAOTISupport:
    """The MPS half of an AOTI model: the shim library the model binds to, device indices, errors."""

    device_type = "mps"
    soname: str | None = SHIM_SONAME  # None on macOS (Note [Binding an MPS model])
    graphs = None  # Metal has no graph capture here

    def __init__(self) -> None:
        from slimtensor.aoti import _lib

        _lib.lib()  # libslimtensor is loaded, so the model's dependency on it binds that copy
        if sys.platform == "darwin":
            # the real path: dyld records a loaded image under its real path, and matches dependents to it
            self.shim_library = os.path.realpath(_metal.__file__)
            self.soname = None  # the loader binds the model to the core and shim_library directly
            return
        self.shim_library = os.path.abspath(_metal.__file__)
        if not sys.platform.startswith("linux"):
            raise RuntimeError(
                "binding an MPS model to the Metal plugin's shims is written for ELF (Linux) and Mach-O (macOS), "
                f"not for {sys.platform} (Note [Binding an MPS model])"
            )
        from slimtensor.aoti import _elf

        core = _lib.library_path()
        folder = tempfile.mkdtemp(prefix="slimtensor-metal-aoti-")
        try:
            path = os.path.join(folder, SHIM_SONAME)
            _elf.write_needed_library(
                path,
                [_elf.soname(core) or core, self.shim_library],
                like=self.shim_library,
                soname=SHIM_SONAME,
            )
            # Loaded, it is found by its soname; the file is no longer needed.
            self._lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    # ---- loading ------------------------------------------------------------------------------------
    def device_index(self, device: str) -> int:
        """The index of "mps" or "mps:N"; the device's reason when it is unavailable."""
        import slimtensor

        why = _metal.unavailable_reason()
        if why:
            raise RuntimeError(
                f"slimtensor.aoti.load(): device={device!r}: the MPS device is unavailable: {why}"
            )
        _, _, idx = device.partition(":")
        if idx and not idx.isdigit():
            raise ValueError(f"slimtensor.aoti.load(): device={device!r}: expected 'mps' or 'mps:N'")
        index = int(idx or 0)
        count = next((d.count for d in slimtensor.devices() if d.name == "mps"), 0)
        if not 0 <= index < count:
            raise ValueError(
                f"slimtensor.aoti.load(): device={device!r}: {count} MPS device(s) (indices 0..{count - 1})"
            )
        return index

    def check_model(self, so_path: str, metadata: dict, index: int, source: str) -> None:
        """Nothing to check before a run: an MPS model carries Metal source, compiled when it first runs."""

    # ---- running ------------------------------------------------------------------------------------
    def stream_handle(self, index: int, stream: Any) -> int:
        """0: an MPS model runs on the plugin's command queue (kDLMetal defines no stream to pass)."""
        if stream is not None:
            raise ValueError(
                "slimtensor.aoti: stream= is for CUDA models; an MPS model runs on the Metal plugin's command "
                "queue (call slimtensor_metal.synchronize() to wait for it)"
            )
        return 0

    def last_error(self) -> str:
        """The Metal shims' last error on this thread."""
        return _metal.last_error()

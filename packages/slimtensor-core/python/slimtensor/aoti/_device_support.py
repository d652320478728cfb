"""Which plugin runs AOTI models of a device other than the CPU: the entry point group ``slimtensor.aoti``.

Note [Device support for AOTI models]
The core knows how to open, bind and run a model; what is device-specific comes from the device's plugin,
through an entry point of group ``slimtensor.aoti`` named after the device type (``cuda =
"slimtensor_cuda._aoti:support"``), whose callable returns an object with:
  ``device_type`` (str) and ``soname`` (str): the shim library the model is given its one DT_NEEDED entry on
      instead of libslimtensor; that library is loaded (RTLD_LOCAL) by the time the object exists, and its
      own dependencies must bring libslimtensor and whatever runtime the model's code calls (ELF; on macOS
      ``soname`` is None and unused);
  ``shim_library`` (str): its path, to check the model's aoti_torch_* names against what it defines; on macOS
      the loaded image (dylib or bundle, by its real path) that the model's flat-lookup shims it exports are
      bound to, next to libslimtensor (Note [Binding a Mach-O model] in _macho.py);
  ``device_index(device) -> int``: the index a "cuda" or "cuda:N" string means, or a clear error;
  ``check_model(so_path, metadata, index, source)``: raises if the model cannot run on that device (a GPU
      architecture it was not built for), naming what it needs;
  ``stream_handle(index, stream) -> int``: the stream handle a run passes to the container (``stream=`` if
      given, else the thread's current stream);
  ``last_error() -> str``: the plugin shims' last error on this thread;
  ``clear_last_error()`` (optional, newer plugins): empties it; called before each call into the model so
      that last_error() afterwards says only what that call said (Note [Fresh shim errors] in _model.py);
  ``graphs``: None, or an object with ``begin(index, stream, static_inputs) -> graph`` (the graph copies
      each replay's sources into the static inputs), ``end(graph, stream)``, ``destroy(graph)`` and
      ``replay_fn``, the address of the C function ``int32_t (void* graph, void* stream, int32_t n, const void*
      const* srcs)`` that slimtensor._C calls with each replay's sources (Note [Model capture] in _model.py,
      Note [Graph replay from Python] in src/python/aoti_bridge.cpp).
The core imports no plugin itself: the entry point is loaded the first time a model of that device is.
"""

from __future__ import annotations

import threading
from typing import Any

GROUP = "slimtensor.aoti"
_lock = threading.Lock()
_cache: dict[str, Any] = {}


def device_support(device_type: str) -> Any:
    """The support object of the plugin that runs ``device_type`` models; raises if none is installed."""
    with _lock:
        if device_type in _cache:
            return _cache[device_type]
        from importlib.metadata import entry_points

        eps = [ep for ep in entry_points(group=GROUP) if ep.name == device_type]
        if not eps:
            hint = " (pip install slimtensor-cuda)" if device_type == "cuda" else ""
            raise NotImplementedError(
                f"slimtensor.aoti.load(): no installed plugin runs AOTInductor models on {device_type!r}{hint}; "
                "models run on 'cpu' without one"
            )
        try:
            obj = eps[0].load()()
        except Exception as e:
            raise RuntimeError(
                f"slimtensor.aoti.load(): the plugin {eps[0].value!r} that runs {device_type!r} models failed to "
                f"start: {type(e).__name__}: {e}"
            ) from e
        _cache[device_type] = obj
        return obj

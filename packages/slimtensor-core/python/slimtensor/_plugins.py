"""slimtensor._plugins: lazy discovery of device plugins through the entry points `slimtensor.devices`."""

# Note [Plugin discovery]
# - Nothing happens at `import slimtensor`: this module imports nothing expensive at module level.
# - Plugins are loaded the first time they are needed: `st.devices()` calls `autoload()`, and the core
#   calls the hook installed by `install_autoload_hook()` once, when it first meets an unknown device name.
#   `load_plugins()` loads them explicitly, also when autoload is off.
# - `SLIMTENSOR_DEVICE_AUTOLOAD=0` (or false/no/off) turns autoload off; `load_plugins()` still works.
# - An entry point's value is a callable (`slimtensor_cuda:register`) that registers its device through
#   `slimtensor._C._register_device_plugin`. A plugin that fails (import error, exception, ABI refusal)
#   is reported with a RuntimeWarning carrying its own traceback, recorded, and skipped: CPU and every
#   other device keep working. Each entry point is tried once per process.
# - Loading is serialised by a lock; a plugin that looks up a device while it registers (re-entrancy on
#   the same thread) does not load plugins again.

from __future__ import annotations

import os
import threading
import warnings

__all__ = [
    "AUTOLOAD_ENV",
    "GROUP",
    "PluginRecord",
    "autoload",
    "autoload_enabled",
    "failures",
    "install_autoload_hook",
    "load_plugins",
    "plugin_records",
]

GROUP = "slimtensor.devices"
AUTOLOAD_ENV = "SLIMTENSOR_DEVICE_AUTOLOAD"
_OFF_VALUES = frozenset({"0", "false", "no", "off"})


class PluginRecord:
    """What happened to one entry point of `slimtensor.devices` (a plain class: importing dataclasses
    would cost `import slimtensor` several milliseconds)."""

    __slots__ = ("name", "value", "distribution", "loaded", "reason", "traceback")

    def __init__(
        self, name: str, value: str, distribution: str, loaded: bool, reason: str = "", traceback: str = ""
    ) -> None:
        self.name = name  # the entry point's name: "hostdev"
        self.value = value  # what it points to: "slimtensor_hostdev:register"
        self.distribution = distribution  # "slimtensor-hostdev 0.1.0", or "" when unknown
        self.loaded = loaded  # True when its callable returned without raising
        self.reason = reason  # why it failed, one line: "RuntimeError: ..."; "" when it loaded
        self.traceback = traceback  # the plugin's own traceback when it failed

    def __repr__(self) -> str:
        return (
            f"PluginRecord(name={self.name!r}, value={self.value!r}, distribution={self.distribution!r}, "
            f"loaded={self.loaded!r}, reason={self.reason!r})"
        )

    def as_dict(self) -> dict[str, object]:
        return {slot: getattr(self, slot) for slot in self.__slots__}

    def describe(self) -> str:
        """One line for `slimtensor info`."""
        origin = f" from {self.distribution}" if self.distribution else ""
        state = "loaded" if self.loaded else f"FAILED: {self.reason}"
        return f"{self.name} ({self.value}{origin}): {state}"


_lock = threading.RLock()
_records: dict[tuple[str, str], PluginRecord] = {}
_loading = False  # true while this process is inside load_plugins (guards re-entrancy)
_autoloaded = False  # true once autoload() has scanned the entry points


def autoload_enabled() -> bool:
    """False when SLIMTENSOR_DEVICE_AUTOLOAD is 0, false, no or off."""
    return os.environ.get(AUTOLOAD_ENV, "1").strip().lower() not in _OFF_VALUES


def plugin_records() -> list[PluginRecord]:
    """Every entry point tried so far, in the order they were tried (loaded and failed ones)."""
    with _lock:
        return list(_records.values())


def failures() -> list[PluginRecord]:
    """The entry points that failed to load, with the reason (for `slimtensor info`)."""
    with _lock:
        return [r for r in _records.values() if not r.loaded]


def _distribution_of(entry_point: object) -> str:
    dist = getattr(entry_point, "dist", None)
    if dist is None:
        return ""
    try:
        return f"{dist.metadata['Name']} {dist.version}"
    except Exception:  # broken metadata must not stop discovery
        return ""


def _entry_points() -> list[object]:
    from importlib.metadata import entry_points

    found = []
    seen: set[tuple[str, str]] = set()
    for ep in entry_points(group=GROUP):
        key = (ep.name, ep.value)
        if key not in seen:  # the same distribution can be visible twice on sys.path
            seen.add(key)
            found.append(ep)
    return found


def _load_one(ep: object) -> PluginRecord:
    name, value = ep.name, ep.value  # type: ignore[attr-defined]
    distribution = _distribution_of(ep)
    try:
        register = ep.load()  # type: ignore[attr-defined]
        if not callable(register):
            raise TypeError(
                f"entry point {name} = {value!r} in group {GROUP!r} must name a callable "
                f"(for example 'my_plugin:register'), got {type(register).__name__}"
            )
        register()
    except (Exception, SystemExit) as exc:
        import traceback

        tb = "".join(traceback.format_exception(exc))
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        record = PluginRecord(name, value, distribution, False, reason, tb)
        origin = f" (from {distribution})" if distribution else ""
        warnings.warn(
            f"slimtensor: device plugin {name!r} = {value!r}{origin} failed to load and was skipped; "
            f"CPU and the other devices keep working. Set {AUTOLOAD_ENV}=0 to turn plugin autoload off.\n"
            f"The plugin's traceback:\n{tb}",
            RuntimeWarning,
            stacklevel=4,
        )
        return record
    return PluginRecord(name, value, distribution, True)


def load_plugins() -> list[PluginRecord]:
    """Loads every `slimtensor.devices` entry point not tried yet (even when autoload is off).

    Returns the records of all entry points tried so far. Never raises because of a plugin: failures
    are warned about (RuntimeWarning with the plugin's traceback) and recorded.
    """
    global _loading
    with _lock:
        if _loading:  # a plugin looked up a device while registering: do not recurse
            return list(_records.values())
        _loading = True
        try:
            try:
                eps = _entry_points()
            except Exception as exc:  # unreadable metadata on sys.path: warn, keep CPU working
                warnings.warn(
                    f"slimtensor: could not list the {GROUP!r} entry points, no device plugin was loaded: "
                    f"{type(exc).__name__}: {exc}",
                    RuntimeWarning,
                    stacklevel=3,
                )
                eps = []
            for ep in eps:
                key = (ep.name, ep.value)  # type: ignore[attr-defined]
                if key not in _records:
                    _records[key] = _load_one(ep)
        finally:
            _loading = False
        return list(_records.values())


def autoload() -> None:
    """Loads the plugins once per process unless SLIMTENSOR_DEVICE_AUTOLOAD turns autoload off."""
    global _autoloaded
    if _autoloaded or not autoload_enabled():
        return
    with _lock:
        if _autoloaded or _loading:
            return
        load_plugins()
        _autoloaded = True


def install_autoload_hook(core: object) -> None:
    """Asks the core (`slimtensor._C`) to call `autoload()` when it first meets an unknown device name.

    The core keeps a reference to the hook in a C++ global; it is dropped again at interpreter exit, while
    Python still runs, because a C++ static destroyed after finalisation must not release a Python object.
    """
    import atexit

    core._set_device_autoload_hook(autoload)  # type: ignore[attr-defined]
    atexit.register(_drop_autoload_hook, core)


def _drop_autoload_hook(core: object) -> None:
    try:
        core._set_device_autoload_hook(None)  # type: ignore[attr-defined]
    except TypeError:
        # A core whose binding does not accept None: park a statically allocated callable (the NoneType
        # type object, never deallocated) so that the C++ static holds nothing that dies with Python.
        core._set_device_autoload_hook(type(None))  # type: ignore[attr-defined]

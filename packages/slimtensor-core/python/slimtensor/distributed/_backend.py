"""The interface between process groups and the library that moves the bytes (NCCL on CUDA).

Note [Collective backends]
A backend is made once per group by its factory, ``factory(store, group_name, rank, size, timeout)``,
after the rendezvous: the factory exchanges what its library needs (NCCL's unique id) through the store
under keys prefixed with the group's name. The group then calls ``all_reduce(tensor, op)`` in place, which
may return before the work is done (on the tensor's current stream), and ``wait(tensor)`` which returns
once it is. ``op`` is one of REDUCE_OPS, the strings torch's functional collectives pass. A backend
raises RuntimeError naming the collective, the group and the peer when a peer fails, and TimeoutError
when a peer does not answer within the group's timeout: a dead rank never hangs the others.
Backends are registered by name (register_backend), or found through the entry-point group
``slimtensor.distributed`` (name = the backend's, value = its factory; the CUDA plugin's ``nccl`` is one),
looked up the first time a name is asked for. The tests register a host-memory stand-in.
A backend whose collectives run in C has ``register_group(name)``: it registers its own
st_collective_group table with the core (Note [Collective groups]), so a compiled model's c10d shims call
it without Python; other backends are wrapped by the core, which calls their Python methods.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import Any, Protocol

REDUCE_OPS = ("sum", "avg", "product", "min", "max")


class Backend(Protocol):
    def all_reduce(self, tensor: Any, op: str) -> None: ...

    def wait(self, tensor: Any) -> None: ...

    def close(self) -> None: ...


BackendFactory = Callable[..., Backend]
_FACTORIES: dict[str, BackendFactory] = {}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``init_process_group(backend=name)`` use ``factory`` (Note [Collective backends])."""
    if not isinstance(name, str) or not name:
        raise ValueError("register_backend(): name must be a non-empty string")
    if not callable(factory):
        raise TypeError(f"register_backend(): factory must be callable, got {type(factory).__name__}")
    _FACTORIES[name] = factory


ENTRY_POINTS = "slimtensor.distributed"


def _from_entry_points(name: str) -> BackendFactory | None:
    for ep in metadata.entry_points(group=ENTRY_POINTS):
        if ep.name == name:
            try:
                factory = ep.load()
            except Exception as exc:  # noqa: BLE001  (any import failure: say which package and why)
                raise RuntimeError(
                    f"init_process_group(): the collective backend {name!r} ({ep.value}, from the "
                    f"{ENTRY_POINTS} entry points) could not be imported: {type(exc).__name__}: {exc}"
                ) from exc
            register_backend(name, factory)
            return factory
    return None


def backend_factory(name: str) -> BackendFactory:
    factory = _FACTORIES.get(name) or _from_entry_points(name)
    if factory is None:
        found = {ep.name for ep in metadata.entry_points(group=ENTRY_POINTS)}
        known = ", ".join(sorted(set(_FACTORIES) | found))
        hint = " ('nccl' comes with the CUDA plugin: pip install slimtensor-cuda)" if name == "nccl" else ""
        raise ValueError(
            f"init_process_group(): no collective backend {name!r} is registered here "
            f"(registered: {known or 'none'}){hint}"
        )
    return factory

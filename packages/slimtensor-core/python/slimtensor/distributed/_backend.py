"""The interface between process groups and the library that moves the bytes (NCCL on CUDA).

Note [Collective backends]
A backend is made once per group by its factory, ``factory(store, group_name, rank, size, timeout)``,
after the rendezvous: the factory exchanges what its library needs (NCCL's unique id) through the store
under keys prefixed with the group's name. The group then calls ``all_reduce(tensor, op)`` in place, which
may return before the work is done (on the tensor's current stream), and ``wait(tensor)`` which returns
once it is. ``op`` is one of REDUCE_OPS, the strings torch's functional collectives pass. A backend
raises RuntimeError naming the collective, the group and the peer when a peer fails, and TimeoutError
when a peer does not answer within the group's timeout: a dead rank never hangs the others.
Backends are registered by name (register_backend); the tests register a host-memory stand-in.
"""

from __future__ import annotations

from collections.abc import Callable
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


def backend_factory(name: str) -> BackendFactory:
    factory = _FACTORIES.get(name)
    if factory is None:
        known = ", ".join(sorted(_FACTORIES)) or "none"
        raise ValueError(
            f"init_process_group(): no collective backend {name!r} is registered here (registered: {known})"
        )
    return factory

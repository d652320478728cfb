"""slimtensor.distributed: process groups for models sharded over several GPUs (one process per GPU).

    import slimtensor.distributed as dist
    dist.init_process_group(backend=..., init_method="tcp://127.0.0.1:29500")   # rank, world_size from
    ...                                                                         # the launcher's environment
    dist.destroy_process_group()

Start N processes with ``python -m slimtensor.distributed.run --nproc N script.py`` (it sets RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, and stops every rank when one fails).
Notes: [Rendezvous store] in _store.py, [Group names] in _groups.py, [Collective backends] in _backend.py.
"""

from __future__ import annotations

import os
from typing import Any

from .. import _C
from ._backend import REDUCE_OPS, Backend, register_backend
from ._groups import WORLD, ProcessGroup, group_by_name
from ._store import FileStore, Store, TCPStore, store_from_init_method

__all__ = [
    "REDUCE_OPS",
    "Backend",
    "FileStore",
    "ProcessGroup",
    "Store",
    "TCPStore",
    "all_reduce",
    "barrier",
    "destroy_process_group",
    "get_rank",
    "get_world_size",
    "group_by_name",
    "init_process_group",
    "is_initialized",
    "new_group",
    "register_backend",
    "wait_tensor",
]


def _env_int(name: str, given: int | None) -> int:
    if given is not None:
        return int(given)
    value = os.environ.get(name)
    if value is None:
        raise ValueError(
            f"init_process_group(): {name.lower()} was not given and ${name} is not set; pass it, or start "
            "the script with 'python -m slimtensor.distributed.run --nproc N script.py'"
        )
    return int(value)


def init_process_group(
    backend: str,
    *,
    rank: int | None = None,
    world_size: int | None = None,
    init_method: str | None = None,
    timeout: float = 300.0,
) -> ProcessGroup:
    """Join the job's default process group (named "0"): rendezvous through init_method's store, then the
    backend's set-up. Every wait is bounded by ``timeout`` seconds."""
    from ._backend import backend_factory

    factory = backend_factory(backend)
    rank, world_size = _env_int("RANK", rank), _env_int("WORLD_SIZE", world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"init_process_group(): rank {rank} must be in [0, world_size={world_size})")
    if not timeout > 0:
        raise ValueError(f"init_process_group(): timeout must be > 0 seconds, got {timeout!r}")
    if init_method is None or init_method == "env://":
        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if not addr or not port:
            raise ValueError(
                "init_process_group(): init_method 'env://' needs $MASTER_ADDR and $MASTER_PORT (the launcher "
                "sets them); or pass init_method='tcp://HOST:PORT' or 'file:///shared/folder'"
            )
        init_method = f"tcp://{addr}:{port}"
    with WORLD.lock:
        if WORLD.default is not None:
            raise RuntimeError(
                "init_process_group(): this process is in a process group already; "
                "call destroy_process_group() first"
            )
        store = store_from_init_method(init_method, rank, timeout)
        try:
            store.barrier("init", world_size, timeout)
            name = WORLD.next_name()
            group = ProcessGroup(
                name, tuple(range(world_size)), rank, factory(store, name, rank, world_size, timeout)
            )
        except BaseException:
            store.close()
            WORLD.clear()
            raise
        WORLD.store, WORLD.global_rank, WORLD.world_size, WORLD.factory = store, rank, world_size, factory
        WORLD.default = WORLD.add(group)
        _register_group(name, group.backend)  # compiled models find it by name
        return group


def _register_group(name: str, backend: Any) -> None:
    """Makes the group reachable by name from compiled models' c10d shims (Note [Collective backends])."""
    native = getattr(backend, "register_group", None)
    if native is not None:
        native(name)
    else:
        _C._register_collective_group(name, backend)


def _require_world(function: str) -> None:
    if WORLD.default is None:
        raise RuntimeError(f"{function}: no process group yet; call init_process_group() first")


def new_group(
    ranks: list[int] | None = None,
    *,
    backend: str | None = None,
    group_name: str | None = None,
    timeout: float | None = None,
) -> ProcessGroup | None:
    """A subgroup of the default group's ranks (every rank must call it, as in torch). Its name is the next
    count, as torch names it (Note [Group names]), or ``group_name``. Ranks outside it get None."""
    from ._backend import backend_factory

    _require_world("new_group()")
    members = tuple(sorted(set(range(WORLD.world_size) if ranks is None else (int(r) for r in ranks))))
    bad = [r for r in members if not 0 <= r < WORLD.world_size]
    if bad or not members:
        raise ValueError(
            f"new_group(): ranks must be a non-empty subset of 0..{WORLD.world_size - 1}, got {ranks}"
        )
    limit = timeout if timeout is not None else WORLD.store.timeout
    with WORLD.lock:
        name = group_name if group_name is not None else WORLD.next_name()
        if name in WORLD.groups:
            raise ValueError(f"new_group(): a process group named {name!r} exists already")
    WORLD.store.barrier(f"new_group/{name}", WORLD.world_size, limit)
    if WORLD.global_rank not in members:
        return None
    factory = backend_factory(backend) if backend else WORLD.factory
    made = factory(WORLD.store, name, members.index(WORLD.global_rank), len(members), limit)
    with WORLD.lock:
        group = WORLD.add(ProcessGroup(name, members, members.index(WORLD.global_rank), made))
    _register_group(name, made)
    return group


def destroy_process_group() -> None:
    """Leave every group: their backends close, the store closes, names are free again."""
    with WORLD.lock:
        groups, store = list(WORLD.groups.values()), WORLD.store
        WORLD.clear()
    for group in groups:
        _C._unregister_collective_group(group.name)
        group.backend.close()
    if store is not None:
        store.close()


def is_initialized() -> bool:
    return WORLD.default is not None


def get_rank(group: ProcessGroup | None = None) -> int:
    _require_world("get_rank()")
    return (group or WORLD.default).rank  # type: ignore[union-attr]


def get_world_size(group: ProcessGroup | None = None) -> int:
    _require_world("get_world_size()")
    return (group or WORLD.default).size  # type: ignore[union-attr]


def _group(group: ProcessGroup | str | None, function: str) -> ProcessGroup:
    _require_world(function)
    if group is None:
        return WORLD.default  # type: ignore[return-value]
    return group_by_name(group) if isinstance(group, str) else group


def all_reduce(
    tensor: Any, op: str = "sum", group: ProcessGroup | str | None = None, *, async_op: bool = False
) -> None:
    """Reduce ``tensor`` in place over the group's ranks (op: one of REDUCE_OPS). With async_op the call may
    return before the work is done: wait_tensor(tensor) waits."""
    if op not in REDUCE_OPS:
        raise ValueError(f"all_reduce(): op must be one of {', '.join(REDUCE_OPS)}, got {op!r}")
    g = _group(group, "all_reduce()")
    g.backend.all_reduce(tensor, op)
    if not async_op:
        g.backend.wait(tensor)


def wait_tensor(tensor: Any, group: ProcessGroup | str | None = None) -> None:
    """Return once the collectives pending on ``tensor`` are done."""
    _group(group, "wait_tensor()").backend.wait(tensor)


def barrier(name: str, group: ProcessGroup | None = None, timeout: float | None = None) -> None:
    """Every rank of the default group waits here for the others (``name`` once per barrier)."""
    _require_world("barrier()")
    WORLD.store.barrier(f"user/{name}", WORLD.world_size, timeout)

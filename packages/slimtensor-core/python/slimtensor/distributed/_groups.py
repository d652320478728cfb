"""Process groups: the default group and named subgroups, with torch's names.

Note [Group names]
A model compiled with torch's functional collectives calls, e.g.,
``aoti_torch_cpu__c10d_functional_all_reduce(t, "sum", group_name, &out)`` with the group_name string
torch had at trace time. slimtensor gives its groups the names torch gives them in the same order of
creation, so that a compiled model finds its group: the default group is "0", and each later
``new_group(ranks)`` takes the next count ("1", "2", ...) as torch's ``new_group`` does without
``use_local_synchronization``. ``new_group(..., group_name=...)`` names one explicitly (for a model traced
under other names). Names are unique per process; a name is free again after destroy_process_group().
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from ._backend import Backend


@dataclass
class ProcessGroup:
    """A set of ranks that run collectives together; ``rank`` is this process's rank within the group."""

    name: str
    ranks: tuple[int, ...]
    rank: int
    backend: Backend = field(repr=False)

    @property
    def size(self) -> int:
        return len(self.ranks)


class _World:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.default: ProcessGroup | None = None
        self.groups: dict[str, ProcessGroup] = {}
        self.count = 0
        self.store: Any = None
        self.global_rank = -1
        self.world_size = 0
        self.factory: Any = None

    def next_name(self) -> str:
        name = str(self.count)
        self.count += 1
        return name

    def add(self, group: ProcessGroup) -> ProcessGroup:
        if group.name in self.groups:
            raise ValueError(f"a process group named {group.name!r} exists already; names are unique")
        self.groups[group.name] = group
        return group

    def clear(self) -> None:
        self.default, self.groups, self.count = None, {}, 0
        self.store, self.global_rank, self.world_size, self.factory = None, -1, 0, None


WORLD = _World()


def group_by_name(name: str) -> ProcessGroup:
    """The group a compiled model names (Note [Group names]); KeyError listing the known names."""
    with WORLD.lock:
        group = WORLD.groups.get(name)
        if group is None:
            known = ", ".join(repr(n) for n in WORLD.groups) or "none: call init_process_group() first"
            raise KeyError(f"no process group named {name!r} in this process (known: {known})")
        return group

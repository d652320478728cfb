"""A host-memory stand-in for NCCL (Note [Collective backends]): all_reduce through the rendezvous store.

Each rank publishes its bytes under ``<group>/all_reduce/<seq>/<rank>`` and reduces everyone's in rank
order, so every rank computes the same result (the order of a float sum is fixed). Slow, and only for
the tests: it proves the groups, names, timeouts and failure paths without a GPU.
"""

from __future__ import annotations

import numpy as np
import slimtensor.distributed as dist

_REDUCE = {"sum": np.add, "product": np.multiply, "min": np.minimum, "max": np.maximum}


class HostBackend:
    def __init__(self, store, group_name, rank, size, timeout):
        self.store, self.group, self.rank, self.size, self.timeout = store, group_name, rank, size, timeout
        self.seq = 0
        self.pending: list[tuple[np.ndarray, int, str]] = []

    def all_reduce(self, tensor, op):
        array = np.asarray(tensor)
        self.store.set(f"{self.group}/all_reduce/{self.seq}/{self.rank}", array.tobytes())
        self.pending.append((array, self.seq, op))
        self.seq += 1

    def wait(self, tensor):
        for array, seq, op in self.pending:
            parts = []
            for r in range(self.size):
                raw = self.store.get(f"{self.group}/all_reduce/{seq}/{r}", self.timeout)
                parts.append(np.frombuffer(raw, dtype=array.dtype).reshape(array.shape))
            wide = [p.astype(np.float64 if array.dtype.kind in "fV" else np.int64) for p in parts]
            total = wide[0].copy()
            for p in wide[1:]:
                total = _REDUCE["sum" if op == "avg" else op](total, p)
            if op == "avg":
                total = total / self.size
            array[...] = total.astype(array.dtype)
        self.pending.clear()

    def close(self):
        self.pending.clear()


def register() -> None:
    dist.register_backend("host", HostBackend)

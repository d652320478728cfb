"""A tensor-parallel transformer block, sharded Megatron-style, for the NCCL tests (tests/cuda/test_nccl_*.py).

Imported only inside the compile subprocess (compile_models.py --zoo tensor_parallel_zoo --device cuda). As in
collective_zoo.py, torch traces the functional collectives under a fake process group (no communication while
compiling; its all_reduce returns its input), whose default group is named "0" as slimtensor.distributed
names its own. ``tp_block_{r}of{n}`` is rank r's shard of n; ``tp_block_0of1`` holds every weight, so its
eager output (recorded in its .npz) is the unsharded block's output, the reference of every sharding.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.testing._internal.distributed.fake_pg import FakeStore

if not dist.is_initialized():
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)

D, HEADS, HIDDEN, SEQ, BATCH = 64, 4, 128, 8, 2


def _full_weights() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)

    def w(rows: int, cols: int) -> torch.Tensor:
        return torch.randn(rows, cols, generator=g) / math.sqrt(rows)

    return {
        "wq": w(D, D),
        "wk": w(D, D),
        "wv": w(D, D),
        "wo": w(D, D),
        "w1": w(D, HIDDEN),
        "w2": w(HIDDEN, D),
    }


def _reduced(t: torch.Tensor) -> torch.Tensor:
    return torch.ops._c10d_functional.wait_tensor(torch.ops._c10d_functional.all_reduce(t, "sum", "0"))


class TensorParallelBlock(nn.Module):
    """Attention then MLP, each with a residual. Rank r of n holds HEADS/n heads (q, k, v column-parallel: their
    columns; the output projection row-parallel: its rows) and HIDDEN/n of the MLP (first linear's columns,
    second's rows); the partial outputs of each half are summed over the ranks by one all_reduce."""

    def __init__(self, rank: int, world: int):
        super().__init__()
        full = _full_weights()
        head_dim = D // HEADS
        self.heads = HEADS // world
        cols = slice(rank * self.heads * head_dim, (rank + 1) * self.heads * head_dim)
        hid = slice(rank * HIDDEN // world, (rank + 1) * HIDDEN // world)
        for name in ("wq", "wk", "wv"):
            setattr(self, name, nn.Parameter(full[name][:, cols].contiguous()))
        self.wo = nn.Parameter(full["wo"][cols, :].contiguous())
        self.w1 = nn.Parameter(full["w1"][:, hid].contiguous())
        self.w2 = nn.Parameter(full["w2"][hid, :].contiguous())

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [BATCH, SEQ, D], the same on every rank
        b, s, _ = x.shape
        head_dim = D // HEADS

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(b, s, self.heads, head_dim).transpose(1, 2)

        q, k, v = heads(x @ self.wq), heads(x @ self.wk), heads(x @ self.wv)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(head_dim), dim=-1) @ v
        x = x + _reduced(att.transpose(1, 2).reshape(b, s, self.heads * head_dim) @ self.wo)
        return x + _reduced(torch.relu(x @ self.w1) @ self.w2)


def _shard(rank: int, world: int):
    return lambda: TensorParallelBlock(rank, world)


def models():
    x = torch.randn(BATCH, SEQ, D, generator=torch.Generator().manual_seed(1))
    return {f"tp_block_{r}of{n}": (_shard(r, n), (x,), None, None) for n in (1, 2) for r in range(n)}


EXTRA_OPTIONS: dict[str, dict] = {}

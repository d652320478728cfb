"""Tensor-parallel test models whose compiled code calls the c10d collective shims (Note [Collective groups]).

Imported only inside the compile subprocess (compile_models.py --zoo collective_zoo): torch traces the
functional collectives under a fake process group of 2 ranks (no communication happens while compiling),
whose default group is named "0", as slimtensor.distributed names its default group.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.testing._internal.distributed.fake_pg import FakeStore

if not dist.is_initialized():
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)


class RowParallelLinear(nn.Module):
    """The second half of a tensor-parallel MLP: each rank holds a slice of the inner dim, the partial
    products are summed over the ranks by one all_reduce, then scaled (fixed weights: the tests compute the
    expected result from them)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.arange(32, dtype=torch.float32).reshape(8, 4) / 8)

    def forward(self, x):
        y = torch.ops._c10d_functional.all_reduce(x @ self.w, "sum", "0")
        return torch.ops._c10d_functional.wait_tensor(y) * 2


def models():
    return {"tp_row_linear": (RowParallelLinear, (torch.ones(3, 8),), None, None)}


EXTRA_OPTIONS: dict[str, dict] = {}

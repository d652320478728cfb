"""The op-fallback test models of tests/aoti: small torch modules whose compiled code calls CPU fallbacks.

Imported only inside the compile subprocess (compile_models.py --zoo op_model_zoo), never by the tests.
test_fallback_models.py names, per model, the aoti_torch_cpu_* functions its compiled .so must call (read
from its undefined symbols), so a model that stops reaching its fallback (inductor lowering the op itself)
fails loudly.
"""

from __future__ import annotations

import torch
import torch.nn as nn


class Cumsum(nn.Module):
    """GPT-2/Llama/RoBERTa-style position ids from an attention mask, and a cumsum of a transposed input."""

    def forward(self, mask, x):
        pos = mask.long().cumsum(-1) - 1
        return pos.masked_fill(mask == 0, 1), torch.cumsum(x.t(), dim=1)


class Cumprod(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=0) * 2, torch.cumprod(x.to(torch.float64).t(), 1)


class Sort(nn.Module):
    def forward(self, x):
        v, i = torch.sort(x.t(), dim=1, descending=True)
        return v + 1, i


class SortStable(nn.Module):
    def forward(self, x):
        v, i = torch.sort(x, dim=0, stable=True)
        return v, i, torch.argsort(x, dim=1, stable=True)


class TopK(nn.Module):
    def forward(self, x):
        v, i = torch.topk(x, 3, dim=-1)
        s, j = torch.topk(x, 2, dim=0, largest=False)
        return v * 2, i, s, j


def _r(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def _ties(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=g).to(torch.float32)
    x.view(-1)[::11] = float("nan")
    return x


def models():
    """name -> (module factory, example inputs, dynamic_shapes or None, extra run inputs or None)."""
    mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0], [1, 0, 1, 1, 1, 1]])
    return {
        "op_cumsum": (Cumsum, (mask, _r(9, 3)), None, None),
        "op_cumprod": (Cumprod, (_r(5, 7) * 0.5 + 1,), None, None),
        "op_sort": (Sort, (_ties(7, 5),), None, None),
        "op_sort_stable": (SortStable, (_ties(6, 9, seed=1),), None, None),
        "op_topk": (TopK, (_ties(4, 70, seed=2),), None, None),
    }


EXTRA_OPTIONS: dict[str, dict] = {}

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


class Search(nn.Module):
    def forward(self, seq, v, b):
        return (
            torch.searchsorted(seq, v.t()),
            torch.searchsorted(seq, v.t(), right=True, out_int32=True),
            torch.bucketize(v, b),
        )


class Nonzero(nn.Module):
    def forward(self, x):
        idx = torch.nonzero(x.t() > 0)
        return idx * 2, idx.shape[0] + torch.zeros(1, dtype=torch.int64)


class RepeatInterleave(nn.Module):
    def forward(self, x, r):
        return torch.repeat_interleave(r), torch.repeat_interleave(x, r, dim=0)


class Histc(nn.Module):
    def forward(self, x):
        return torch.histc(x.t(), bins=12, min=-2, max=2) / x.numel(), torch.histc(x, bins=5)


class MaskedScatter(nn.Module):
    def forward(self, x, m, s):
        return x.masked_scatter(m, s) + 1


class Scatter(nn.Module):
    def forward(self, x, index, src):
        return x.scatter(1, index, src) * 2, x.scatter(0, index[:2] % 3, 0.5) + 1


class ScatterReduce(nn.Module):
    def forward(self, x, index, src):
        return x.scatter_add(1, index, src), x.scatter_reduce(1, index, src, "amax", include_self=False)


class IndexReduce(nn.Module):
    def forward(self, x, index, src):
        return x.index_reduce(0, index, src, "amax", include_self=False), x.index_reduce(
            1, index, src.t(), "mean"
        )


class IndexPut(nn.Module):
    def forward(self, x, i, v):
        y = x.clone()
        y[:, i[:2] % 3] = v[:1, :2]  # a full slice, then an index
        return torch.index_put(x, (i,), v, accumulate=True), y


class EmbeddingBag(nn.Module):
    def __init__(self):
        super().__init__()
        self.sum = nn.EmbeddingBag(20, 6, mode="sum")
        self.mean = nn.EmbeddingBag(20, 6, mode="mean", padding_idx=3)
        self.max = nn.EmbeddingBag(20, 6, mode="max")

    def forward(self, idx, off):
        return self.sum(idx, off), self.mean(idx, off), self.max(idx, off)


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
        "op_search": (
            Search,
            (torch.sort(_r(4, 16)).values, _r(7, 4, seed=1), torch.linspace(-2, 2, 9)),
            None,
            None,
        ),
        "op_nonzero": (Nonzero, (_r(5, 6),), None, None),
        "op_repeat_interleave": (RepeatInterleave, (_r(4, 3), torch.tensor([2, 0, 3, 1])), None, None),
        "op_histc": (Histc, (_r(30, 40),), None, None),
        "op_scatter": (
            Scatter,
            (_r(3, 6), torch.tensor([[0, 2], [5, 1], [3, 4]]), _r(3, 2, seed=1)),
            None,
            None,
        ),
        "op_scatter_reduce": (
            ScatterReduce,
            (_r(3, 6), torch.tensor([[0, 2, 0], [5, 5, 1], [3, 4, 3]]), _r(3, 3, seed=1)),
            None,
            None,
        ),
        "op_index_reduce": (
            IndexReduce,
            (_r(5, 5), torch.tensor([0, 4, 0, 2]), _r(4, 5, seed=1)),
            None,
            None,
        ),
        "op_index_put": (
            IndexPut,
            (_r(5, 3), torch.tensor([4, 1, 4, 0]), torch.tensor([[1.0, 2, 3]]).expand(4, 3) * 0.5),
            None,
            None,
        ),
        "op_embedding_bag": (
            EmbeddingBag,
            (torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 19, 0, 3]), torch.tensor([0, 4, 4, 9])),
            None,
            None,
        ),
        "op_masked_scatter": (MaskedScatter, (_r(4, 6), _r(4, 6, seed=1) > 0, _r(30, seed=2)), None, None),
    }


# Extra inductor options per model; "deterministic_algorithms" (compile_models.py) keeps scatter a fallback.
EXTRA_OPTIONS: dict[str, dict] = {
    "op_scatter": {"deterministic_algorithms": True},
    "op_index_put": {"deterministic_algorithms": True},
}

"""Models only the CUDA tests compile (compile_models.py --zoo cuda_model_zoo --device cuda)."""

from __future__ import annotations

import torch
from torch import nn


class ToHost(nn.Module):
    """Copies to the host inside its run: a synchronising copy, which a CUDA graph cannot capture."""

    def forward(self, x):
        return (x * 2).cpu() + 1


def models():
    g = torch.Generator().manual_seed(0)
    return {"to_host": (ToHost, (torch.randn(4, 8, generator=g),), None, None)}


EXTRA_OPTIONS: dict = {}

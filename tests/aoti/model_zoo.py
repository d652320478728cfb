"""The test models of tests/aoti: small torch modules, their example inputs, and export options.

Imported only inside the compile subprocess (compile_models.py), never by the tests themselves, so the
test process does not need torch to run a cached model.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class Pointwise(nn.Module):
    def forward(self, x, y):
        return torch.sin(x) * torch.exp(-y) + F.gelu(x) * y


class Linear(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        return self.fc(x)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Conv1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 6, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


class Conv2dGroups(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 12, 3, stride=2, padding=1, dilation=1, groups=4)

    def forward(self, x):
        return self.conv(x)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, dilation=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.avg_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(x.flatten(1))


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class LayerNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(64)

    def forward(self, x):
        return self.ln(x)


class SDPA(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


class SDPACausal(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)


class SDPAMasked(nn.Module):
    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class TransformerBlock(nn.Module):
    """Pre-norm self-attention + MLP, written out by hand."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).split(d, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViewPermute(nn.Module):
    def forward(self, x):
        return torch.sin(x.view(4, 6, 2).permute(2, 0, 1).reshape(2, 24)) + 1.0


class AliasInput(nn.Module):
    def forward(self, x):
        return x.t(), x[1:]


class TwoOutputs(nn.Module):
    def forward(self, x):
        return torch.relu(x), x * 2.0


class BF16(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8).to(torch.bfloat16)

    def forward(self, x):
        return self.fc(x) * 2


class Int64(nn.Module):
    def forward(self, x, y):
        return x * 3 + y, (x % 5).sum(dim=1)


class ConstAlias(nn.Module):
    """Returns a view of its own weight: the output aliases model memory."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.arange(32, dtype=torch.float32).reshape(4, 8))

    def forward(self, x):
        return x + self.table, self.table[1:]


class BMM(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


def _r(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def models():
    """name -> (module factory, example inputs, dynamic_shapes or None, extra run inputs or None)."""
    torch.manual_seed(0)
    mask = torch.randn(1, 2, 6, 6) > 0
    mask[..., 0] = True
    batch = torch.export.Dim("batch", min=1, max=64)
    return {
        "pointwise": (Pointwise, (_r(8, 16), _r(8, 16, seed=1)), None, None),
        "linear": (Linear, (_r(4, 16),), None, None),
        "mlp": (MLP, (_r(5, 32),), None, None),
        "conv1d": (Conv1d, (_r(2, 4, 10),), None, None),
        "conv2d_groups": (Conv2dGroups, (_r(2, 8, 9, 9),), None, None),
        "small_cnn": (SmallCNN, (_r(2, 3, 16, 16),), None, None),
        "softmax": (Softmax, (_r(64, 512),), None, None),
        "layer_norm": (LayerNorm, (_r(8, 64),), None, None),
        "sdpa": (SDPA, (_r(1, 2, 6, 8), _r(1, 2, 6, 8, seed=1), _r(1, 2, 6, 8, seed=2)), None, None),
        "sdpa_causal": (
            SDPACausal,
            (_r(1, 2, 6, 8), _r(1, 2, 6, 8, seed=1), _r(1, 2, 6, 8, seed=2)),
            None,
            None,
        ),
        "sdpa_masked": (
            SDPAMasked,
            (_r(1, 2, 6, 8), _r(1, 2, 6, 8, seed=1), _r(1, 2, 6, 8, seed=2), mask),
            None,
            None,
        ),
        "transformer_block": (TransformerBlock, (_r(2, 7, 32),), None, None),
        "view_permute": (ViewPermute, (_r(6, 8),), None, None),
        "alias_input": (AliasInput, (_r(3, 5),), None, None),
        "two_outputs": (TwoOutputs, (_r(4, 5),), None, None),
        "bf16": (BF16, (_r(4, 16, dtype=torch.bfloat16),), None, None),
        "int64": (Int64, (torch.arange(12).view(3, 4), torch.arange(12).view(3, 4) * 7), None, None),
        "bmm": (BMM, (_r(3, 4, 5), _r(3, 5, 6, seed=1)), None, None),
        "mlp_dynamic": (MLP, (_r(5, 32),), ({0: batch},), (_r(9, 32, seed=3),)),
        "linear_blob": (Linear, (_r(4, 16),), None, None),
        "linear_libtorch": (Linear, (_r(4, 16),), None, None),
        "const_alias": (ConstAlias, (_r(4, 8),), None, None),
        "pointwise_native": (Pointwise, (_r(64, 128), _r(64, 128, seed=1)), None, None),
    }


# Extra inductor options per model (on top of the common ones in compile_models.py).
EXTRA_OPTIONS = {
    # this machine's own ISA (AVX-512 here): vectorized kernels calling SLEEF (Sleef_*, no DT_NEEDED)
    "pointwise_native": {"cpp.march": "native", "cpp.simdlen": None},
    "linear_libtorch": {"aot_inductor.link_libtorch": True},  # a stock model: must keep running on libtorch
    "linear_blob": {
        "aot_inductor.package_constants_in_so": False,
        "aot_inductor.package_constants_on_disk_format": "binary_blob",
    },
}

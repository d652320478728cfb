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


# ---- block "zoo": the FFT and weight-only quantised matmul fallbacks (the architecture zoo's ops) --------
class Spectral(nn.Module):
    """FNet-style token mixing and a spectral filter: rfft over time (real to complex), fft over channels
    (complex to complex), returned as real tensors."""

    def __init__(self, t=16, c=8):
        super().__init__()
        self.filter = nn.Parameter(torch.randn(t // 2 + 1, c))

    def forward(self, x):
        spec = torch.fft.rfft(x, dim=1, norm="ortho")
        mixed = torch.fft.fft(spec, dim=2)
        return torch.view_as_real(mixed), torch.view_as_real(spec) * self.filter[None, :, :, None]


class SpectralStrided(nn.Module):
    """2-D transforms of a transposed (non-contiguous) input: rfft2 with "forward" scaling, then an inverse
    c2c fft2 over both dims, and a full (two-sided) fft of a real input over an odd-sized dim."""

    def forward(self, x):
        xt = x.transpose(1, 2)  # (3, 10, 8) with strides (80, 1, 10)
        spec = torch.fft.rfft2(xt, norm="forward")
        back = torch.fft.ifft2(spec * 2)
        full = torch.fft.fft(xt[:, 1:, :], dim=1)  # a real input to a two-sided c2c: 9 points (odd)
        return torch.view_as_real(spec), torch.view_as_real(back), torch.view_as_real(full)


class ComplexRotary(nn.Module):
    """Rotary position embedding in its complex form (the original Llama code): pairs of features viewed as complex
    numbers (view_as_complex), rotated by a complex multiplication (mul_Tensor), viewed back (view_as_real)."""

    def __init__(self, t=6, d=8):
        super().__init__()
        angles = torch.outer(torch.arange(t, dtype=torch.float32), 1.0 / 10000 ** (torch.arange(0, d, 2) / d))
        self.register_buffer("freqs", torch.polar(torch.ones_like(angles), angles))

    def forward(self, x):
        z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(z * self.freqs).flatten(-2)


class Int8WeightOnly(nn.Module):
    """Weight-only int8 linear layers (torchao's int8 weight-only path): x @ (w_int8 * scale).T."""

    def __init__(self, k=64, n=48, dtype=torch.float32):
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.register_buffer("w", torch.randint(-128, 128, (n, k), generator=g, dtype=torch.int8))
        self.register_buffer("scale", (torch.rand(n, generator=g) * 0.02 + 0.001).to(dtype))

    def forward(self, x):
        return torch._weight_int8pack_mm(x, self.w, self.scale) + 1


class Int4WeightOnly(nn.Module):
    """Weight-only int4 linear layer (torchao's int4 CPU path): weights packed by torch's
    _convert_weight_to_int4pack_for_cpu, group-wise scales and zeros."""

    def __init__(self, k=128, n=80, group=32, dtype=torch.float32):
        super().__init__()
        g = torch.Generator().manual_seed(2)
        q = torch.randint(0, 16, (n, k), generator=g, dtype=torch.int32)
        self.register_buffer("w", torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1))
        sz = torch.stack(
            [torch.rand(k // group, n, generator=g) * 0.1, torch.randn(k // group, n, generator=g)], -1
        )
        self.register_buffer("scales_zeros", sz.to(dtype))
        self.group = group

    def forward(self, x):
        return torch.ops.aten._weight_int4pack_mm_for_cpu(x, self.w, self.group, self.scales_zeros)


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
        **onednn_models(),
        **onednn_bench_models(),
        **zoo_op_models(),
    }


def zoo_op_models():
    """Block "zoo" (the FFT and weight-only quantised matmul fallbacks)."""
    return {
        "op_fft": (Spectral, (_r(2, 16, 8),), None, None),
        "op_fft_strided": (SpectralStrided, (_r(3, 8, 10),), None, None),
        "op_complex_rotary": (ComplexRotary, (_r(2, 6, 8),), None, None),
        "op_int8pack_mm": (Int8WeightOnly, (_r(5, 64),), None, None),
        "op_int8pack_mm_bf16": (
            lambda: Int8WeightOnly(dtype=torch.bfloat16),
            (_r(5, 64, dtype=torch.bfloat16),),
            None,
            None,
        ),
        "op_int4pack_mm": (Int4WeightOnly, (_r(6, 128),), None, None),
        "op_int4pack_mm_bf16": (
            lambda: Int4WeightOnly(n=128, group=64, dtype=torch.bfloat16),
            (_r(3, 128, dtype=torch.bfloat16),),
            None,
            None,
        ),
    }


# Extra inductor options per model; "deterministic_algorithms" (compile_models.py) keeps scatter a fallback.
EXTRA_OPTIONS: dict[str, dict] = {
    "op_scatter": {"deterministic_algorithms": True},
    "op_index_put": {"deterministic_algorithms": True},
    "onednn_lstm_mkldnn_off": {"mkldnn_enabled": False},  # compile_models.py: oneDNN off while exporting
}


# ---- oneDNN: convolution and the LSTM layer (tests/aoti/test_onednn.py) --------------------------------------
# A separate block (kept apart from the other fallback models for easy merges); models() adds these.


class OnednnConvBlock(nn.Module):
    """A MobileNet-like block: 3x3 conv + batch norm + ReLU, a depthwise 5x5 stride-2 conv, a 1x1 conv."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 5, stride=2, padding=2, groups=16)
        self.pw = nn.Conv2d(16, 24, 1, bias=False)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x))) + x
        return self.pw(torch.relu(self.dw(y)))


class OnednnConvVariety(nn.Module):
    """1-D and 3-D convolutions, dilation, transposed convolutions (groups, output_padding), a sliced input."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(6, 8, 3, padding=2, dilation=2)
        self.c3 = nn.Conv3d(3, 4, (2, 3, 3), stride=(1, 2, 2), padding=1)
        self.t2 = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.t1 = nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1, bias=False)

    def forward(self, s, v, x):
        return self.c1(s[:, :, ::2]), self.c3(v), self.t2(x), self.t1(self.c1(s))


class OnednnConvReduced(nn.Module):
    """Convolutions in bfloat16 or float16 (weights and input), one of them channels-last."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(8, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 4, 3, stride=2, groups=4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class OnednnLSTM(nn.Module):
    """nn.LSTM with initial states (one layer)."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 12)

    def forward(self, x, h0, c0):
        y, (h, c) = self.rnn(x, (h0, c0))
        return y, h, c


class OnednnLSTMDeep(nn.Module):
    """Two layers, bidirectional, batch_first, no initial states, a projection on top."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 12, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(24, 5)

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return self.head(y), h, c


class OnednnLSTMNoBias(nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.rnn = nn.LSTM(6, 10, bias=False).to(dtype)

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return y, h, c


class OnednnGRU(nn.Module):
    """nn.GRU (torch decomposes it into matmuls and pointwise kernels: no mkldnn_rnn_layer)."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(8, 12, num_layers=2, batch_first=True)

    def forward(self, x):
        y, h = self.rnn(x)
        return y, h


def onednn_models():
    cl = _r(2, 8, 9, 9, dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    batch = torch.export.Dim("batch", min=2, max=64)  # the LSTM specialises a dynamic sequence length
    return {
        "onednn_conv_block": (OnednnConvBlock, (_r(2, 16, 20, 20),), None, None),
        "onednn_conv_variety": (
            OnednnConvVariety,
            (_r(2, 6, 21), _r(1, 3, 4, 9, 9), _r(2, 8, 5, 6)),
            None,
            None,
        ),
        "onednn_conv_bf16_channels_last": (lambda: OnednnConvReduced().to(torch.bfloat16), (cl,), None, None),
        "onednn_conv_f16": (
            lambda: OnednnConvReduced().to(torch.float16),
            (_r(2, 8, 9, 9, dtype=torch.float16),),
            None,
            None,
        ),
        "onednn_lstm": (OnednnLSTM, (_r(7, 3, 8), _r(1, 3, 12, seed=1), _r(1, 3, 12, seed=2)), None, None),
        "onednn_lstm_deep": (OnednnLSTMDeep, (_r(3, 9, 8),), ({0: batch},), (_r(5, 9, 8, seed=3),)),
        "onednn_lstm_nobias_bf16": (
            lambda: OnednnLSTMNoBias(torch.bfloat16),
            (_r(5, 2, 6, dtype=torch.bfloat16),),
            None,
            None,
        ),
        "onednn_gru": (OnednnGRU, (_r(3, 9, 8),), None, None),
        "onednn_lstm_mkldnn_off": (OnednnLSTMDeep, (_r(3, 9, 8),), None, None),
    }


# Benchmark-sized models of the oneDNN block (slimtensor.bench.aoti_models times them; `make bench-models`
# compiles them, the tests do not).
class OnednnBenchResNetBlock(nn.Module):
    """ResNet's basic block at its first stage: two 3x3 64->64 convolutions on 56x56, batch norms, identity."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(64, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64)
        self.c2, self.b2 = nn.Conv2d(64, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64)

    def forward(self, x):
        return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + x)


class OnednnBenchMobileBlock(nn.Module):
    """EfficientNet's stride-2 inverted residual: 1x1 24->144, depthwise 5x5 stride 2, squeeze-excite, 1x1 ->40."""

    def __init__(self):
        super().__init__()
        self.expand, self.b0 = nn.Conv2d(24, 144, 1, bias=False), nn.BatchNorm2d(144)
        self.dw, self.b1 = (
            nn.Conv2d(144, 144, 5, stride=2, padding=2, groups=144, bias=False),
            nn.BatchNorm2d(144),
        )
        self.se1, self.se2 = nn.Conv2d(144, 6, 1), nn.Conv2d(6, 144, 1)
        self.project, self.b2 = nn.Conv2d(144, 40, 1, bias=False), nn.BatchNorm2d(40)

    def forward(self, x):
        y = torch.nn.functional.silu(self.b0(self.expand(x)))
        y = torch.nn.functional.silu(self.b1(self.dw(y)))
        s = torch.sigmoid(self.se2(torch.nn.functional.silu(self.se1(y.mean((2, 3), keepdim=True)))))
        return self.b2(self.project(y * s))


class OnednnBenchLSTM(nn.Module):
    def __init__(self, cell=nn.LSTM):
        super().__init__()
        self.rnn = cell(128, 256, num_layers=2, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


def onednn_bench_models():
    return {
        "onednn_bench_resnet_block": (OnednnBenchResNetBlock, (_r(1, 64, 56, 56),), None, None),
        "onednn_bench_mobile_block": (OnednnBenchMobileBlock, (_r(1, 24, 56, 56),), None, None),
        "onednn_bench_lstm": (OnednnBenchLSTM, (_r(4, 32, 128),), None, None),
        "onednn_bench_gru": (lambda: OnednnBenchLSTM(nn.GRU), (_r(4, 32, 128),), None, None),
    }


ONEDNN_BENCH_MODELS = sorted(onednn_bench_models())

"""The weight-only quantised matmul fallbacks (aoti_torch_cpu__weight_int8pack_mm, _weight_int4pack_mm_cpu_tensor;
Notes [Weight-only int8 matmul] and [int4 packed weights] in src/aoti/ops/weight_quant_mm.cpp) through the C ABI,
against torch eager: values to float32 rounding (the summation order differs from torch's kernels), dtypes,
shapes, layouts, empty inputs, errors. op_model_zoo.py's op_int8pack_mm* and op_int4pack_mm* reach them from
compiled models (test_fallback_models.py)."""

from __future__ import annotations

import pytest

from ._helpers import have_torch
from ._op_calls import OpError, call, fn

pytestmark = [
    pytest.mark.needs_torch,
    pytest.mark.skipif(
        not have_torch(), reason="torch is the oracle of these tests (pip install -r requirements/test.txt)"
    ),
]

FLOATS = ["float32", "float16", "bfloat16"]


def int8mm(a, b, s):
    return call("aoti_torch_cpu__weight_int8pack_mm", lambda c: [c.tensor(a), c.tensor(b), c.tensor(s)], 1)


def int4mm(a, w, group, sz):
    import torch

    g = torch.tensor([group], dtype=torch.int64) if isinstance(group, int) else group
    return call(
        "aoti_torch_cpu__weight_int4pack_mm_cpu_tensor",
        lambda c: [c.tensor(a), c.tensor(w), c.tensor(g), c.tensor(sz)],
        1,
    )


def _close(got, want):
    import torch

    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    assert got.is_contiguous()
    # float32 sums in another order, then one rounding to the output dtype (one ulp of bfloat16 is 2^-8)
    tol = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[want.dtype]
    scale = max(1.0, want.float().abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol * scale)


def _int8_operands(m, k, n, dtype, seed=0):
    import torch

    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g).to(dtype)
    b = torch.randint(-128, 128, (n, k), generator=g, dtype=torch.int8)
    s = (torch.rand(n, generator=g) * 0.05 + 0.001).to(dtype)
    return a, b, s


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("m", "k", "n"), [(1, 64, 48), (5, 33, 7), (17, 128, 96), (4, 1, 3)])
def test_int8pack_mm_matches_torch(dtype, m, k, n):
    import torch

    a, b, s = _int8_operands(m, k, n, getattr(torch, dtype))
    if dtype == "bfloat16" and k % 32:
        # torch 2.13's bfloat16 kernel crashes (SIGSEGV) when K is not a multiple of 32 (K = 1, 33, 40 here):
        # the oracle is then its definition, float32 sums scaled in float32, rounded once
        want = ((a.float() @ b.float().t()) * s.float()).to(a.dtype)
    else:
        want = torch._weight_int8pack_mm(a, b, s)
    _close(int8mm(a, b, s), want)


def test_int8pack_mm_strided_and_empty():
    import torch

    # K = 64: torch's bfloat16 kernel crashes for a K that is not a multiple of 32 (test_int8pack_mm_matches_torch)
    a, b, s = _int8_operands(6, 64, 24, torch.bfloat16, seed=1)
    want = torch._weight_int8pack_mm(a, b, s)
    _close(int8mm(a.t().contiguous().t(), b, s), want)  # column-major activations
    _close(int8mm(a, b.t().contiguous().t(), s), want)  # column-major weight
    big = torch.zeros(48)
    big[::2] = s.float()
    _close(int8mm(a, b, big[::2].to(s.dtype)), want)  # strided scales
    for m, n in ((0, 24), (6, 0)):
        a0, b0, s0 = _int8_operands(m, 64, n, torch.float32)
        _close(int8mm(a0, b0, s0), torch._weight_int8pack_mm(a0, b0, s0))


def test_int8pack_mm_errors():
    import torch

    a, b, s = _int8_operands(3, 16, 8, torch.float32)
    with pytest.raises(OpError, match=r"_weight_int8pack_mm\(\): self has dtype float64"):
        int8mm(a.double(), b, s)
    with pytest.raises(OpError, match=r"_weight_int8pack_mm\(\): mat2 must be int8 but is uint8"):
        int8mm(a, b.to(torch.uint8), s)
    with pytest.raises(OpError, match=r"_weight_int8pack_mm\(\): scales is bfloat16 but self is float32"):
        int8mm(a, b, s.bfloat16())
    with pytest.raises(OpError, match=r"_weight_int8pack_mm\(\): mat2 must be \(N, K\) with self's K = 16"):
        int8mm(a, b[:, :8], s)
    with pytest.raises(OpError, match=r"_weight_int8pack_mm\(\): scales must have N = 8 elements"):
        int8mm(a, b, s[:4])
    with pytest.raises(OpError, match=r"_weight_int8pack_mm\(\): self must be 2-D"):
        int8mm(a[None], b, s)
    from slimtensor.aoti import _lib

    assert fn("aoti_torch_cpu__weight_int8pack_mm")(None, None, None, None) == 1
    assert "aoti_torch_cpu__weight_int8pack_mm" in _lib.last_error()


def _int4_operands(m, k, n, group, dtype, seed=0):
    import torch

    g = torch.Generator().manual_seed(seed)
    q = torch.randint(0, 16, (n, k), generator=g, dtype=torch.int32)
    w = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1)
    groups = (k + group - 1) // group
    sz = torch.stack([torch.rand(groups, n, generator=g) * 0.1, torch.randn(groups, n, generator=g)], -1).to(
        dtype
    )
    a = torch.randn(m, k, generator=g).to(dtype)
    return a, w, sz


# N = 16, 48, 80, 128, 144: full blocks of 64 (avx512) or 32 (avx2) and every partial block size
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    ("m", "k", "n", "group"),
    [(1, 64, 16, 32), (6, 128, 80, 64), (3, 256, 144, 128), (5, 256, 48, 256), (2, 64, 128, 32)],
)
def test_int4pack_mm_matches_torch(dtype, m, k, n, group):
    import torch

    a, w, sz = _int4_operands(m, k, n, group, getattr(torch, dtype))
    want = torch.ops.aten._weight_int4pack_mm_for_cpu(a, w, group, sz)
    _close(int4mm(a, w, group, sz), want)


def test_int4pack_mm_strided_and_empty():
    import torch

    a, w, sz = _int4_operands(4, 64, 64, 32, torch.bfloat16, seed=3)
    want = torch.ops.aten._weight_int4pack_mm_for_cpu(a, w, 32, sz)
    _close(int4mm(a.t().contiguous().t(), w, 32, sz), want)  # torch needs contiguous activations; we copy
    _close(int4mm(a, w, 32, sz.transpose(0, 1).contiguous().transpose(0, 1)), want)
    a0 = a[:0]
    _close(int4mm(a0, w, 32, sz), torch.ops.aten._weight_int4pack_mm_for_cpu(a0, w, 32, sz))


def test_int4pack_mm_errors():
    import torch

    a, w, sz = _int4_operands(2, 64, 32, 32, torch.float32)
    name = r"_weight_int4pack_mm_cpu_tensor\(\)"
    with pytest.raises(OpError, match=name + r": the group size must be 32, 64, 128 or 256 but is 16"):
        int4mm(a, w, 16, sz)
    with pytest.raises(OpError, match=name + r": qGroupSize must be one int64 element"):
        int4mm(a, w, torch.tensor([32, 32]), sz)
    with pytest.raises(OpError, match=name + r": qGroupSize must be one int64 element"):
        int4mm(a, w, torch.tensor([32], dtype=torch.int32), sz)
    with pytest.raises(OpError, match=name + r": w must be uint8"):
        int4mm(a, w.to(torch.int8), 32, sz)
    with pytest.raises(OpError, match=name + r": w must be \(N, K/2\) = \(32, 32\)"):
        int4mm(a, w[:, :16].contiguous(), 32, sz)
    with pytest.raises(OpError, match=name + r": w must be contiguous"):
        int4mm(a, w.t().contiguous().t(), 32, sz)
    with pytest.raises(OpError, match=name + r": N = 8 must be a multiple of 16"):
        int4mm(a, w[:8].contiguous(), 32, sz[:, :8].contiguous())
    with pytest.raises(
        OpError, match=name + r": qScaleAndZeros must be \(ceil\(K/group\), N, 2\) = \(2, 32, 2\)"
    ):
        int4mm(a, w, 32, sz[:1].contiguous())
    with pytest.raises(OpError, match=name + r": qScaleAndZeros is bfloat16 but self is float32"):
        int4mm(a, w, 32, sz.bfloat16())
    with pytest.raises(OpError, match=name + r": self has dtype int64"):
        int4mm(a.long(), w, 32, sz)

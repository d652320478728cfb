"""The attention fallbacks (slimtensor's tiled kernel) against a float64 reference on the GPU:
_scaled_dot_product_efficient_attention (float32, bfloat16, float16; attn_bias, causal), then
_scaled_dot_product_flash_attention and _scaled_dot_product_cudnn_attention (bfloat16, float16): sequence and
head-dim tails, the layouts AOTI passes ((B, S, H, D) transposed), grouped-query heads, the outputs' shapes and
strides as torch's meta functions give them, the logsumexp, and the errors.

Tolerances (relative Frobenius error against float64 softmax(QK^T*scale + bias)V of the same rounded inputs):
float32 2e-5 (3xTF32 on tensor cores, as torch's float32 kernel), bfloat16 2e-2, float16 4e-3 (P is rounded to
the input type for P.V, as flash attention does); logsumexp 1e-4 (float32 2e-6) relative.
"""

from __future__ import annotations

import math

import pytest

from ._cuda_calls import OpError, call, delete, is_defined, rel_error, to_torch

pytestmark = pytest.mark.needs_cuda

TOL = {"float32": 2e-5, "bfloat16": 2e-2, "float16": 4e-3}
LSE_TOL = {"float32": 2e-6, "bfloat16": 1e-4, "float16": 1e-4}


def reference(torch, q, k, v, bias, causal, scale):
    q, k, v = q.double(), k.double(), v.double()
    rep = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    s = (q @ k.transpose(-1, -2)) * scale
    if bias is not None:
        s = s + bias.double()
    if causal:
        mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)


def make_qkv(torch, b, h, hk, sq, sk, d, dv, dtype, layout, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)

    def one(heads, s, dim):
        if layout == "bshd":  # what AOTI code passes after a projection: (B, S, H, D) viewed as (B, H, S, D)
            return torch.randn(b, s, heads, dim, generator=gen, device="cuda").to(dtype).transpose(1, 2)
        if layout == "sliced":  # head dim not contiguous: the kernel's element-load path
            return torch.randn(b, heads, s, 2 * dim, generator=gen, device="cuda").to(dtype)[..., ::2]
        return torch.randn(b, heads, s, dim, generator=gen, device="cuda").to(dtype)

    return one(h, sq, d), one(hk, sk, d), one(hk, sk, dv)


def efficient(q, k, v, bias, causal, scale, want_lse=True):
    import ctypes

    def args(c):
        sc = ctypes.c_double(scale) if scale is not None else None
        c.keep.append(sc)
        return (
            c.tensor(q),
            c.tensor(k),
            c.tensor(v),
            c.optional(bias),
            int(want_lse),
            0.0,
            int(causal),
            ctypes.byref(sc) if sc is not None else None,
        )

    out, lse, seed, offset = call("aoti_torch_cuda__scaled_dot_product_efficient_attention", args, "hhhh")
    delete(seed)
    delete(offset)
    return to_torch(out), to_torch(lse)


SHAPES = [
    # b, h, hk, sq, sk, d, dv
    (2, 3, 3, 77, 130, 40, 40),
    (1, 2, 2, 64, 64, 64, 64),
    (2, 4, 2, 33, 200, 64, 64),  # grouped-query heads
    (1, 2, 2, 129, 65, 128, 128),
    (1, 1, 1, 5, 7, 16, 16),
    (2, 2, 2, 50, 90, 80, 48),  # value dim != key dim (efficient only)
    (1, 2, 2, 1, 300, 96, 96),  # one query (decoding)
]


@pytest.mark.parametrize("dtype_name", list(TOL))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("mode", ["plain", "causal", "bias", "bias_causal"])
@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
def test_efficient_attention(cuda_torch, dtype_name, shape, mode, layout):
    torch = cuda_torch
    b, h, hk, sq, sk, d, dv = shape
    dt = getattr(torch, dtype_name)
    q, k, v = make_qkv(torch, b, h, hk, sq, sk, d, dv, dt, layout, seed=sq * 31 + sk)
    bias = None
    if "bias" in mode:
        gen = torch.Generator(device="cuda").manual_seed(1)
        bias = torch.randn(b, 1, sq, sk, generator=gen, device="cuda").to(dt).expand(b, h, sq, sk)
    causal = "causal" in mode
    scale = 1.0 / math.sqrt(d)
    out, lse = efficient(q, k, v, bias, causal, None)
    torch.cuda.synchronize()
    ref, ref_lse = reference(torch, q, k, v, bias, causal, scale)
    assert out.shape == (b, h, sq, dv)
    assert out.stride() == (sq * h * dv, dv, h * dv, 1)  # torch's meta: (B, Sq, H, Dv) transposed
    assert lse.shape == (b, h, (sq + 31) // 32 * 32) and lse.dtype == torch.float32
    err = rel_error(out, ref)
    assert err <= TOL[dtype_name], f"relative error {err:.2e} > {TOL[dtype_name]}"
    lse_err = rel_error(lse[..., :sq], ref_lse)
    assert lse_err <= LSE_TOL[dtype_name], f"logsumexp relative error {lse_err:.2e}"


@pytest.mark.parametrize("dtype_name", list(TOL))
@pytest.mark.parametrize(
    "shape",
    [
        (2, 33, 33, 500, 130, 40, 40),  # >= 264 blocks of 128 rows: 128-row blocks (launch_rows)
        (2, 2, 2, 300, 257, 64, 64),  # a small grid: 64-row blocks
        (1, 3, 3, 130, 130, 40, 40),
        (1, 1, 1, 9, 500, 32, 32),
    ],
    ids=lambda s: "x".join(map(str, s)),
)
def test_block_shapes(cuda_torch, dtype_name, shape):
    """Each block shape the launcher picks by size (a big grid and small ones), with a bias, causal and not."""
    torch = cuda_torch
    b, h, hk, sq, sk, d, dv = shape
    dt = getattr(torch, dtype_name)
    q, k, v = make_qkv(torch, b, h, hk, sq, sk, d, dv, dt, "bshd", seed=sq + h)
    bias = torch.randn(1, h, sq, sk, device="cuda").to(dt)
    for causal in (False, True):
        out, lse = efficient(q, k, v, bias, causal, None)
        torch.cuda.synchronize()
        ref, ref_lse = reference(torch, q, k, v, bias, causal, 1 / math.sqrt(d))
        assert rel_error(out, ref) <= TOL[dtype_name]
        assert rel_error(lse[..., :sq], ref_lse) <= LSE_TOL[dtype_name]


@pytest.mark.parametrize("dtype_name", list(TOL))
def test_efficient_attention_sliced_head_dim_and_scale(cuda_torch, dtype_name):
    torch = cuda_torch
    dt = getattr(torch, dtype_name)
    q, k, v = make_qkv(torch, 2, 2, 2, 45, 70, 24, 24, dt, "sliced", seed=3)
    out, _ = efficient(q, k, v, None, True, 0.3, want_lse=False)
    torch.cuda.synchronize()
    ref, _ = reference(torch, q, k, v, None, True, 0.3)
    assert rel_error(out, ref) <= TOL[dtype_name]


def test_efficient_attention_without_lse_returns_an_empty_one(cuda_torch):
    torch = cuda_torch
    q, k, v = make_qkv(torch, 1, 2, 2, 10, 10, 32, 32, torch.float32, "bhsd", seed=4)
    out, lse = efficient(q, k, v, None, False, None, want_lse=False)
    assert lse.shape == (1, 2, 0)


def test_efficient_attention_bias_minus_inf_row_gives_zeros(cuda_torch):
    """A row whose keys are all masked by the bias: 0 rather than NaN (Note [Tiled attention kernel])."""
    torch = cuda_torch
    q, k, v = make_qkv(torch, 1, 1, 1, 4, 6, 16, 16, torch.float32, "bhsd", seed=5)
    bias = torch.zeros(1, 1, 4, 6, device="cuda")
    bias[0, 0, 2] = float("-inf")
    out, _ = efficient(q, k, v, bias, False, None)
    torch.cuda.synchronize()
    assert torch.equal(out[0, 0, 2], torch.zeros(16, device="cuda"))
    ref, _ = reference(torch, q[:, :, [0, 1, 3]], k, v, bias[:, :, [0, 1, 3]], False, 0.25)
    assert rel_error(out[:, :, [0, 1, 3]], ref) <= TOL["float32"]


def flash(q, k, v, causal):
    vals = call(
        "aoti_torch_cuda__scaled_dot_product_flash_attention",
        lambda c: (c.tensor(q), c.tensor(k), c.tensor(v), 0.0, int(causal), 0, None),
        "hhhhiihhh",
    )
    out, lse, cq, ck, max_q, max_k, seed, offset, dbg = vals
    assert not is_defined(cq) and not is_defined(ck)
    for hd in (cq, ck, seed, offset):
        delete(hd)
    dbg_t = to_torch(dbg)
    return to_torch(out), to_torch(lse), max_q, max_k, dbg_t


def cudnn(q, k, v, bias, causal):
    vals = call(
        "aoti_torch_cuda__scaled_dot_product_cudnn_attention",
        lambda c: (c.tensor(q), c.tensor(k), c.tensor(v), c.optional(bias), 1, 0.0, int(causal), 0, None),
        "hhhhiihhh",
    )
    out, lse, cq, ck, max_q, max_k, seed, offset, dbg = vals
    assert not is_defined(cq) and not is_defined(ck) and not is_defined(dbg)
    for hd in (cq, ck, seed, offset, dbg):
        delete(hd)
    return to_torch(out), to_torch(lse), max_q, max_k


@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention(cuda_torch, dtype_name, layout, causal):
    torch = cuda_torch
    dt = getattr(torch, dtype_name)
    q, k, v = make_qkv(torch, 2, 3, 3, 100, 100 if causal else 150, 64, 64, dt, layout, seed=6)
    out, lse, max_q, max_k, dbg = flash(q, k, v, causal)
    torch.cuda.synchronize()
    ref, ref_lse = reference(torch, q, k, v, None, causal, 1 / 8)
    assert out.stride() == torch.empty_like(q).stride()  # torch's meta: empty_like(query)
    assert lse.shape == (2, 3, 100) and (max_q, max_k) == (100, k.shape[2])
    assert dbg.numel() == 0 and dbg.dtype == dt
    assert rel_error(out, ref) <= TOL[dtype_name]
    assert rel_error(lse, ref_lse) <= LSE_TOL[dtype_name]


@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
@pytest.mark.parametrize("mode", ["plain", "causal", "bias"])
def test_cudnn_attention(cuda_torch, dtype_name, layout, mode):
    torch = cuda_torch
    dt = getattr(torch, dtype_name)
    q, k, v = make_qkv(torch, 2, 4, 4, 70, 70, 64, 64, dt, layout, seed=7)
    bias = torch.randn(1, 4, 70, 70, device="cuda").to(dt) if mode == "bias" else None
    out, lse, max_q, max_k = cudnn(q, k, v, bias, mode == "causal")
    torch.cuda.synchronize()
    ref, ref_lse = reference(torch, q, k, v, bias, mode == "causal", 1 / 8)
    assert lse.shape == (2, 4, 70, 1) and (max_q, max_k) == (70, 70)
    order = sorted(range(4), key=lambda i: -q.stride()[i])
    assert sorted(range(4), key=lambda i: -out.stride()[i]) == order  # alloc_with_matching_layout
    assert rel_error(out, ref) <= TOL[dtype_name]
    assert rel_error(lse[..., 0], ref_lse) <= LSE_TOL[dtype_name]


@pytest.mark.parametrize(
    "case,match",
    [
        ("dropout", "dropout_p"),
        ("head_dim", "exceeds 128"),
        ("dtype_mix", "must share query's dtype"),
        ("rank", "expects 4-D"),
        ("bias_shape", "does not broadcast"),
        ("heads", "shapes do not fit"),
    ],
)
def test_efficient_attention_errors(cuda_torch, case, match):
    torch = cuda_torch
    q = torch.randn(1, 2, 8, 16, device="cuda")
    k = torch.randn(1, 2, 8, 16, device="cuda")
    v = torch.randn(1, 2, 8, 16, device="cuda")
    bias, dropout = None, 0.0
    if case == "dropout":
        dropout = 0.1
    elif case == "head_dim":
        q, k, v = (torch.randn(1, 2, 8, 160, device="cuda") for _ in range(3))
    elif case == "dtype_mix":
        k = k.half()
    elif case == "rank":
        q = q[0]
    elif case == "bias_shape":
        bias = torch.randn(3, 8, device="cuda")
    elif case == "heads":
        k = torch.randn(1, 3, 8, 16, device="cuda")
        v = torch.randn(1, 3, 8, 16, device="cuda")

    def args(c):
        return (c.tensor(q), c.tensor(k), c.tensor(v), c.optional(bias), 1, dropout, 0, None)

    with pytest.raises(OpError, match=match) as ei:
        call("aoti_torch_cuda__scaled_dot_product_efficient_attention", args, "hhhh")
    assert "aoti_torch_cuda__scaled_dot_product_efficient_attention()" in str(ei.value)


def test_flash_attention_refuses_float32(cuda_torch):
    torch = cuda_torch
    q = torch.randn(1, 2, 8, 16, device="cuda")
    with pytest.raises(OpError, match="takes bfloat16 or float16"):
        flash(q, q, q, False)

"""aoti_torch_cuda_{mm,addmm,bmm,baddbmm}_out (cuBLASLt) against torch on the GPU: every dtype, transposed and
non-contiguous operands and outputs, the bias epilogue, broadcast batches, and the errors.

Tolerances (relative Frobenius error against a float64 product of the same rounded inputs): float32 1e-5 (full
float32, no TF32, as torch's default), bfloat16 1e-2, float16 2e-3 (one rounding of the output plus float32
accumulation); and within the same bound of torch's own result in that dtype.
"""

from __future__ import annotations

import zlib

import pytest

from ._cuda_calls import OpError, call_out, rel_error

pytestmark = pytest.mark.needs_cuda

TOL = {"float32": 1e-5, "bfloat16": 1e-2, "float16": 2e-3}
DTYPES = list(TOL)


def _dt(torch, name):
    return getattr(torch, name)


def _operand(torch, rows, cols, dtype, layout, gen):
    """A (rows x cols) matrix in one of the layouts AOTI code passes: contiguous, a transposed view (column-
    major), or a column slice (neither dimension of stride 1 after ::2: copied by the op)."""
    if layout == "contiguous":
        return torch.randn(rows, cols, generator=gen, device="cuda").to(dtype)
    if layout == "transposed":
        return torch.randn(cols, rows, generator=gen, device="cuda").to(dtype).t()
    return torch.randn(rows, cols * 2, generator=gen, device="cuda").to(dtype)[:, ::2]


def _check(torch, got, a, b, dtype_name, self_=None, beta=0.0, alpha=1.0, same=None):
    ref = alpha * (a.double() @ b.double())
    if self_ is not None and beta != 0.0:
        ref = ref + beta * self_.double()
    err = rel_error(got, ref)
    assert err <= TOL[dtype_name], f"relative error {err:.2e} > {TOL[dtype_name]}"
    if same is not None:
        err_t = rel_error(got, same.double()) if same is not None else 0.0
        assert err_t <= 2 * TOL[dtype_name], f"differs from torch's own result by {err_t:.2e}"


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("la", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("lb", ["contiguous", "transposed", "sliced"])
def test_mm_every_layout(cuda_torch, dtype_name, la, lb):
    torch = cuda_torch
    dt = _dt(torch, dtype_name)
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"{la}{lb}{dtype_name}".encode()))
    m, k, n = 37, 53, 29
    a = _operand(torch, m, k, dt, la, gen)
    b = _operand(torch, k, n, dt, lb, gen)
    out = torch.empty(m, n, device="cuda", dtype=dt)
    call_out("aoti_torch_cuda_mm_out", lambda c: (c.tensor(out), c.tensor(a), c.tensor(b)))
    torch.cuda.synchronize()
    _check(torch, out, a, b, dtype_name, same=torch.mm(a, b))


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("out_layout", ["transposed", "row_padded", "sliced"])
def test_mm_into_non_contiguous_out(cuda_torch, dtype_name, out_layout):
    torch = cuda_torch
    dt = _dt(torch, dtype_name)
    gen = torch.Generator(device="cuda").manual_seed(7)
    m, k, n = 40, 24, 33
    a = torch.randn(m, k, generator=gen, device="cuda").to(dt)
    b = torch.randn(k, n, generator=gen, device="cuda").to(dt)
    if out_layout == "transposed":
        out = torch.empty(n, m, device="cuda", dtype=dt).t()
    elif out_layout == "row_padded":
        out = torch.empty(m, n + 7, device="cuda", dtype=dt)[:, :n]
    else:
        out = torch.empty(m, 2 * n, device="cuda", dtype=dt)[:, ::2]
    base = out.clone()
    call_out("aoti_torch_cuda_mm_out", lambda c: (c.tensor(out), c.tensor(a), c.tensor(b)))
    torch.cuda.synchronize()
    _check(torch, out, a, b, dtype_name)
    del base


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize(
    "self_kind,beta,alpha",
    [
        ("vector", 1.0, 1.0),
        ("row", 1.0, 1.0),
        ("vector", 0.5, 2.0),
        ("matrix", 0.5, 2.0),
        ("column", 1.0, 1.0),
        ("nan_ignored", 0.0, 1.5),
    ],
)
def test_addmm(cuda_torch, dtype_name, self_kind, beta, alpha):
    torch = cuda_torch
    dt = _dt(torch, dtype_name)
    gen = torch.Generator(device="cuda").manual_seed(3)
    m, k, n = 65, 48, 70
    a = torch.randn(m, k, generator=gen, device="cuda").to(dt)
    b = torch.randn(n, k, generator=gen, device="cuda").to(dt).t()  # a Linear weight, transposed
    self_ = {
        "vector": lambda: torch.randn(n, generator=gen, device="cuda").to(dt),
        "row": lambda: torch.randn(1, n, generator=gen, device="cuda").to(dt),
        "matrix": lambda: torch.randn(m, n, generator=gen, device="cuda").to(dt),
        "column": lambda: torch.randn(m, 1, generator=gen, device="cuda").to(dt),
        "nan_ignored": lambda: torch.full((n,), float("nan"), device="cuda", dtype=dt),
    }[self_kind]()
    out = torch.empty(m, n, device="cuda", dtype=dt)
    call_out(
        "aoti_torch_cuda_addmm_out",
        lambda c: (c.tensor(out), c.tensor(self_), c.tensor(a), c.tensor(b), beta, alpha),
    )
    torch.cuda.synchronize()
    assert not torch.isnan(out).any()
    _check(
        torch,
        out,
        a,
        b,
        dtype_name,
        self_=self_.expand(m, n),
        beta=beta,
        alpha=alpha,
        same=torch.addmm(self_, a, b, beta=beta, alpha=alpha) if self_kind != "nan_ignored" else None,
    )


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("variant", ["plain", "transposed", "broadcast_batch", "sliced"])
def test_bmm(cuda_torch, dtype_name, variant):
    torch = cuda_torch
    dt = _dt(torch, dtype_name)
    gen = torch.Generator(device="cuda").manual_seed(5)
    bs, m, k, n = 3, 21, 34, 17
    a = torch.randn(bs, m, k, generator=gen, device="cuda").to(dt)
    b = torch.randn(bs, k, n, generator=gen, device="cuda").to(dt)
    if variant == "transposed":
        a = torch.randn(bs, k, m, generator=gen, device="cuda").to(dt).transpose(1, 2)
        b = torch.randn(bs, n, k, generator=gen, device="cuda").to(dt).transpose(1, 2)
    elif variant == "broadcast_batch":
        b = torch.randn(1, k, n, generator=gen, device="cuda").to(dt).expand(bs, k, n)
    elif variant == "sliced":
        a = torch.randn(bs, m, 2 * k, generator=gen, device="cuda").to(dt)[:, :, ::2]
    out = torch.empty(bs, m, n, device="cuda", dtype=dt)
    call_out("aoti_torch_cuda_bmm_out", lambda c: (c.tensor(out), c.tensor(a), c.tensor(b)))
    torch.cuda.synchronize()
    _check(torch, out, a, b, dtype_name, same=torch.bmm(a, b))


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_baddbmm(cuda_torch, dtype_name):
    torch = cuda_torch
    dt = _dt(torch, dtype_name)
    gen = torch.Generator(device="cuda").manual_seed(9)
    bs, m, k, n = 4, 19, 26, 23
    a = torch.randn(bs, m, k, generator=gen, device="cuda").to(dt)
    b = torch.randn(bs, n, k, generator=gen, device="cuda").to(dt).transpose(1, 2)
    self_ = torch.randn(1, m, n, generator=gen, device="cuda").to(dt)
    out = torch.empty(bs, m, n, device="cuda", dtype=dt)
    call_out(
        "aoti_torch_cuda_baddbmm_out",
        lambda c: (c.tensor(out), c.tensor(self_), c.tensor(a), c.tensor(b), 0.75, 1.25),
    )
    torch.cuda.synchronize()
    _check(
        torch,
        out,
        a,
        b,
        dtype_name,
        self_=self_.expand(bs, m, n),
        beta=0.75,
        alpha=1.25,
        same=torch.baddbmm(self_, a, b, beta=0.75, alpha=1.25),
    )


def test_mm_large_square_bf16(cuda_torch):
    """The benchmark's shape, checked once for correctness."""
    torch = cuda_torch
    gen = torch.Generator(device="cuda").manual_seed(11)
    a = torch.randn(2048, 2048, generator=gen, device="cuda").bfloat16()
    b = torch.randn(2048, 2048, generator=gen, device="cuda").bfloat16()
    out = torch.empty_like(a)
    call_out("aoti_torch_cuda_mm_out", lambda c: (c.tensor(out), c.tensor(a), c.tensor(b)))
    torch.cuda.synchronize()
    _check(torch, out, a, b, "bfloat16", same=torch.mm(a, b))


def test_empty_k_gives_zeros_or_self(cuda_torch):
    torch = cuda_torch
    a = torch.empty(5, 0, device="cuda")
    b = torch.empty(0, 4, device="cuda")
    out = torch.full((5, 4), 3.0, device="cuda")
    call_out("aoti_torch_cuda_mm_out", lambda c: (c.tensor(out), c.tensor(a), c.tensor(b)))
    torch.cuda.synchronize()
    assert torch.equal(out, torch.zeros(5, 4, device="cuda"))
    self_ = torch.arange(4.0, device="cuda")
    call_out(
        "aoti_torch_cuda_addmm_out",
        lambda c: (c.tensor(out), c.tensor(self_), c.tensor(a), c.tensor(b), 1.0, 1.0),
    )
    torch.cuda.synchronize()
    assert torch.equal(out, self_.expand(5, 4))


@pytest.mark.parametrize(
    "case,match",
    [
        ("dtype", "must share out's dtype"),
        ("shape", "do not multiply"),
        ("rank", "expects 2-D"),
        ("int", "supported dtypes are float32, bfloat16 and float16"),
        ("null", "null AtenTensorHandle"),
    ],
)
def test_mm_errors(cuda_torch, case, match):
    torch = cuda_torch
    a = torch.randn(4, 5, device="cuda")
    b = torch.randn(5, 6, device="cuda")
    out = torch.empty(4, 6, device="cuda")
    if case == "dtype":
        b = b.bfloat16()
    elif case == "shape":
        b = torch.randn(4, 6, device="cuda")
    elif case == "rank":
        a = torch.randn(2, 4, 5, device="cuda")
    elif case == "int":
        a, b, out = a.long(), b.long(), out.long()
    with pytest.raises(OpError, match=match) as ei:
        if case == "null":
            call_out("aoti_torch_cuda_mm_out", lambda c: (c.tensor(out), None, c.tensor(b)))
        else:
            call_out("aoti_torch_cuda_mm_out", lambda c: (c.tensor(out), c.tensor(a), c.tensor(b)))
    assert "aoti_torch_cuda_mm_out()" in str(ei.value)


def test_addmm_self_that_does_not_broadcast(cuda_torch):
    torch = cuda_torch
    a, b = torch.randn(4, 5, device="cuda"), torch.randn(5, 6, device="cuda")
    self_ = torch.randn(3, 6, device="cuda")
    out = torch.empty(4, 6, device="cuda")
    with pytest.raises(OpError, match="does not broadcast"):
        call_out(
            "aoti_torch_cuda_addmm_out",
            lambda c: (c.tensor(out), c.tensor(self_), c.tensor(a), c.tensor(b), 0.5, 1.0),
        )

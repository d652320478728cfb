"""The complex fallbacks around the FFTs (aoti_torch_cpu_view_as_real, _view_as_complex, _mul_Tensor; Notes [Complex
views] and [mul_Tensor] in src/aoti/ops/complex_ops.cpp) through the C ABI, against torch eager: views share
storage with torch's sizes, strides and offsets; mul's values, result dtype and output strides (TensorIterator's)
for every dtype pairing, broadcasting, non-contiguous, 0-d and empty operands; errors. op_fft_strided
(op_model_zoo.py) reaches view_as_real and mul_Tensor from a compiled model."""

from __future__ import annotations

import pytest

from ._helpers import have_torch
from ._op_calls import OpError, assert_same, call

pytestmark = [
    pytest.mark.needs_torch,
    pytest.mark.skipif(
        not have_torch(), reason="torch is the oracle of these tests (pip install -r requirements/test.txt)"
    ),
]


def view_as_real(x):
    return call("aoti_torch_cpu_view_as_real", lambda c: [c.tensor(x)], 1)


def view_as_complex(x):
    return call("aoti_torch_cpu_view_as_complex", lambda c: [c.tensor(x)], 1)


def mul(a, b):
    return call("aoti_torch_cpu_mul_Tensor", lambda c: [c.tensor(a), c.tensor(b)], 1)


def _rand(shape, dtype, seed=0):
    import torch

    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        r = torch.float32 if dtype == torch.complex64 else torch.float64
        return torch.complex(
            torch.randn(shape, generator=g, dtype=r), torch.randn(shape, generator=g, dtype=r)
        )
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    return torch.randint(-50, 50, shape, generator=g).to(dtype)


def test_views_match_torch():
    import torch

    z = _rand((4, 6), torch.complex64)
    for v in (z, z.t(), z[:, 1::2], z[1:3], z[0, 2]):
        got, want = view_as_real(v), torch.view_as_real(v)
        assert got.shape == want.shape and got.stride() == want.stride() and got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    for dt in (torch.float32, torch.float64):
        x = _rand((3, 5, 2), dt)
        for v in (x, x[:, 1:], x.transpose(0, 1)):
            assert_same(view_as_complex(v), torch.view_as_complex(v))
    with pytest.raises(
        OpError, match=r"view_as_real\(\): view_as_real is only supported for complex tensors"
    ):
        view_as_real(torch.ones(3))
    with pytest.raises(OpError, match=r"view_as_complex\(\): self must have a last dimension of size 2"):
        view_as_complex(torch.ones(3, 3))
    with pytest.raises(OpError, match=r"view_as_complex\(\): self must have a last dimension with stride 1"):
        view_as_complex(torch.ones(2, 2).t())
    with pytest.raises(OpError, match=r"view_as_complex\(\): self must have a stride divisible by 2"):
        view_as_complex(torch.ones(9).as_strided((3, 2), (3, 1)))
    with pytest.raises(OpError, match=r"view_as_complex\(\).*int64"):
        view_as_complex(torch.ones((2, 2), dtype=torch.int64))


DTYPES = [
    "bool",
    "uint8",
    "int8",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


@pytest.mark.filterwarnings(
    "ignore:ComplexHalf support is experimental"
)  # torch's own, for its complex32 results
@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", ["bool", "int64", "float16", "float32", "float64", "complex64", "complex128"])
def test_mul_matches_torch(da, db):
    import torch

    a, b = _rand((3, 4, 5), getattr(torch, da)), _rand((3, 4, 5), getattr(torch, db), seed=1)
    cases = [
        (a, b),
        (a.transpose(0, 2), b.transpose(0, 2)),  # TensorIterator keeps the operands' dim order
        (a.permute(1, 0, 2), b.permute(1, 0, 2).contiguous()),
        (a, b[:, :1]),  # broadcast
        (a[0, 0, 0], b),  # 0-d self: counts only by its category
        (a, b[1, 2, 3]),
        (a[:, ::2], b[:, ::2]),
    ]
    for x, y in cases:
        want = torch.mul(x, y)
        if want.dtype == torch.complex32:  # (a 0-d complex times float16): refused, saying so
            with pytest.raises(OpError, match=r"mul_Tensor\(\): the product .* is complex32"):
                mul(x, y)
            continue
        got = mul(x, y)
        assert got.dtype == want.dtype and got.shape == want.shape, (x.dtype, y.dtype, got.dtype, want.dtype)
        if got.numel() > 1:
            assert got.stride() == want.stride(), (x.stride(), y.stride(), got.stride(), want.stride())
        # complex products: torch's vector kernels may fuse (a c - b d); equal to rounding
        tol = 1e-6 if want.dtype == torch.complex64 else 1e-14 if want.dtype == torch.complex128 else 0
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


def test_mul_empty_0d_and_errors():
    import torch

    for a, b in (
        (torch.zeros((0, 3), dtype=torch.complex64), torch.ones(3)),
        (torch.tensor(2.5), torch.tensor(3)),
    ):
        want = torch.mul(a, b)
        got = mul(a, b)
        assert got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    with pytest.raises(
        OpError, match=r"mul_Tensor\(\): the sizes of self \(3\) and other \(4\) must match at dim 1"
    ):
        mul(torch.ones((2, 3)), torch.ones((2, 4)))
    with pytest.raises(OpError, match=r"mul_Tensor\(\): self has dtype uint32"):
        mul(torch.ones(2, dtype=torch.uint32), torch.ones(2))

"""The FFT fallbacks (aoti_torch_cpu__fft_r2c, _fft_c2c; Note [FFT fallbacks] in src/aoti/ops/fft_ops.cpp) through
the C ABI, against torch eager's own aten ops: values to floating-point rounding (torch's CPU FFT is MKL's),
output sizes and strides exactly (the compiled models index the result with torch's strides), every dtype,
non-contiguous and empty inputs, errors. The compiled models of op_model_zoo.py (op_fft, op_fft_strided) reach
them from generated code (test_fallback_models.py)."""

from __future__ import annotations

import ctypes

import pytest

from ._helpers import have_torch
from ._op_calls import OpError, call, fn

pytestmark = [
    pytest.mark.needs_torch,
    pytest.mark.skipif(
        not have_torch(), reason="torch is the oracle of these tests (pip install -r requirements/test.txt)"
    ),
]


def _dims(dims):
    return (ctypes.c_int64 * max(1, len(dims)))(*dims), len(dims)


def r2c(x, dims, norm, onesided):
    arr, n = _dims(dims)
    return call("aoti_torch_cpu__fft_r2c", lambda c: [c.tensor(x), arr, n, norm, int(onesided)], 1)


def c2c(x, dims, norm, forward):
    arr, n = _dims(dims)
    return call("aoti_torch_cpu__fft_c2c", lambda c: [c.tensor(x), arr, n, norm, int(forward)], 1)


def _rand(shape, dtype, seed=0):
    import torch

    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        real = torch.float32 if dtype == torch.complex64 else torch.float64
        return torch.complex(
            torch.randn(shape, generator=g, dtype=real), torch.randn(shape, generator=g, dtype=real)
        )
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def _layouts(x):
    """x contiguous, permuted, sliced with a step, expanded along dim 0."""
    import torch

    big = torch.zeros((x.shape[0], x.shape[1] * 2, *x.shape[2:]), dtype=x.dtype)
    big[:, ::2] = x
    return {
        "contiguous": x,
        "permuted": x.permute(2, 0, 1).contiguous().permute(1, 2, 0),
        "step": big[:, ::2],
        "expanded": x[:1].expand(x.shape),
    }


def _assert_fft_same(got, want, dtype):
    import torch

    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    assert got.stride() == want.stride(), (got.stride(), want.stride())
    tol = 1e-5 if dtype in (torch.float32, torch.complex64) else 1e-12
    torch.testing.assert_close(got, want, rtol=tol, atol=tol * 10)


DIMS = [[2], [0], [1, 2], [2, 1], [0, 2], [0, 1, 2]]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("onesided", [True, False])
def test_r2c_matches_torch(dtype, onesided):
    import torch

    dt = getattr(torch, dtype)
    x = _rand((3, 5, 8), dt)
    for name, v in _layouts(x).items():
        for dims in DIMS:
            for norm in (0, 1, 2):
                want = torch.ops.aten._fft_r2c(v, dims, norm, onesided)
                got = r2c(v, dims, norm, onesided)
                _assert_fft_same(got, want, dt), (name, dims, norm)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("forward", [True, False])
def test_c2c_matches_torch(dtype, forward):
    import torch

    dt = getattr(torch, dtype)
    x = _rand((4, 6, 7), dt, seed=1)  # 7: an odd, prime length
    for name, v in _layouts(x).items():
        for dims in DIMS:
            for norm in (0, 1, 2):
                want = torch.ops.aten._fft_c2c(v, dims, norm, forward)
                got = c2c(v, dims, norm, forward)
                _assert_fft_same(got, want, dt), (name, dims, norm)


def test_lengths_of_every_kind():
    """Powers of two, odd, prime and large-prime lengths (pocketfft's Bluestein path), one and two sided."""
    import torch

    for n in (1, 2, 3, 16, 45, 97, 1031):
        x = _rand((2, n), torch.float64, seed=n)
        for onesided in (True, False):
            _assert_fft_same(r2c(x, [1], 0, onesided), torch.ops.aten._fft_r2c(x, [1], 0, onesided), x.dtype)
        z = _rand((n, 3), torch.complex64, seed=n)
        _assert_fft_same(c2c(z, [0], 2, False), torch.ops.aten._fft_c2c(z, [0], 2, False), z.dtype)


def _assert_empty_like_meta(got, want_meta):
    # (the strides of an empty result do not survive the trip through numpy; no model reads them)
    assert got.numel() == 0 and got.dtype == want_meta.dtype and got.shape == want_meta.shape


def test_empty_batch_and_no_dims():
    import torch

    # an empty batch: torch's MKL refuses it ("Inconsistent configuration parameters"); slimtensor returns the
    # empty result torch's meta function describes (the shape and strides a compiled model expects)
    x = torch.zeros((0, 8))
    _assert_empty_like_meta(r2c(x, [1], 0, True), torch.ops.aten._fft_r2c(x.to("meta"), [1], 0, True))
    z = _rand((0, 3, 4), torch.complex128)
    _assert_empty_like_meta(c2c(z, [1, 2], 1, True), torch.ops.aten._fft_c2c(z.to("meta"), [1, 2], 1, True))
    # c2c over no dims is a clone (strides preserved)
    w = _rand((3, 4), torch.complex64).t()
    got, want = c2c(w, [], 0, True), torch.ops.aten._fft_c2c(w, [], 0, True)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_layout_of_mixed_strides_is_torchs():
    """4-D inputs with no dense dim: the strides of torch's CPU kernel, which are those of the FakeTensor a
    compiled model is built against (torch's `.to("meta")` meta kernel differs for some of these)."""
    import torch

    x = _rand((2, 3, 4, 5), torch.float32).permute(3, 1, 0, 2)  # (5, 3, 2, 4), strides (1, 20, 60, 5)
    for dims in ([0], [3], [1, 3], [3, 1], [0, 2, 3], [2, 0, 3]):
        for onesided in (True, False):
            _assert_fft_same(
                r2c(x, dims, 0, onesided), torch.ops.aten._fft_r2c(x, dims, 0, onesided), x.dtype
            )
        z = x.to(torch.complex64)
        _assert_fft_same(c2c(z, dims, 0, True), torch.ops.aten._fft_c2c(z, dims, 0, True), z.dtype)


def test_errors():
    import torch

    with pytest.raises(OpError, match=r"_fft_r2c\(\): self has dtype float16 .*float32 or float64"):
        r2c(torch.ones(4, dtype=torch.float16), [0], 0, True)
    with pytest.raises(RuntimeError):  # torch refuses it too
        torch.ops.aten._fft_r2c(torch.ones(4, dtype=torch.float16), [0], 0, True)
    with pytest.raises(OpError, match=r"_fft_r2c\(\): self has dtype complex64"):
        r2c(torch.ones(4, dtype=torch.complex64), [0], 0, True)
    with pytest.raises(OpError, match=r"_fft_c2c\(\): self has dtype float32 .*complex64 or complex128"):
        c2c(torch.ones(4), [0], 0, True)
    with pytest.raises(OpError, match=r"_fft_r2c\(\): invalid number of data points \(0\)"):
        r2c(torch.ones((2, 0)), [1], 0, True)
    with pytest.raises(OpError, match=r"_fft_c2c\(\): invalid number of data points \(0\)"):
        c2c(torch.ones((0, 2), dtype=torch.complex64), [0], 0, True)
    with pytest.raises(OpError, match=r"_fft_r2c\(\).*dim"):
        r2c(torch.ones((2, 3)), [2], 0, True)
    with pytest.raises(OpError, match=r"_fft_r2c\(\): dim 1 appears more than once"):
        r2c(torch.ones((2, 3)), [1, -1], 0, True)
    with pytest.raises(OpError, match=r"_fft_r2c\(\): dim must name at least one dim"):
        r2c(torch.ones((2, 3)), [], 0, True)
    with pytest.raises(OpError, match=r"_fft_c2c\(\): normalization must be 0 \(none\), 1 .* but is 3"):
        c2c(torch.ones(4, dtype=torch.complex64), [0], 3, True)
    from slimtensor.aoti import _lib

    arr, n = _dims([0])
    assert fn("aoti_torch_cpu__fft_r2c")(None, arr, n, 0, 1, None) == 1
    assert "aoti_torch_cpu__fft_r2c" in _lib.last_error()

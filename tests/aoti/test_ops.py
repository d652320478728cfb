"""The CPU op fallbacks (addmm/mm/bmm/baddbmm, convolution, SDPA) against numpy, strided and bad inputs."""

from __future__ import annotations

import itertools
from ctypes import POINTER, byref, c_double, c_int32, c_int64, c_void_p

import numpy as np
import pytest
from slimtensor.aoti import _lib
from slimtensor.aoti._numpy import array_from_handle, handle_from_array

H = c_void_p
P64 = POINTER(c_int64)


@pytest.fixture(scope="module")
def L():
    lib = _lib.lib()
    for name, args in {
        "aoti_torch_cpu_addmm_out": [H, H, H, H, c_double, c_double],
        "aoti_torch_cpu_mm_out": [H, H, H],
        "aoti_torch_cpu_bmm_out": [H, H, H],
        "aoti_torch_cpu_baddbmm_out": [H, H, H, H, c_double, c_double],
        "aoti_torch_cpu_convolution": [
            H,
            H,
            POINTER(H),
            P64,
            c_int64,
            P64,
            c_int64,
            P64,
            c_int64,
            c_int32,
            P64,
            c_int64,
            c_int64,
            POINTER(H),
        ],
        "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu": [
            H,
            H,
            H,
            c_double,
            c_int32,
            POINTER(H),
            POINTER(c_double),
            POINTER(H),
            POINTER(H),
        ],
    }.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = c_int32, args
    return lib


class Handles:
    """Borrowed handles over numpy arrays, all released at the end of the test."""

    def __init__(self, lib):
        self.lib, self.hs, self.keep = lib, [], []

    def __call__(self, a):
        self.keep.append(a)
        h = handle_from_array(a)
        self.hs.append(h)
        return h

    def adopt(self, h):
        self.hs.append(h)
        return h

    def close(self):
        for h in self.hs:
            assert self.lib.aoti_torch_delete_tensor_object(h) == 0


@pytest.fixture
def hs(L):
    before = _lib.live_handles()
    h = Handles(L)
    yield h
    h.close()
    assert _lib.live_handles() == before


def rnd(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(dtype)


def tol(dtype):
    return 1e-4 if np.dtype(dtype) == np.float32 else 1e-10


# ---- matrix products ------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb,tout", list(itertools.product([False, True], repeat=3)))
def test_addmm_strided(L, hs, dtype, ta, tb, tout):
    a = rnd(7, 5, dtype=dtype)
    b = rnd(5, 9, dtype=dtype, seed=1)
    bias = rnd(9, dtype=dtype, seed=2)
    A = np.ascontiguousarray(a.T).T if ta else a  # column-major view
    B = np.ascontiguousarray(b.T).T if tb else b
    out = np.zeros((9, 7), dtype).T if tout else np.zeros((7, 9), dtype)
    assert L.aoti_torch_cpu_addmm_out(hs(out), hs(bias), hs(A), hs(B), 0.5, 2.0) == 0, _lib.last_error()
    np.testing.assert_allclose(out, 0.5 * bias + 2.0 * (a @ b), rtol=tol(dtype), atol=tol(dtype))


def test_addmm_beta_zero_ignores_nan_and_sliced_operands(L, hs):
    a = rnd(6, 8)[::2, ::2]  # strides that BLAS cannot take directly
    b = rnd(4, 5, seed=1)
    bias = np.full((3, 5), np.nan, np.float32)
    out = np.zeros((3, 5), np.float32)
    assert L.aoti_torch_cpu_addmm_out(hs(out), hs(bias), hs(a), hs(b), 0.0, 1.0) == 0, _lib.last_error()
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float16])
def test_mm_other_dtypes(L, hs, dtype):
    rng = np.random.default_rng(0)
    a = rng.integers(-5, 5, (4, 6)).astype(dtype)
    b = rng.integers(-5, 5, (6, 3)).astype(dtype)
    out = np.zeros((4, 3), dtype)
    assert L.aoti_torch_cpu_mm_out(hs(out), hs(a), hs(b)) == 0, _lib.last_error()
    np.testing.assert_array_equal(out, (a.astype(np.int64) @ b.astype(np.int64)).astype(dtype))


def test_mm_empty_k(L, hs):
    a, b = np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32)
    out = np.full((3, 4), 7, np.float32)
    assert L.aoti_torch_cpu_mm_out(hs(out), hs(a), hs(b)) == 0, _lib.last_error()
    assert not out.any()


def test_bmm_and_baddbmm(L, hs):
    a, b = rnd(3, 4, 5), rnd(3, 5, 6, seed=1)
    out = np.zeros((3, 4, 6), np.float32)
    assert L.aoti_torch_cpu_bmm_out(hs(out), hs(a), hs(b)) == 0, _lib.last_error()
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
    bias = rnd(6, seed=3)
    out2 = np.zeros((3, 4, 6), np.float32)
    assert L.aoti_torch_cpu_baddbmm_out(hs(out2), hs(bias), hs(a), hs(b), 2.0, 0.5) == 0, _lib.last_error()
    np.testing.assert_allclose(out2, 2.0 * bias + 0.5 * (a @ b), rtol=1e-5, atol=1e-5)


def test_matmul_errors(L, hs):
    a, b, out = rnd(3, 4), rnd(5, 6), np.zeros((3, 6), np.float32)
    assert L.aoti_torch_cpu_mm_out(hs(out), hs(a), hs(b)) != 0
    assert "do not multiply" in _lib.last_error()
    assert L.aoti_torch_cpu_mm_out(hs(out), hs(a), hs(rnd(4, 6, dtype=np.float64))) != 0
    assert "dtype" in _lib.last_error()
    assert L.aoti_torch_cpu_mm_out(None, hs(a), hs(b)) != 0
    assert "NULL" in _lib.last_error()
    assert L.aoti_torch_cpu_bmm_out(hs(out), hs(a), hs(b)) != 0
    assert "3-D" in _lib.last_error()
    assert L.aoti_torch_cpu_addmm_out(hs(out), hs(rnd(2, 2, 2)), hs(a), hs(rnd(4, 6)), 1.0, 1.0) != 0


# ---- convolution ------------------------------------------------------------
def conv_ref(x, w, b, stride, pad, dil, groups):
    nd = x.ndim - 2
    N, C = x.shape[:2]
    OC, k = w.shape[0], w.shape[2:]
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in pad])
    osz = [(xp.shape[2 + d] - dil[d] * (k[d] - 1) - 1) // stride[d] + 1 for d in range(nd)]
    out = np.zeros((N, OC, *osz))
    cg, ocg = C // groups, OC // groups
    for idx in np.ndindex(*k):
        sl = tuple(
            slice(idx[d] * dil[d], idx[d] * dil[d] + stride[d] * (osz[d] - 1) + 1, stride[d])
            for d in range(nd)
        )
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(groups):
            wk = w[(slice(g * ocg, (g + 1) * ocg), slice(None)) + idx].astype(np.float64)
            out[:, g * ocg : (g + 1) * ocg] += np.einsum(
                "oc,nc...->no...", wk, patch[:, g * cg : (g + 1) * cg]
            )
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    return out


def conv_transpose_ref(x, w, b, stride, pad, dil, opad, groups):
    nd = x.ndim - 2
    N, C = x.shape[:2]
    ocg, k = w.shape[1], w.shape[2:]
    cg = C // groups
    full = [(x.shape[2 + d] - 1) * stride[d] + dil[d] * (k[d] - 1) + 1 + opad[d] for d in range(nd)]
    out = np.zeros((N, ocg * groups, *full))
    for idx in np.ndindex(*k):
        sl = tuple(
            slice(idx[d] * dil[d], idx[d] * dil[d] + stride[d] * (x.shape[2 + d] - 1) + 1, stride[d])
            for d in range(nd)
        )
        for g in range(groups):
            wk = w[(slice(g * cg, (g + 1) * cg), slice(None)) + idx].astype(np.float64)  # cg, ocg
            out[(slice(None), slice(g * ocg, (g + 1) * ocg)) + sl] += np.einsum(
                "co,nc...->no...", wk, x[:, g * cg : (g + 1) * cg].astype(np.float64)
            )
    crop = tuple(slice(pad[d], full[d] - pad[d]) for d in range(nd))
    out = out[(slice(None), slice(None)) + crop]
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    return out


def run_conv(L, hs, x, w, b, stride, pad, dil, transposed=False, opad=None, groups=1):
    nd = x.ndim - 2
    arr = lambda v: (c_int64 * len(v))(*v)  # noqa: E731
    bh = H(hs(b)) if b is not None else None
    ret = H()
    opad = opad or [0] * nd
    rc = L.aoti_torch_cpu_convolution(
        hs(x),
        hs(w),
        byref(bh) if bh is not None else None,
        arr(stride),
        len(stride),
        arr(pad),
        len(pad),
        arr(dil),
        len(dil),
        int(transposed),
        arr(opad),
        len(opad),
        groups,
        byref(ret),
    )
    if rc != 0:
        return None
    hs.adopt(ret.value)
    return array_from_handle(ret.value)


CONV_CASES = [
    # nd, N, C, OC, in, k, stride, pad, dil, groups
    (1, 2, 4, 6, (10,), (3,), (1,), (1,), (1,), 1),
    (1, 1, 4, 4, (11,), (3,), (2,), (0,), (2,), 2),
    (2, 2, 8, 12, (9, 9), (3, 3), (2, 2), (1, 1), (1, 1), 4),
    (2, 1, 3, 5, (7, 8), (2, 3), (1, 2), (1, 0), (2, 1), 1),
    (3, 1, 2, 4, (5, 6, 4), (3, 2, 2), (1, 2, 1), (1, 0, 1), (1, 1, 2), 2),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution(L, hs, case, dtype):
    nd, N, C, OC, insz, k, stride, pad, dil, groups = case
    x = rnd(N, C, *insz, dtype=dtype)
    w = rnd(OC, C // groups, *k, dtype=dtype, seed=1)
    b = rnd(OC, dtype=dtype, seed=2)
    got = run_conv(L, hs, x, w, b, list(stride), list(pad), list(dil), groups=groups)
    assert got is not None, _lib.last_error()
    np.testing.assert_allclose(
        got, conv_ref(x, w, b, stride, pad, dil, groups), rtol=tol(dtype), atol=tol(dtype)
    )


@pytest.mark.parametrize(
    "case",
    [
        (1, (6,), (3,), (2,), (1,), (1,), (1,), 1),
        (2, (4, 5), (3, 3), (2, 2), (1, 0), (1, 1), (1, 0), 2),
        (2, (3, 3), (2, 2), (1, 1), (0, 0), (2, 1), (0, 0), 1),
        (3, (3, 2, 3), (2, 2, 2), (2, 1, 2), (0, 0, 1), (1, 1, 1), (1, 0, 0), 1),
    ],
)
def test_convolution_transposed(L, hs, case):
    nd, insz, k, stride, pad, dil, opad, groups = case
    x = rnd(2, 4, *insz)
    w = rnd(4, 6 // groups if groups > 1 else 3, *k, seed=1)
    b = rnd(w.shape[1] * groups, seed=2)
    got = run_conv(L, hs, x, w, b, list(stride), list(pad), list(dil), True, list(opad), groups)
    assert got is not None, _lib.last_error()
    np.testing.assert_allclose(
        got, conv_transpose_ref(x, w, b, stride, pad, dil, opad, groups), rtol=1e-4, atol=1e-4
    )


def test_convolution_no_bias_channels_last_and_param_broadcast(L, hs):
    x = rnd(1, 3, 6, 6)
    xcl = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)  # channels-last layout
    w = rnd(4, 3, 3, 3, seed=1)
    got = run_conv(L, hs, xcl, w, None, [1], [1], [1])  # length-1 lists apply to every dim
    assert got is not None, _lib.last_error()
    np.testing.assert_allclose(got, conv_ref(x, w, None, (1, 1), (1, 1), (1, 1), 1), rtol=1e-4, atol=1e-4)
    assert got.strides[1] == 4  # channels-last output, like torch's meta function


def test_convolution_errors(L, hs):
    x, w = rnd(1, 4, 5), rnd(6, 4, 3, seed=1)
    assert run_conv(L, hs, x, rnd(6, 3, 3), None, [1], [0], [1]) is None
    assert "input channels" in _lib.last_error()
    assert run_conv(L, hs, x, w, None, [0], [0], [1]) is None
    assert "stride" in _lib.last_error()
    assert run_conv(L, hs, x, w, None, [1], [-1], [1]) is None
    assert run_conv(L, hs, x, rnd(6, 4, 9), None, [1], [0], [1]) is None
    assert "too small" in _lib.last_error()
    assert run_conv(L, hs, rnd(4, 5), rnd(6, 4), None, [1], [0], [1]) is None
    assert run_conv(L, hs, x, w, None, [1, 1, 1], [0], [1]) is None
    assert run_conv(L, hs, x, w, None, [1], [0], [1], groups=3) is None
    assert run_conv(L, hs, x, w, rnd(5), [1], [0], [1]) is None
    assert run_conv(L, hs, x, w, None, [2**62], [0], [1]) is None
    assert "too large" in _lib.last_error()
    assert run_conv(L, hs, x, w, None, [1], [2**40], [1]) is None
    ret = H()
    one = (c_int64 * 1)(1)
    assert (
        L.aoti_torch_cpu_convolution(None, None, None, one, 1, one, 1, one, 1, 0, one, 1, 1, byref(ret)) != 0
    )


# ---- attention ------------------------------------------------------------
def sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    scale = scale if scale is not None else 1 / np.sqrt(q.shape[-1])
    s = (q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64)) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return p @ v.astype(np.float64)


def run_sdpa(L, hs, q, k, v, mask=None, causal=False, scale=None, dropout=0.0):
    mh = H(hs(mask)) if mask is not None else None
    sc = c_double(scale) if scale is not None else None
    r0, r1 = H(), H()
    rc = L.aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
        hs(q),
        hs(k),
        hs(v),
        dropout,
        int(causal),
        byref(mh) if mh is not None else None,
        byref(sc) if sc is not None else None,
        byref(r0),
        byref(r1),
    )
    if rc != 0:
        return None, None
    hs.adopt(r0.value)
    hs.adopt(r1.value)
    return array_from_handle(r0.value), array_from_handle(r1.value)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_sdpa(L, hs, causal, mask_kind, scale):
    q, k, v = rnd(2, 3, 5, 8), rnd(2, 3, 7, 8, seed=1), rnd(2, 3, 7, 4, seed=2)
    mask = None
    if mask_kind == "bool":
        mask = np.random.default_rng(3).random((5, 7)) > 0.3
        mask[:, 0] = True
    elif mask_kind == "float":
        mask = rnd(1, 3, 5, 7, seed=4)
    out, lse = run_sdpa(L, hs, q, k, v, mask, causal, scale)
    assert out is not None, _lib.last_error()
    np.testing.assert_allclose(out, sdpa_ref(q, k, v, mask, causal, scale), rtol=1e-4, atol=1e-4)
    assert lse.shape == (2, 3, 5) and lse.dtype == np.float32


def test_sdpa_errors(L, hs):
    q = rnd(1, 2, 4, 8)
    assert run_sdpa(L, hs, q, q, q, dropout=0.1)[0] is None
    assert "dropout" in _lib.last_error()
    assert run_sdpa(L, hs, q, rnd(1, 2, 4, 6), q)[0] is None
    assert "shapes" in _lib.last_error()
    assert run_sdpa(L, hs, rnd(2, 4, 8), q, q)[0] is None
    assert run_sdpa(L, hs, q.astype(np.int64), q.astype(np.int64), q.astype(np.int64))[0] is None


def test_addmm_self_is_a_transposed_view_of_out(L, hs):
    """self sharing out's memory with other strides must still be read before out is written."""
    a, b = rnd(4, 4), rnd(4, 4, seed=1)
    out = rnd(4, 4, seed=2)
    expected = 1.0 * out.T + (a @ b)
    assert L.aoti_torch_cpu_addmm_out(hs(out), hs(out.T), hs(a), hs(b), 1.0, 1.0) == 0, _lib.last_error()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_mm_out_over_an_input(L, hs):
    """out sharing memory with an operand (through another handle) is computed aside, then written."""
    a, b = rnd(4, 4), rnd(4, 4, seed=1)
    expected = a @ b
    assert L.aoti_torch_cpu_mm_out(hs(a), hs(a), hs(b)) == 0, _lib.last_error()
    np.testing.assert_allclose(a, expected, rtol=1e-5, atol=1e-5)


def test_blas_threads(L, hs):
    from slimtensor import aoti

    L.slimtensor_blas_get_num_threads.restype = c_int32
    aoti.set_num_threads(1)
    assert L.slimtensor_blas_get_num_threads() == 1
    a, b, out = rnd(8, 8), rnd(8, 8, seed=1), np.zeros((8, 8), np.float32)
    assert L.aoti_torch_cpu_mm_out(hs(out), hs(a), hs(b)) == 0  # loads the BLAS if it was not yet
    assert L.slimtensor_blas_get_num_threads() == 1
    aoti.set_num_threads(2)
    assert L.slimtensor_blas_get_num_threads() == 2
    aoti.set_num_threads(0)  # < 1 means 1
    assert L.slimtensor_blas_get_num_threads() == 1

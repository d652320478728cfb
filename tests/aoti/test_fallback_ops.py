"""The CPU op fallbacks beyond matmul/convolution/SDPA, called through the C ABI, against torch eager: values
bit for bit, output strides, every dtype the op takes, non-contiguous and empty inputs, error cases."""

from __future__ import annotations

import pytest

from ._helpers import have_torch
from ._op_calls import DTYPE_CODES, OpError, assert_same, call, fn, opt_i32

pytestmark = [
    pytest.mark.needs_torch,
    pytest.mark.skipif(
        not have_torch(), reason="torch is the oracle of these tests (pip install -r requirements/test.txt)"
    ),
]

INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]


def _t(name):
    import torch

    return getattr(torch, name)


def rand(shape, dtype, seed=0, low=-4, high=5):
    """Random values of dtype: small integers (ties), bools, or normal floats."""
    import torch

    g = torch.Generator().manual_seed(seed)
    dt = _t(dtype) if isinstance(dtype, str) else dtype
    if dt == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dt.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dt)
    lo = 0 if dt in (torch.uint8, torch.uint16, torch.uint32, torch.uint64) else low
    return torch.randint(lo, high, shape, generator=g, dtype=torch.int64).to(dt)


def layouts(t):
    """t in several layouts: contiguous, transposed, sliced with a step, expanded."""
    import torch

    out = {"contiguous": t}
    if t.dim() >= 2:
        out["transposed"] = t.transpose(0, 1).contiguous().transpose(0, 1)
        big = torch.zeros((t.shape[0], t.shape[1] * 2, *t.shape[2:]), dtype=t.dtype)
        big[:, ::2] = t
        out["step"] = big[:, ::2]
        out["expanded"] = t[:, :1].expand(t.shape)
    return out


# ---- cumsum / cumprod --------------------------------------------------------------------------------------
SCAN = {"cumsum": "aoti_torch_cpu_cumsum", "cumprod": "aoti_torch_cpu_cumprod"}


def scan(op, x, dim, dtype=None):
    code = None if dtype is None else DTYPE_CODES[dtype]
    return call(SCAN[op], lambda c: [c.tensor(x), dim, opt_i32(code)], 1)


def _torch_scan(op, x, dim, dtype=None):
    return getattr(x, op)(dim, dtype=None if dtype is None else _t(dtype))


@pytest.mark.parametrize("op", sorted(SCAN))
@pytest.mark.parametrize("dtype", INT_DTYPES + ["bool"] + FLOAT_DTYPES)
def test_scan_matches_torch(op, dtype):
    x = rand((5, 7, 3), dtype, low=-2, high=3)
    for name, v in layouts(x).items():
        for dim in (0, 1, -1):
            assert_same(scan(op, v, dim), _torch_scan(op, v, dim)), (name, dim)


@pytest.mark.parametrize("op", sorted(SCAN))
@pytest.mark.parametrize(
    ("src", "dtype"),
    [
        ("int32", "float64"),
        ("int64", "int32"),
        ("float16", "float32"),
        ("float64", "float32"),
        ("float32", "bfloat16"),
        ("bool", "uint8"),
        ("float32", "int64"),
    ],
)
def test_scan_dtype_argument(op, src, dtype):
    x = rand((4, 33), src, low=-3, high=4)
    assert_same(scan(op, x, 1, dtype), _torch_scan(op, x, 1, dtype))


@pytest.mark.parametrize("op", sorted(SCAN))
def test_scan_long_rows_accumulate_like_torch(op):
    import torch

    x = rand((3, 5000), "float32") * (0.01 if op == "cumsum" else 1.0) + (0 if op == "cumsum" else 1.0)
    assert_same(scan(op, x, 1), _torch_scan(op, x, 1))
    h = rand((2, 3000), "float16")
    assert_same(scan(op, h, 1), _torch_scan(op, h, 1))
    big = torch.full((2, 100), 2**62, dtype=torch.int64)  # wraps like torch
    assert_same(scan(op, big, 1), _torch_scan(op, big, 1))


@pytest.mark.parametrize("op", sorted(SCAN))
def test_scan_empty_and_0d(op):
    import torch

    for x in (
        torch.zeros((0, 4)),
        torch.zeros((3, 0), dtype=torch.int32),
        torch.tensor(2.5),
        torch.tensor(3),
    ):
        for dim in (0, -1):
            if x.dim() == 2 or dim in (0, -1):
                assert_same(scan(op, x, dim), _torch_scan(op, x, dim))


@pytest.mark.parametrize("op", sorted(SCAN))
def test_scan_errors(op):
    import torch

    x = torch.ones((2, 3))
    with pytest.raises(OpError, match=rf"{SCAN[op]}\(\).*dim"):
        scan(op, x, 2)
    with pytest.raises(OpError, match=rf"{SCAN[op]}\(\).*complex64.*not implemented"):
        scan(op, torch.ones((2, 2), dtype=torch.complex64), 0)
    with pytest.raises(OpError, match=rf"{SCAN[op]}\(\).*uint32"):
        scan(op, torch.ones((2, 2), dtype=torch.uint32), 0)
    bad = fn(SCAN[op])
    from slimtensor.aoti import _lib

    assert bad(None, 0, None, None) == 1
    assert SCAN[op] in _lib.last_error()


# ---- sort / sort_stable / topk -----------------------------------------------------------------------------
def sort(x, dim, descending, stable=None):
    if stable is None:
        return call("aoti_torch_cpu_sort", lambda c: [c.tensor(x), dim, int(descending)], 2)
    return call(
        "aoti_torch_cpu_sort_stable",
        lambda c: [c.tensor(x), opt_i32(stable), dim, int(descending)],
        2,
    )


def topk(x, k, dim, largest, sorted_):
    return call(
        "aoti_torch_cpu_topk",
        lambda c: [c.tensor(x), k, dim, largest, sorted_],
        2,
    )


def with_specials(x):
    """x with NaNs, infinities, -0.0 and 0.0 mixed in (floating dtypes)."""

    if not x.dtype.is_floating_point:
        return x
    x = x.clone()
    flat = x.view(-1)
    n = flat.numel()
    for i, v in zip(
        range(0, n, 7),
        [float("nan"), float("inf"), -0.0, 0.0, float("-inf"), float("nan"), 0.0] * n,
        strict=False,
    ):
        flat[i] = v
    return x


@pytest.mark.parametrize("dtype", INT_DTYPES + ["bool", "uint16", "uint32", "uint64"] + FLOAT_DTYPES)
@pytest.mark.parametrize("stable", [None, True, False])
def test_sort_matches_torch(dtype, stable):
    import torch

    x = with_specials(rand((6, 40, 3), dtype, low=-3, high=3))
    for name, v in layouts(x).items():
        for dim in (1, 0, -1):
            for desc in (False, True):
                got = sort(v, dim, desc, stable)
                if stable is None:
                    want = torch.ops.aten.sort.default(v, dim, desc)
                else:
                    want = torch.ops.aten.sort.stable(v, stable=stable, dim=dim, descending=desc)
                assert_same(got[0], want[0]), (name, dim, desc)
                assert_same(got[1], want[1]), (name, dim, desc)


def test_sort_radix_path_and_long_rows():
    import torch

    x = rand((40000,), "int64", low=-50, high=50)  # torch's radix sort: stable even when not asked
    got, want = sort(x, 0, False), torch.sort(x, 0)
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])
    y = with_specials(rand((3, 3000), "float32"))
    for desc in (False, True):
        got, want = sort(y, 1, desc), torch.sort(y, 1, desc)
        assert_same(got[0], want[0])
        assert_same(got[1], want[1])


def test_sort_empty_0d_and_errors():
    import torch

    for x in (torch.zeros((0, 3)), torch.zeros((2, 0), dtype=torch.int64), torch.tensor(1.5)):
        got, want = sort(x, -1, True, True), torch.sort(x, dim=-1, descending=True, stable=True)
        assert_same(got[0], want[0])
        assert_same(got[1], want[1])
    with pytest.raises(OpError, match=r"aoti_torch_cpu_sort\(\).*dim"):
        sort(torch.ones(3), 1, False)
    with pytest.raises(OpError, match=r"aoti_torch_cpu_sort_stable\(\).*complex64"):
        sort(torch.ones(3, dtype=torch.complex64), 0, False, True)


@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
def test_topk_matches_torch(dtype):
    import torch

    x = with_specials(rand((5, 300), dtype, low=-3, high=3))
    for name, v in layouts(x).items():
        for k in (0, 1, 3, 4, 5, 150, 300):  # 64 * k <= n: partial_sort; else nth_element (+ sort)
            for largest in (1, 0):
                for sorted_ in (1, 0):
                    got = topk(v, k, 1, largest, sorted_)
                    want = torch.topk(v, k, 1, bool(largest), bool(sorted_))
                    assert_same(got[0], want[0]), (name, k, largest, sorted_)
                    assert_same(got[1], want[1]), (name, k, largest, sorted_)
    t = x.transpose(0, 1)
    got, want = topk(t, 2, 0, 1, 1), torch.topk(t, 2, 0)
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])


def test_topk_empty_and_errors():
    import torch

    got, want = topk(torch.zeros((0, 5)), 2, 1, 1, 1), torch.topk(torch.zeros((0, 5)), 2, 1)
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])
    with pytest.raises(OpError, match=r"aoti_torch_cpu_topk\(\): k = 6 is out of range.*size 5"):
        topk(torch.ones((2, 5)), 6, 1, 1, 1)
    with pytest.raises(OpError, match=r"aoti_torch_cpu_topk\(\).*bool"):
        topk(torch.ones((2, 5), dtype=torch.bool), 1, 1, 1, 1)
    with pytest.raises(OpError, match=r"aoti_torch_cpu_topk\(\).*dim"):
        topk(torch.ones((2, 5)), 1, 3, 1, 1)

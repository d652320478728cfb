"""Copies: dtype conversions (every pair, bit-exact against torch), copy_ between layouts with
broadcasting and overlap rules, fill_, zero_, item, tolist, clone, contiguous, to."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
import slimtensor as st

from ._util import CONVERTIBLE, NUMPY_DTYPES, layout, raises_named, st_strided, to_np

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),  # torch: complex -> real, ComplexHalf is experimental
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # numpy: NaN/overflow in reference casts
    pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning"),
]


def _f32_bits(*words):
    return np.array(words, dtype=np.uint32).view(np.float32)


# Floats that exercise rounding to bfloat16/float16: ties to even both ways, just-above-tie, denormals of
# every target, overflow thresholds, NaN with payloads and signs, signaling NaN, infinities, zeros.
F32_SPECIAL = np.concatenate(
    [
        np.array(
            [
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.1,
                -0.1,
                1 / 3,
                2.5,
                3.5,
                -2.5,
                0.5,
                1.5,
                255.5,
                300.0,
                -1.5,
                -0.5,
                65504.0,
                65519.0,
                65520.0,
                65535.0,
                65536.0,
                1e10,
                -1e10,
                2.0**31,
                -(2.0**31) - 1,
                2.0**32,
                2.0**63,
                2.0**64,
                -(2.0**63),
                1e20,
                -1e20,
                6e-5,
                6.1e-5,
                5.96e-8,
                2.98e-8,
                2.99e-8,
                1e-8,
                3e-39,
                1e-45,
                -1e-45,
                1.17549435e-38,
                3.4028235e38,
                -3.4028235e38,
                -129.0,
                127.5,
                -128.5,
                32767.5,
                32768.0,
                1234.5678,
            ],
            dtype=np.float32,
        ),
        np.array([np.nan, -np.nan, np.inf, -np.inf], dtype=np.float32),
        _f32_bits(
            0x3F808000,
            0x3F818000,
            0x3F808001,
            0x3F80FFFF,
            0x3F7F8000,
            0x7F7FFFFF,
            0x7F7F8000,
            0x7F7F7FFF,
            0x00008000,
            0x00018000,
            0x00007FFF,
            0x80008000,
            0x0000FFFF,
            0x3F801000,
            0x3F803000,
            0x3F802000,
            0x33000000,
            0x33000001,
            0x33800000,
            0x387FC000,
            0x387FE000,
            0x38800000,
            0x477FEFFF,
            0x477FF000,
            0x7FC00001,
            0x7F800001,
            0xFF800001,
            0x7FFFFFFF,
            0xFFC00000,
            0x7FA00000,
        ),
    ]
)
with np.errstate(invalid="ignore"):
    _F32_AS_F64 = F32_SPECIAL.astype(np.float64)
F64_SPECIAL = np.concatenate(
    [
        _F32_AS_F64,
        np.array(
            [
                1e-310,
                -1e-310,
                1e300,
                -1e300,
                2.0**53 + 1,
                -(2.0**31) - 1.5,
                2.0**31 - 0.5,
                4294967295.5,
                1.0000000596046448,
                1.0000001788139343,
                0.1,
                1 / 3,
                18446744073709549568.0,
                9.223372036854775e18,
                1.00048828125,
                1.000732421875,
            ],
            dtype=np.float64,
        ),
        np.array([0x7FF0000000000001, 0x7FF8000000000001, 0xFFF8000000000000], dtype=np.uint64).view(
            np.float64
        ),
    ]
)


def _source_values(name: str) -> np.ndarray:
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    if name == "bool":
        return np.array([True, False, True, True, False])
    if name in ("float16", "bfloat16"):  # every bit pattern
        return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(NUMPY_DTYPES[name])
    if name == "float32":
        return np.concatenate(
            [
                F32_SPECIAL,
                rng.standard_normal(200).astype(np.float32) * 1000,
                rng.integers(0, 2**32, 2000, dtype=np.uint64).astype(np.uint32).view(np.float32),
            ]
        )
    if name == "float64":
        return np.concatenate([F64_SPECIAL, rng.standard_normal(200) * 1e6])
    if name in ("complex64", "complex128", "complex32"):
        re = np.concatenate([F32_SPECIAL, rng.standard_normal(50).astype(np.float32)])
        im = np.roll(re, 7)
        return (re.astype(np.complex128) + 1j * im.astype(np.float64)).astype(
            np.complex64 if name != "complex128" else np.complex128
        )
    info = np.iinfo(NUMPY_DTYPES[name])
    edge = [info.min, info.max, 0, 1, info.max - 1, info.min + 1, 127, 128, 255, 256, 65535, 65536]
    edge = [v for v in edge if info.min <= v <= info.max]
    return np.concatenate(
        [
            np.array(edge, dtype=NUMPY_DTYPES[name]),
            rng.integers(info.min, info.max, 300, dtype=NUMPY_DTYPES[name], endpoint=True),
        ]
    )


def _pair_of_sources(torch, name):
    """The same source bits as a slimtensor and as a torch tensor."""
    vals = _source_values(name)
    if name == "complex32":
        pairs = np.stack([vals.real, vals.imag], axis=-1).astype(np.float16)  # (n, 2) float16
        s = st.from_numpy(pairs).view(st.complex32).reshape(-1)
        t = torch.from_numpy(pairs).view(torch.complex32).reshape(-1)
        vals = pairs.astype(np.float32).view(np.complex64).reshape(-1)  # the values complex32 holds
        return s, t, vals
    s = st.from_numpy(vals)
    if name == "bfloat16":
        t = torch.from_numpy(vals.view(np.uint16).astype(np.int32)).to(torch.uint16).view(torch.bfloat16)
    else:
        t = torch.from_numpy(vals)
    return s, t, vals


def _bytes_st(t):
    return t.contiguous().view(st.uint8).numpy().reshape(t.numel(), t.itemsize)


def _bytes_torch(torch, t):
    return t.contiguous().view(torch.uint8).numpy().reshape(t.numel(), t.element_size())


# [lo, hi) of each integer type, as floats: hi is exact (a power of two)
_INT_RANGE = {
    n: (float(np.iinfo(d).min), 2.0 ** (8 * d.itemsize - (d.kind == "i")))
    for n, d in NUMPY_DTYPES.items()
    if d.kind in "iu"
}


def _as_float64(vals: np.ndarray) -> np.ndarray:
    """Real parts as float64 (what a float -> integer conversion truncates)."""
    if vals.dtype.kind == "c":
        vals = vals.real
    return vals.astype(np.float64)


def _out_of_range(src: str, dst: str, vals: np.ndarray) -> np.ndarray:
    """Elements of a float -> integer conversion whose truncated value the destination cannot hold (UB in
    C++)."""
    if dst not in _INT_RANGE or NUMPY_DTYPES.get(src, np.dtype("f")).kind not in "fcV" and src != "bfloat16":
        return np.zeros(len(vals), bool)
    lo, hi = _INT_RANGE[dst]
    with np.errstate(invalid="ignore"):
        x = np.trunc(_as_float64(vals))
        return ~((x >= lo) & (x < hi))


def _nan_out(torch, t_out):
    if not (t_out.dtype.is_floating_point or t_out.dtype.is_complex):
        return np.zeros(t_out.numel(), bool)
    if t_out.dtype.is_complex:
        parts = torch.view_as_real(t_out.to(torch.complex64) if t_out.dtype == torch.complex32 else t_out)
        return torch.isnan(parts).any(-1).numpy()
    return torch.isnan(t_out.float()).numpy()


def _convert_both(torch, src, dst):
    s, t, vals = _pair_of_sources(torch, src)
    s_out, t_out = s.to(dtype=getattr(st, dst)), t.to(getattr(torch, dst))
    return vals, s, s_out, t_out


def _report(src, dst, s, vals, got, want, bad, what):
    i = bad[0]
    src_bits = _bytes_st(s)[i][::-1].tobytes().hex()
    got_hex, want_hex = got[i][::-1].tobytes().hex(), want[i][::-1].tobytes().hex()
    return (
        f"{src}->{dst}: {bad.size} of {len(vals)} {what} differ from torch; first at {i}: source {vals[i]!r} "
        f"(bits 0x{src_bits}) gave 0x{got_hex}, torch gives 0x{want_hex}"
    )


@pytest.mark.needs_torch
@pytest.mark.parametrize("dst", CONVERTIBLE)
@pytest.mark.parametrize("src", CONVERTIBLE)
def test_conversion_bit_exact_with_torch(torch, src, dst):
    """Every pair: bit-exact with torch on every value with a defined result (NaN results: NaN, any payload;
    float -> integer out of range: see test_out_of_range_float_to_int_follows_the_documented_rule)."""
    vals, s, s_out, t_out = _convert_both(torch, src, dst)
    got, want = _bytes_st(s_out), _bytes_torch(torch, t_out)
    nan = _nan_out(torch, t_out)
    skip = nan | _out_of_range(src, dst, vals)
    bad = np.nonzero(np.any(got != want, axis=1) & ~skip)[0]
    if bad.size:
        pytest.fail(_report(src, dst, s, vals, got, want, bad, "elements"))
    if nan.any():  # NaN stays NaN
        s_nan = np.isnan(
            to_np(s_out.to(dtype=st.complex64) if dst == "complex32" else s_out).astype(np.complex128)
        )
        assert np.array_equal(s_nan[nan], np.ones(nan.sum(), bool)), f"{src}->{dst}: a NaN was lost"


_NAN_PAIRS = [
    (a, b)
    for a in CONVERTIBLE
    for b in CONVERTIBLE
    if a not in _INT_RANGE and a != "bool" and b not in _INT_RANGE and b != "bool"
]


@pytest.mark.needs_torch
def test_nan_bits_as_torch(torch):
    """NaN results bit-exact with torch: the payload and quiet bit are kept where torch keeps them."""
    failures = []
    for src, dst in _NAN_PAIRS:
        vals, s, s_out, t_out = _convert_both(torch, src, dst)
        got, want = _bytes_st(s_out), _bytes_torch(torch, t_out)
        bad = np.nonzero(np.any(got != want, axis=1) & _nan_out(torch, t_out))[0]
        if bad.size:
            failures.append(_report(src, dst, s, vals, got, want, bad, "NaN results"))
    assert not failures, "\n".join(failures)


# Out-of-range float -> integer is where torch contradicts itself: its vectorised and scalar CPU loops give
# different bits (1e10 -> uint32 is 0 in a long tensor and 0x540BE400 in a one-element one), so no single
# rule can match it. Note [Conversion rules] fixes slimtensor's answer instead; these tests hold it to that.
OUT_OF_RANGE = [
    ("float32", 300.0, "int8", 44),
    ("float32", -1.5, "uint8", 255),
    ("float32", float("nan"), "int32", -(2**31)),
    ("float32", 1e10, "int32", -(2**31)),
    ("float64", float("nan"), "int64", -(2**63)),
    ("float64", 1e10, "uint32", 0x540BE400),
    ("float64", -2147483649.5, "int8", -1),
    ("float32", float("inf"), "uint64", 2**63),
]


@pytest.mark.parametrize("src,value,dst,want", OUT_OF_RANGE)
def test_out_of_range_float_to_int_follows_the_documented_rule(src, value, dst, want, device):
    one = st.full((1,), value, dtype=getattr(st, src), device=device).to(dtype=getattr(st, dst))
    assert one.item() == want


@pytest.mark.parametrize("src,value,dst,want", OUT_OF_RANGE)
def test_out_of_range_float_to_int_is_the_same_for_every_length_and_layout(src, value, dst, want, device):
    long = st.full((1000,), value, dtype=getattr(st, src), device=device).to(dtype=getattr(st, dst))
    strided = (
        st.full((40, 50), value, dtype=getattr(st, src), device=device).t()[::3].to(dtype=getattr(st, dst))
    )
    assert set(long.tolist()) == {want}
    assert {v for row in strided.tolist() for v in row} == {want}


@pytest.mark.parametrize("dst", [n for n in NUMPY_DTYPES if n not in ("bool",)])
@pytest.mark.parametrize("src", ["int8", "uint8", "int16", "int32", "uint16", "float16", "float32", "bool"])
def test_exact_conversions_match_numpy(src, dst, device):
    """Conversions whose result numpy defines exactly (values representable in the destination)."""
    vals = np.arange(-20, 120, dtype=np.int64)
    if src == "bool":
        vals = vals % 2
    elif NUMPY_DTYPES[src].kind == "u":
        vals = np.abs(vals)
    if NUMPY_DTYPES[dst].kind == "u":
        vals = np.abs(vals)
    a = vals.astype(NUMPY_DTYPES[src])
    got = to_np(st.from_numpy(a).to(device).to(dtype=getattr(st, dst)))
    np.testing.assert_array_equal(got, a.astype(NUMPY_DTYPES[dst]))


def test_int64_to_float32_rounds_to_nearest_even_like_numpy(device):
    vals = np.array(
        [
            2**24 + 1,
            2**24 + 3,
            2**53 + 1,
            -(2**53) - 1,
            2**62 + 2**38,
            2**63 - 1,
            -(2**63),
            123456789,
            16777217,
            16777219,
            9007199254740993,
        ],
        dtype=np.int64,
    )
    on = st.from_numpy(vals).to(device)
    got = to_np(on.to(dtype=st.float32))
    np.testing.assert_array_equal(got.view(np.uint32), vals.astype(np.float32).view(np.uint32))
    np.testing.assert_array_equal(to_np(on.to(dtype=st.float64)), vals.astype(np.float64))


def test_float32_to_bfloat16_matches_ml_dtypes_on_finite_values(device):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    a = a[np.isfinite(a)]
    on = st.from_numpy(a).to(device)
    got = to_np(on.to(dtype=st.bfloat16))
    np.testing.assert_array_equal(got.view(np.uint16), a.astype(ml_dtypes.bfloat16).view(np.uint16))
    got16 = to_np(on.to(dtype=st.float16))
    np.testing.assert_array_equal(got16.view(np.uint16), a.astype(np.float16).view(np.uint16))


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_reduced_precision_round_trip_is_exact(name, device):
    a = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(NUMPY_DTYPES[name])
    back = to_np(st.from_numpy(a).to(device).to(dtype=st.float32).to(dtype=getattr(st, name)))
    finite = np.isfinite(a.astype(np.float32))
    np.testing.assert_array_equal(back.view(np.uint16)[finite], a.view(np.uint16)[finite])
    assert np.all(np.isnan(back.astype(np.float32)[~finite]) == np.isnan(a.astype(np.float32)[~finite]))


@pytest.mark.parametrize("dt", ["float8_e4m3fn", "float8_e5m2", "float4_e2m1fn_x2"])
def test_float8_conversion_refused_clearly(dt, device):
    a = st.empty(4, dtype=getattr(st, dt), device=device)
    a.view(st.uint8).copy_(st.arange(4, dtype=st.uint8))
    with raises_named(RuntimeError, "copy_()", "not supported"):
        a.to(dtype=st.float32)
    with raises_named(RuntimeError, "copy_()"):
        st.zeros(4, device=device).to(dtype=getattr(st, dt))


def test_float8_same_dtype_copies(device):
    # got: RuntimeError "copy_(): conversion from float8_e4m3fn to float8_e4m3fn is not supported
    # (float8/float4
    # types can only be moved between tensors of the same dtype)"; so clone(), contiguous(), reshape-copies
    # fail
    for dt in [
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e4m3fnuz",
        "float8_e8m0fnu",
        "float4_e2m1fn_x2",
    ]:
        a = st.empty(2, 3, dtype=getattr(st, dt), device=device)
        a.view(st.uint8).copy_(st.arange(6, dtype=st.uint8).reshape(2, 3))
        b = a.clone()
        assert b.dtype is a.dtype and b.view(st.uint8).tolist() == [[0, 1, 2], [3, 4, 5]]
        c = a.t().contiguous()
        assert c.view(st.uint8).tolist() == [[0, 3], [1, 4], [2, 5]]
        d = st.empty(3, 2, dtype=getattr(st, dt), device=device).copy_(a.t())
        assert d.view(st.uint8).tolist() == [[0, 3], [1, 4], [2, 5]]


# --- copy_ between layouts --------------------------------------------------------------------------------

LAYOUTS = [
    ((6,), (1,), 0),
    ((6,), (2,), 1),
    ((2, 3), (3, 1), 0),
    ((2, 3), (1, 2), 0),
    ((2, 3), (1, 4), 2),
    ((3, 2, 2), (1, 3, 6), 0),
    ((3, 2, 2), (8, 4, 1), 3),
    ((2, 1, 3), (3, 9, 1), 0),
    ((0, 3), (3, 1), 0),
    ((4, 5, 3), (1, 4, 20), 0),
    ((4, 5, 3), (30, 3, 1), 5),
]


@pytest.mark.parametrize(
    "dtypes",
    [
        ("float32", "float32"),
        ("int64", "float32"),
        ("float32", "bfloat16"),
        ("uint8", "int16"),
        ("complex64", "float64"),
    ],
    ids=str,
)
@pytest.mark.parametrize(
    "dst_layout,src_layout",
    [
        (a, b)
        for a, b in itertools.product(LAYOUTS, LAYOUTS)
        if int(np.prod(a[0])) == int(np.prod(b[0])) and len(a[0]) == len(b[0]) and a[0] == b[0]
    ],
)
def test_copy_between_layouts_matches_numpy(dst_layout, src_layout, dtypes, device):
    sdt, ddt = dtypes
    src = st_strided(*src_layout, 200, sdt, device=device)
    dst = st.zeros(200, dtype=getattr(st, ddt), device=device).as_strided(*dst_layout)
    dst.copy_(src)
    ref = to_np(src).astype(NUMPY_DTYPES[ddt])
    np.testing.assert_array_equal(to_np(dst), ref)
    # elements outside the destination view are untouched
    untouched = np.ones(200, bool)
    idx = np.zeros(dst_layout[0], np.int64) + dst_layout[2]
    for d, (n, s) in enumerate(zip(dst_layout[0], dst_layout[1], strict=False)):
        shape = [1] * len(dst_layout[0])
        shape[d] = n
        idx = idx + (np.arange(n) * s).reshape(shape)
    untouched[idx.ravel()] = False
    base = dst.as_strided((200,), (1,), 0)
    assert not np.any(to_np(base)[untouched])


@pytest.mark.parametrize(
    "dst_shape,src_shape",
    [
        ((2, 3), ()),
        ((2, 3), (3,)),
        ((2, 3), (1, 3)),
        ((2, 3), (2, 1)),
        ((4, 2, 3), (2, 1)),
        ((2, 0), (1,)),
        ((3, 1, 2), (3, 1, 1)),
        ((5,), (1,)),
    ],
)
def test_copy_broadcasts_like_numpy(dst_shape, src_shape, device):
    src_np = np.asarray(np.arange(int(np.prod(src_shape)), dtype=np.float32).reshape(src_shape) + 1)
    dst = st.zeros(dst_shape, device=device)
    out = dst.copy_(st.from_numpy(src_np))  # from the CPU
    assert out is dst
    np.testing.assert_array_equal(to_np(dst), np.broadcast_to(src_np, dst_shape))
    again = st.zeros(dst_shape, device=device)
    again.copy_(st.from_numpy(src_np).to(device))  # within the device
    np.testing.assert_array_equal(to_np(again), np.broadcast_to(src_np, dst_shape))


@pytest.mark.needs_torch
@pytest.mark.parametrize(
    "dst_shape,src_shape", [((2, 3), (4,)), ((2, 3), (2, 3, 1)), ((2, 3), (3, 2)), ((1,), (2,)), ((), (2,))]
)
def test_copy_shapes_that_do_not_broadcast(torch, dst_shape, src_shape):
    with pytest.raises(RuntimeError):
        torch.zeros(dst_shape).copy_(torch.zeros(src_shape))
    with raises_named(RuntimeError, "copy_()", "broadcast"):
        st.zeros(dst_shape).copy_(st.zeros(src_shape))


def test_copy_into_self_overlapping_destination(device):
    with raises_named(RuntimeError, "copy_()", "single memory location"):
        st.zeros(1, 3, device=device).expand(4, 3).copy_(st.ones(4, 3, device=device))
    with raises_named(RuntimeError, "copy_()"):
        st.zeros(10, device=device).as_strided((3, 3), (1, 1)).copy_(st.ones(3, 3))
    # a size-0 or size-1 dim with stride 0 does not overlap
    st.zeros(3, device=device).as_strided((3, 1), (1, 0)).copy_(st.ones(3, 1, device=device))
    st.zeros(3, device=device).as_strided((0, 3), (0, 1)).copy_(st.ones(0, 3))


def test_copy_partial_overlap_refused(device):
    a = st.arange(10, dtype=st.float32, device=device)
    with raises_named(RuntimeError, "copy_()", "overlap"):
        a[1:].copy_(a[:-1])
    with raises_named(RuntimeError, "copy_()", "overlap"):
        a[:6].copy_(a[4:])
    assert a.tolist() == list(range(10))


def test_copy_interleaved_views_of_one_storage(device):
    a = st.arange(10, dtype=st.float32, device=device)
    a[::2].copy_(a[1::2])
    assert a.tolist() == [1, 1, 3, 3, 5, 5, 7, 7, 9, 9]
    b = st.arange(12, dtype=st.float32, device=device).reshape(3, 4)
    b.t()[:2].copy_(b.t()[2:])  # disjoint columns of one storage
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    ref.T[:2] = ref.T[2:].copy()
    np.testing.assert_array_equal(to_np(b), ref)


def test_copy_onto_itself_is_a_no_op(device):
    a = st.arange(5, dtype=st.float32, device=device)
    a.copy_(a)
    a.copy_(a[:])
    assert a.tolist() == [0, 1, 2, 3, 4]


def test_copy_transposed_onto_itself_overlaps_exactly(device):
    # same memory, different order: torch gives the transpose computed from a temporary-free read; we
    # only require a clear refusal or the numpy result.
    a = st.arange(9, dtype=st.float32, device=device).reshape(3, 3)
    ref = np.arange(9, dtype=np.float32).reshape(3, 3).T.copy()
    try:
        a.copy_(a.t())
    except RuntimeError as exc:
        assert "copy_()" in str(exc)
        return
    np.testing.assert_array_equal(to_np(a), ref)


@pytest.mark.needs_torch
def test_copy_full_overlap_with_dtype_view(torch):
    # torch: a = torch.arange(6.); a.copy_(a.view(torch.int32)) converts each element in place;
    # slimtensor: RuntimeError "copy_(): the source and the destination partially overlap in memory"
    t = torch.arange(6, dtype=torch.float32)
    t.copy_(t.view(torch.int32))
    s = st.arange(6, dtype=st.float32)
    s.copy_(s.view(st.int32))
    np.testing.assert_array_equal(s.numpy(), t.numpy())
    t2 = torch.arange(6, dtype=torch.float32)
    b2 = t2.view(torch.int32)
    b2.copy_(t2)
    s2 = st.arange(6, dtype=st.float32)
    c2 = s2.view(st.int32)
    c2.copy_(s2)
    np.testing.assert_array_equal(c2.numpy(), b2.numpy())


def test_copy_into_read_only():
    a = np.zeros(3, np.float32)
    a.flags.writeable = False
    with raises_named(RuntimeError, "copy_()", "read-only"):
        st.from_numpy(a).copy_(st.ones(3))


@pytest.mark.parametrize("threads", [1, 2])
def test_large_strided_copies_with_threads(threads):
    old = st.get_num_threads()
    st.set_num_threads(threads)
    try:
        a = np.random.default_rng(1).standard_normal((300, 257)).astype(np.float32)
        t = st.from_numpy(a)
        np.testing.assert_array_equal(t.t().contiguous().numpy(), a.T)
        np.testing.assert_array_equal(t.to(dtype=st.float64).numpy(), a.astype(np.float64))
        np.testing.assert_array_equal(
            t.to(dtype=st.bfloat16).numpy().view(np.uint16), a.astype(ml_dtypes.bfloat16).view(np.uint16)
        )
        np.testing.assert_array_equal(t[::3, 1::2].clone().numpy(), a[::3, 1::2])
        z = st.zeros(1 << 20)
        z.fill_(2.5)
        assert z.numpy().min() == 2.5 == z.numpy().max()
    finally:
        st.set_num_threads(old)


# --- fill_, zero_, item, tolist ---------------------------------------------------------------------------


@pytest.mark.needs_torch
@pytest.mark.parametrize("dt", CONVERTIBLE)
@pytest.mark.parametrize(
    "value",
    [0, 1, -1, 2.5, -0.0, 300, 1e10, float("nan"), float("inf"), True, 3 + 4j, 2**63 - 1, 0.1, 65520.0],
)
def test_fill_matches_torch(torch, dt, value):
    try:
        t = torch.empty(5, dtype=getattr(torch, dt)).fill_(value)
    except (RuntimeError, TypeError):
        return  # torch refuses: test_fill_out_of_range_refused_like_torch
    s = st.empty(5, dtype=getattr(st, dt)).fill_(value)
    if (
        isinstance(value, float)
        and np.isnan(value)
        and getattr(st, dt).is_floating_point | getattr(st, dt).is_complex
    ):
        # NaN bits: see test_nan_bits_as_torch
        assert np.isnan(to_np(s.to(dtype=st.complex128))).all()
        return
    np.testing.assert_array_equal(_bytes_st(s), _bytes_torch(torch, t))


@pytest.mark.needs_torch
def test_fill_out_of_range_refused_like_torch(torch):
    # torch.empty(5, dtype=torch.uint8).fill_(300) raises RuntimeError "value cannot be converted to type
    # uint8_t
    # without overflow" (np.full(5, 300, np.uint8) raises OverflowError); torch lets -1 into unsigned types
    cases = [
        ("uint8", 300),
        ("int8", 300),
        ("int8", -129),
        ("int32", 1e10),
        ("float16", 1e10),
        ("uint8", float("nan")),
        ("int64", float("inf")),
        ("int16", 2**15),
        ("float32", 1 + 2j),
    ]
    for dt, value in cases:
        with pytest.raises(RuntimeError):
            torch.empty(5, dtype=getattr(torch, dt)).fill_(value)
        with pytest.raises((RuntimeError, ValueError, OverflowError)) as info:
            st.empty(5, dtype=getattr(st, dt)).fill_(value)
        assert "fill_()" in str(info.value)
    for dt, value in [("uint8", -1), ("uint64", -1), ("uint16", -1)]:  # wraps, as in torch
        want = torch.empty(2, dtype=getattr(torch, dt)).fill_(value)
        got = st.empty(2, dtype=getattr(st, dt)).fill_(value)
        assert got.tolist() == want.tolist()


def test_fill_strided_view_only_touches_the_view(device):
    a = st.zeros(4, 5, device=device)
    a[1:, ::2].fill_(3.0)
    a.t()[4].zero_()
    ref = np.zeros((4, 5), np.float32)
    ref[1:, ::2] = 3
    ref.T[4] = 0
    np.testing.assert_array_equal(to_np(a), ref)


def test_fill_returns_self_and_rejects_non_numbers(device):
    a = st.zeros(3, device=device)
    assert a.fill_(1) is a and a.zero_() is a
    with raises_named(TypeError, "fill_()"):
        a.fill_("x")
    with raises_named(TypeError, "fill_()"):
        a.fill_(None)


def test_fill_expanded_is_refused(device):
    with pytest.raises(RuntimeError):
        st.zeros(1, 3, device=device).expand(2, 3).fill_(1.0)


@pytest.mark.needs_torch
@pytest.mark.parametrize("dt", CONVERTIBLE)
def test_item_matches_torch(torch, dt):
    s, t, vals = _pair_of_sources(torch, dt)
    n = len(vals)
    for i in sorted({0, 1, 2, n // 2, n - 1, *range(0, min(n, 60))}):
        got, want = s[i].item(), t[i].item()
        assert type(got) is type(want), (dt, i, got, want)
        if isinstance(want, float) and np.isnan(want) or isinstance(want, complex) and np.isnan(want):
            assert np.isnan(got)
        else:
            assert got == want, (dt, i, got, want)


def test_item_uint64_above_int64(device):
    a = np.array([2**64 - 1, 2**63, 2**63 - 1], dtype=np.uint64)
    t = st.from_numpy(a).to(device)
    assert [t[i].item() for i in range(3)] == [2**64 - 1, 2**63, 2**63 - 1]
    assert t.tolist() == [2**64 - 1, 2**63, 2**63 - 1]


def test_item_0d_and_errors(device):
    assert st.full((), 7, device=device).item() == 7
    assert st.full((1, 1), 2.5, device=device).item() == 2.5
    with raises_named(RuntimeError, "item()"):
        st.zeros(2, device=device).item()
    with raises_named(RuntimeError, "item()"):
        st.zeros(0, device=device).item()


def test_python_scalar_conversions():
    assert float(st.full((), 2.5)) == 2.5 and int(st.full((1,), 3)) == 3 and bool(st.full((), True))
    assert complex(st.full((), 1 + 2j)) == 1 + 2j
    with pytest.raises(TypeError):
        float(st.zeros(2))
    with pytest.raises(TypeError):
        bool(st.zeros(2))


@pytest.mark.parametrize("dt", [n for n in NUMPY_DTYPES if n != "bfloat16"])
def test_tolist_matches_numpy(dt, device):
    a = np.arange(24).reshape(2, 3, 4).astype(NUMPY_DTYPES[dt])
    t = st.from_numpy(a).to(device)
    assert t.tolist() == a.tolist()
    assert t.t().tolist() if False else t.permute(2, 0, 1).tolist() == a.transpose(2, 0, 1).tolist()
    assert t[0, 1, 2].tolist() == a[0, 1, 2].tolist()


def test_tolist_bfloat16_and_complex32_give_python_numbers():
    assert st.full((2,), 1.5, dtype=st.bfloat16).tolist() == [1.5, 1.5]
    assert st.full((2,), 1 + 2j, dtype=st.complex32).tolist() == [1 + 2j, 1 + 2j]


# --- clone, contiguous, to -------------------------------------------------------------------------------

MAKERS = {
    "contiguous": lambda m: m.arange(120, dtype=m.float32).reshape(2, 3, 4, 5),
    "channels_last": lambda m: m.arange(120, dtype=m.float32).reshape(2, 4, 5, 3).permute(0, 3, 1, 2),
    "transposed": lambda m: m.arange(120, dtype=m.float32).reshape(2, 3, 4, 5).transpose(1, 3),
    "sliced": lambda m: m.arange(240, dtype=m.float32).reshape(2, 3, 4, 10)[:, :, :, ::2],
    "expanded": lambda m: m.arange(20, dtype=m.float32).reshape(1, 1, 4, 5).expand(2, 3, 4, 5),
    "size-1": lambda m: (
        m.arange(20, dtype=m.float32).reshape(1, 4, 1, 5).as_strided((1, 4, 1, 5), (7, 5, 3, 1))
    ),
    "empty": lambda m: m.zeros(2, 0, 4, 5).transpose(2, 3),
    "1-d": lambda m: m.arange(10, dtype=m.float32)[::3],
}


@pytest.mark.needs_torch
@pytest.mark.parametrize("name", list(MAKERS))
@pytest.mark.parametrize("fmt", [None, "contiguous_format", "preserve_format", "channels_last"])
def test_clone_layout_matches_torch(torch, name, fmt):
    s, t = MAKERS[name](st), MAKERS[name](torch)
    kwargs_t = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
    kwargs_s = {} if fmt is None else {"memory_format": getattr(st, fmt)}
    try:
        tc = t.clone(**kwargs_t)
    except RuntimeError:
        with pytest.raises((RuntimeError, ValueError)):
            s.clone(**kwargs_s)
        return
    sc = s.clone(**kwargs_s)
    assert sc.shape == tuple(tc.shape)
    assert sc.stride() == tc.stride(), (name, fmt)
    assert sc.storage_offset() == 0 and sc.storage().id != s.storage().id
    np.testing.assert_array_equal(to_np(sc), tc.numpy())


@pytest.mark.needs_torch
@pytest.mark.parametrize("name", list(MAKERS))
@pytest.mark.parametrize("fmt", [None, "contiguous_format", "channels_last", "channels_last_3d"])
def test_contiguous_matches_torch(torch, name, fmt):
    s, t = MAKERS[name](st), MAKERS[name](torch)
    kwargs_t = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
    kwargs_s = {} if fmt is None else {"memory_format": getattr(st, fmt)}
    try:
        tc = t.contiguous(**kwargs_t)
    except RuntimeError:
        with pytest.raises((RuntimeError, ValueError)):
            s.contiguous(**kwargs_s)
        return
    sc = s.contiguous(**kwargs_s)
    assert (sc is s) == (tc is t), "contiguous() returns the tensor itself exactly when torch does"
    assert layout(sc) == layout(tc)
    assert sc.is_contiguous(**kwargs_s)
    np.testing.assert_array_equal(to_np(sc), tc.numpy())


@pytest.mark.needs_torch
def test_channels_last_strides_of_empty_tensors(torch):
    # torch.zeros(2, 0, 5, 4).contiguous(memory_format=torch.channels_last).stride() == (0, 1, 0, 0)
    # (torch multiplies raw sizes for channels_last); slimtensor gives (20, 1, 4, 1)
    for shape in [(2, 0, 5, 4), (0, 3, 2, 2), (2, 3, 0, 4)]:
        t = torch.zeros(shape).clone(memory_format=torch.channels_last)
        s = st.zeros(shape).clone(memory_format=st.channels_last)
        assert s.stride() == t.stride(), shape
        assert (
            s.contiguous(memory_format=st.channels_last).stride()
            == torch.zeros(shape).contiguous(memory_format=torch.channels_last).stride()
        )


@pytest.mark.needs_torch
def test_clone_preserves_strides_of_empty_tensors(torch):
    # torch.zeros(1).as_strided((0, 0, 2, 0), (12, 6, 2, 1)).clone().stride() == (12, 6, 2, 1) (an empty
    # tensor
    # is non-overlapping and dense); slimtensor gives (2, 2, 1, 1)
    for shape, strides in [((0, 0, 2, 0), (12, 6, 2, 1)), ((2, 0), (1, 2)), ((0, 3), (1, 5))]:
        t = torch.zeros(1).as_strided(shape, strides).clone()
        s = st.zeros(1).as_strided(shape, strides).clone()
        assert s.stride() == t.stride(), (shape, strides)


@pytest.mark.needs_torch
def test_preserve_format_of_non_dense_follows_torch(torch):
    # x = arange(24).reshape(4, 6)[:, ::2].t(): strides (2, 6); torch's x.clone(), empty_like(x),
    # x.to(float64)
    # have strides (1, 3); slimtensor gives (4, 1). Also (1, 1, 2, 1):(12, 2, 4, 1) -> torch (2, 1, 1, 1).
    cases = [
        lambda m: m.arange(24).reshape(4, 6)[:, ::2].t(),
        lambda m: m.arange(300).as_strided((1, 1, 2, 1), (12, 2, 4, 1)),
        lambda m: m.arange(300).as_strided((2, 3, 4, 5), (120, 1, 30, 6)),
        lambda m: m.arange(100).as_strided((3, 2), (1, 7)),
    ]
    for make in cases:
        s, t = make(st), make(torch)
        assert s.stride() == t.stride()
        assert s.clone().stride() == t.clone().stride(), t.stride()
        assert st.empty_like(s).stride() == torch.empty_like(t).stride(), t.stride()
        assert s.to(dtype=st.float64).stride() == t.to(torch.float64).stride(), t.stride()


def test_contiguous_preserve_format_refused():
    with raises_named(ValueError, "contiguous()"):
        st.zeros(2, 3).t().contiguous(memory_format=st.preserve_format)


def test_to_returns_self_when_nothing_changes():
    a = st.arange(4)
    assert a.to(dtype=st.int64) is a
    assert a.to("cpu") is a
    assert a.to(st.Device("cpu"), st.int64) is a
    assert a.to(a) is a
    assert a.cpu() is a
    c = a.to(dtype=st.int64, copy=True)
    assert c is not a and c.data_ptr() != a.data_ptr() and c.tolist() == a.tolist()
    d = a.to(st.float16)
    assert d.dtype is st.float16 and d.tolist() == [0, 1, 2, 3]


def test_to_keeps_dense_layouts_like_torch_empty_like(device):
    a = st.arange(6, device=device).reshape(2, 3).t()
    b = a.to(dtype=st.float32)
    assert b.stride() == (1, 3) and b.tolist() == [[0, 3], [1, 4], [2, 5]]


def test_to_bad_arguments():
    a = st.zeros(2)
    with raises_named(TypeError, "to()"):
        a.to(3)
    with raises_named(TypeError, "to()"):
        a.to(dtype=st.float32, foo=1)


@pytest.mark.parametrize("op", ["copy_", "clone", "contiguous", "to", "fill_", "reshape"])
def test_large_copies_release_the_gil(op):
    """While a large copy runs in one thread, another Python thread keeps running (DESIGN.md §4)."""
    import threading
    import time

    src = st.ones(4096, 4096)  # 64 MiB: the transposed copies take tens of milliseconds on one thread
    dst = st.empty(4096, 4096, dtype=st.float64)
    ops = {
        "copy_": lambda: dst.copy_(src.t()),
        "clone": lambda: src.t().clone(),
        "contiguous": lambda: src.t().contiguous(),
        "to": lambda: src.t().to(dtype=st.float64),
        "fill_": lambda: dst.t().fill_(2.0),
        "reshape": lambda: src.t().reshape(-1),
    }
    old = st.get_num_threads()
    st.set_num_threads(1)
    try:
        started, done = threading.Event(), []

        def work():
            started.set()
            ops[op]()
            done.append(True)

        worker = threading.Thread(target=work)
        worker.start()
        started.wait()
        turns = 0
        while not done:
            turns += 1
            time.sleep(0.0005)
        worker.join()
    finally:
        st.set_num_threads(old)
    assert turns >= 3, f"{op}: the main thread ran only {turns} times during the copy (GIL held?)"


@pytest.mark.needs_torch
@pytest.mark.parametrize("dst", ["float32", "float16", "bfloat16", "complex32", "complex64"])
def test_float64_random_bits_round_like_torch(torch, dst):
    """float64 -> narrower floats (through float32, as torch does): random bit patterns plus values built to
    sit exactly on and next to float32/float16/bfloat16 rounding ties."""
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**63, 20_000, dtype=np.int64).astype(np.uint64) | (
        rng.integers(0, 2, 20_000, dtype=np.uint64) << np.uint64(63)
    )
    vals = bits.view(np.float64)
    # near ties: float32 values with the rounding bit set, nudged by one float64 ulp either way
    f32 = rng.integers(0, 2**32, 5_000, dtype=np.uint64).astype(np.uint32)
    ties16 = ((f32 & np.uint32(0xFFFF0000)) | np.uint32(0x8000)).view(np.float32).astype(np.float64)
    ties = np.concatenate(
        [
            ties16,
            np.nextafter(ties16, np.inf),
            np.nextafter(ties16, -np.inf),
            (f32.view(np.float32).astype(np.float64) * (1 + 2.0**-30)),
        ]
    )
    vals = np.concatenate([vals, ties, rng.standard_normal(5000) * 1e-6, rng.standard_normal(5000) * 6e4])
    s = st.from_numpy(vals).to(dtype=getattr(st, dst))
    t = torch.from_numpy(vals).to(getattr(torch, dst))
    got, want = _bytes_st(s), _bytes_torch(torch, t)
    bad = np.nonzero(np.any(got != want, axis=1))[0]
    assert bad.size == 0, (
        f"float64->{dst}: {bad.size} differ; first {vals[bad[0]]!r} (0x{vals.view(np.uint64)[bad[0]]:016x}) "
        f"gave 0x{got[bad[0]][::-1].tobytes().hex()}, torch 0x{want[bad[0]][::-1].tobytes().hex()}"
    )


@pytest.mark.needs_torch
def test_stray_bool_bytes_convert_like_torch(torch):
    # raw = [0, 1, 2, 255] as uint8, viewed as bool: torch/numpy .to(int32) -> [0, 1, 1, 1]; slimtensor -> [0,
    # 1, 2, 255]
    # torch's clone() also normalises the bytes to 0/1; slimtensor keeps 2 and 255
    raw = [0, 1, 2, 255]
    t = torch.tensor(raw, dtype=torch.uint8).view(torch.bool)
    s = st.asarray(raw, dtype=st.uint8).view(st.bool)
    n = np.array(raw, np.uint8).view(bool)
    for dt in ["int32", "float32", "int64", "uint8", "float16", "complex64"]:
        want = t.to(getattr(torch, dt)).view(torch.uint8).numpy()
        got = s.to(dtype=getattr(st, dt)).view(st.uint8).numpy()
        np.testing.assert_array_equal(got, want, err_msg=dt)
    np.testing.assert_array_equal(s.to(dtype=st.int32).numpy(), n.astype(np.int32))
    np.testing.assert_array_equal(s.clone().view(st.uint8).numpy(), t.clone().view(torch.uint8).numpy())
    np.testing.assert_array_equal(
        st.zeros(4, dtype=st.bool).copy_(s).view(st.uint8).numpy(),
        torch.zeros(4, dtype=torch.bool).copy_(t).view(torch.uint8).numpy(),
    )


@pytest.mark.parametrize("name", ["uint8", "int16", "float32", "float64", "complex128", "bool", "bfloat16"])
@pytest.mark.parametrize(
    "shape,perm,step",
    [
        ((33, 65), (1, 0), 1),
        ((64, 64), (1, 0), 1),
        ((7, 300), (1, 0), 2),
        ((129, 17, 3), (2, 0, 1), 1),
        ((16, 16, 16, 4), (3, 1, 2, 0), 1),
        ((1000, 3), (1, 0), 3),
        ((257, 129), (1, 0), 1),
    ],
    ids=str,
)
@pytest.mark.parametrize("threads", [1, 2])
def test_larger_strided_copies_match_numpy(name, shape, perm, step, threads):
    """Sizes past the copy kernels' tiles and parallel thresholds, all itemsizes, same dtype or not."""
    rng = np.random.default_rng(11)
    a = (rng.integers(0, 100, size=shape) - 20).astype(NUMPY_DTYPES[name])
    src_np = a.transpose(perm)[..., ::step]
    old = st.get_num_threads()
    st.set_num_threads(threads)
    try:
        src = st.from_numpy(a).permute(*perm)[..., ::step]
        np.testing.assert_array_equal(src.contiguous().numpy(), np.ascontiguousarray(src_np))
        np.testing.assert_array_equal(src.clone(memory_format=st.contiguous_format).numpy(), src_np)
        dst = st.zeros(*reversed(src.shape), dtype=st.float64).permute(*reversed(range(src.ndim)))
        dst.copy_(src)
        np.testing.assert_array_equal(dst.numpy(), src_np.astype(np.float64))
        back = st.empty(*src.shape, dtype=getattr(st, name)).copy_(dst)
        np.testing.assert_array_equal(back.numpy(), src_np)
    finally:
        st.set_num_threads(old)


def test_non_blocking_is_accepted_on_the_cpu():
    a = st.zeros(3)
    assert a.copy_(st.ones(3), non_blocking=True) is a and a.tolist() == [1.0, 1.0, 1.0]
    assert a.to(dtype=st.float64, non_blocking=True).tolist() == [1.0, 1.0, 1.0]

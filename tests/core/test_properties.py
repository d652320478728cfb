"""Property-based tests (hypothesis): random shapes, strides, offsets, slices and chains of view operations.
Values are compared with numpy; strides, contiguity (incl. channels_last), overlap and view-or-copy
decisions with torch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import slimtensor as st
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from ._util import layout, to_np

pytestmark = [
    pytest.mark.needs_torch,
    pytest.mark.filterwarnings("ignore::UserWarning"),
]  # torch: complex->real

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@hs.composite
def layouts(draw, min_dims=0, max_dims=4, max_size=5, allow_zero_stride=True):
    ndim = draw(hs.integers(min_dims, max_dims))
    sizes = tuple(draw(hs.integers(0, max_size)) for _ in range(ndim))
    kind = draw(hs.sampled_from(["contiguous", "permuted", "random"]))
    if kind == "random":
        lo = 0 if allow_zero_stride else 1
        strides = tuple(draw(hs.integers(lo, 40)) for _ in range(ndim))
    else:
        running, strides_l = 1, [0] * ndim
        order = list(range(ndim))
        if kind == "permuted":
            order = draw(hs.permutations(order))
        pad = draw(hs.integers(0, 1))
        for d in reversed(order):
            strides_l[d] = running
            running *= max(sizes[d], 1) + pad
        strides = tuple(strides_l)
    offset = draw(hs.integers(0, 6))
    numel = math.prod(sizes)
    extent = 0 if numel == 0 else offset + 1 + sum((n - 1) * s for n, s in zip(sizes, strides, strict=False))
    return sizes, strides, offset, max(extent, offset + 1)


def make_three(torch, lay, dtype="float32"):
    """The same layout over arange(storage) as a slimtensor, a torch tensor and a numpy array."""
    sizes, strides, offset, storage = lay
    s = st.arange(storage, dtype=getattr(st, dtype)).as_strided(sizes, strides, offset)
    t = torch.arange(storage, dtype=getattr(torch, dtype)).as_strided(sizes, strides, offset)
    base = np.arange(storage, dtype=dtype)
    itemsize = base.itemsize
    n = (
        np.lib.stride_tricks.as_strided(base[offset:], sizes, tuple(x * itemsize for x in strides))
        if math.prod(sizes)
        else np.zeros(sizes, dtype)
    )
    return s, t, n


def check_same(s, t, n=None):
    assert layout(s) == layout(t)
    assert s.is_contiguous() == t.is_contiguous(), layout(s)
    if s.ndim == 4:
        assert s.is_contiguous(memory_format=st.channels_last) == t.is_contiguous(
            memory_format=__import__("torch").channels_last
        ), layout(s)
    if s.ndim == 5:
        assert s.is_contiguous(memory_format=st.channels_last_3d) == t.is_contiguous(
            memory_format=__import__("torch").channels_last_3d
        ), layout(s)
    np.testing.assert_array_equal(to_np(s), t.numpy())
    if n is not None:
        np.testing.assert_array_equal(to_np(s), n)


@SETTINGS
@given(lay=layouts(max_dims=5))
def test_random_layouts_match_torch_and_numpy(torch, lay):
    s, t, n = make_three(torch, lay)
    check_same(s, t, n)
    assert s.numel() == t.numel() and s.nbytes == t.nbytes
    # overlap: exact answer by enumerating addresses; torch's answer where it has one
    addresses = n.__array_interface__["data"][0] if n.size else 0
    if n.size:
        idx = np.lib.stride_tricks.as_strided(
            np.arange(lay[3])[lay[2] :], lay[0], tuple(x * 8 for x in lay[1])
        )
        exact = len(np.unique(idx)) != idx.size
        assert s._has_internal_overlap() == exact, lay
    del addresses
    torch_overlap = torch._debug_has_internal_overlap(t)
    if torch_overlap in (0, 1) and s.numel():  # size 0: test_views.py::test_empty_tensor_has_no_overlap
        assert s._has_internal_overlap() == bool(torch_overlap)


@SETTINGS
@given(lay=layouts(min_dims=4, max_dims=4, max_size=4))
def test_channels_last_contiguity_and_copies_match_torch(torch, lay):
    s, t, _ = make_three(torch, lay)
    check_same(s, t)
    for fmt in ("contiguous_format", "channels_last"):
        sc, tc = s.contiguous(memory_format=getattr(st, fmt)), t.contiguous(memory_format=getattr(torch, fmt))
        assert (sc is s) == (tc is t)
        check_same(sc, tc)
    for fmt in ("preserve_format", "contiguous_format", "channels_last"):
        sc, tc = s.clone(memory_format=getattr(st, fmt)), t.clone(memory_format=getattr(torch, fmt))
        assert sc.stride() == tc.stride(), (fmt, lay)
        np.testing.assert_array_equal(to_np(sc), tc.numpy())


@hs.composite
def reshape_targets(draw, numel):
    """A shape with the given numel (maybe with one -1), built from numel's factors and some 1s."""
    if numel == 0:
        dims = draw(hs.lists(hs.integers(0, 4), min_size=1, max_size=4))
        if 0 not in dims:
            dims[draw(hs.integers(0, len(dims) - 1))] = 0
        return tuple(dims)
    factors, n, p = [], numel, 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    factors = draw(hs.permutations(factors))
    groups = draw(hs.integers(1, max(1, len(factors))))
    dims = [1] * groups
    for f in factors:
        dims[draw(hs.integers(0, groups - 1))] *= f
    for _ in range(draw(hs.integers(0, 2))):
        dims.insert(draw(hs.integers(0, len(dims))), 1)
    if draw(hs.booleans()):
        dims[draw(hs.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


@SETTINGS
@given(data=hs.data(), lay=layouts(max_dims=4, max_size=4))
def test_reshape_view_or_copy_matches_torch(torch, data, lay):
    s, t, n = make_three(torch, lay)
    shape = data.draw(reshape_targets(s.numel()))
    try:
        tr = t.reshape(shape)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            s.reshape(shape)
        return
    sr = s.reshape(shape)
    torch_view = tr.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert (sr.storage().id == s.storage().id) == torch_view, (lay, shape)
    check_same(sr, tr, n.reshape(shape) if n.size else None)
    try:
        tv = t.view(shape)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            s.view(shape)
    else:
        check_same(s.view(shape), tv)


def _slice(draw, n):
    start = draw(hs.one_of(hs.none(), hs.integers(-n - 2, n + 2)))
    stop = draw(hs.one_of(hs.none(), hs.integers(-n - 2, n + 2)))
    step = draw(hs.one_of(hs.none(), hs.integers(1, 4)))
    return slice(start, stop, step)


@hs.composite
def keys(draw, shape):
    items, dim = [], 0
    ellipsis_used = False
    while dim < len(shape) and draw(hs.integers(0, 4)):
        choice = draw(hs.sampled_from(["int", "slice", "none", "ellipsis"]))
        if choice == "int" and shape[dim] > 0:
            items.append(draw(hs.integers(-shape[dim], shape[dim] - 1)))
            dim += 1
        elif choice == "slice":
            items.append(_slice(draw, shape[dim]))
            dim += 1
        elif choice == "none":
            items.append(None)
        elif choice == "ellipsis" and not ellipsis_used:
            items.append(Ellipsis)
            ellipsis_used = True
            break
    return tuple(items)


@SETTINGS
@given(data=hs.data(), lay=layouts(min_dims=1, max_dims=4))
def test_random_indexing_matches_numpy_and_torch(torch, data, lay):
    s, t, n = make_three(torch, lay)
    key = data.draw(keys(s.shape))
    sv, tv = s[key], t[key]
    check_same(sv, tv, n[key] if n.size else None)
    assert sv.storage().id == s.storage().id
    # writes through the view land where numpy's do
    if sv.numel() and not sv._has_internal_overlap() and not s._has_internal_overlap():
        sv.fill_(-1.0)
        tv.fill_(-1.0)
        np.testing.assert_array_equal(to_np(s), t.numpy())


OPS = [
    "permute",
    "transpose",
    "slice",
    "select",
    "narrow",
    "unsqueeze",
    "squeeze",
    "squeeze_all",
    "expand",
    "flatten",
    "T",
    "mT",
    "view_flat",
    "reshape",
]


@hs.composite
def op_chains(draw):
    return draw(hs.lists(hs.sampled_from(OPS), min_size=1, max_size=6))


def apply_op(draw, name, x, m):
    """One random view op with arguments drawn for x's shape; returns (function of a tensor) or None."""
    nd, shape = x.ndim, tuple(x.shape)
    if name == "permute" and nd:
        perm = draw(hs.permutations(range(nd)))
        return lambda y: y.permute(*perm)
    if name == "transpose" and nd:
        a, b = draw(hs.integers(-nd, nd - 1)), draw(hs.integers(-nd, nd - 1))
        return lambda y: y.transpose(a, b)
    if name == "slice" and nd:
        d = draw(hs.integers(0, nd - 1))
        sl = slice(draw(hs.integers(0, shape[d])), None, draw(hs.integers(1, 3)))
        return lambda y: y[(slice(None),) * d + (sl,)]
    if name == "select" and nd and 0 not in shape[:1]:
        d = draw(hs.integers(0, nd - 1))
        if shape[d] == 0:
            return None
        i = draw(hs.integers(-shape[d], shape[d] - 1))
        return lambda y: y.select(d, i)
    if name == "narrow" and nd:
        d = draw(hs.integers(0, nd - 1))
        start = draw(hs.integers(0, shape[d]))
        length = draw(hs.integers(0, shape[d] - start))
        return lambda y: y.narrow(d, start, length)
    if name == "unsqueeze" and nd < 5:
        d = draw(hs.integers(-nd - 1, nd))
        return lambda y: y.unsqueeze(d)
    if name == "squeeze" and nd:
        d = draw(hs.integers(-nd, nd - 1))
        return lambda y: y.squeeze(d)
    if name == "squeeze_all":
        return lambda y: y.squeeze()
    if name == "expand" and nd < 5:
        new = [draw(hs.integers(1, 3)) if n == 1 else (-1 if draw(hs.booleans()) else n) for n in shape]
        # new leading dims of size 1: test_views.py::test_expand_new_size1_dim_stride (a known difference)
        lead = [draw(hs.sampled_from([0, 2, 3])) for _ in range(draw(hs.integers(0, 1)))]
        sizes = lead + new
        if not sizes:
            return None
        return lambda y: y.expand(*sizes)
    if name == "flatten" and nd:
        a = draw(hs.integers(0, nd - 1))
        b = draw(hs.integers(a, nd - 1))
        return lambda y: y.flatten(a, b)
    if name == "T" and nd:
        return lambda y: y.T if y.ndim <= 2 else y.permute(*reversed(range(y.ndim)))
    if name == "mT" and nd >= 2:
        return lambda y: y.mT
    if name == "view_flat":
        return lambda y: y.view(-1)
    if name == "reshape":
        return lambda y: y.reshape(-1)
    return None


@SETTINGS
@given(data=hs.data(), lay=layouts(max_dims=4, max_size=4), chain=op_chains())
def test_chains_of_views_match_torch(torch, data, lay, chain):
    s, t, _ = make_three(torch, lay)
    for name in chain:
        op = apply_op(data.draw, name, s, st)
        if op is None:
            continue
        try:
            t_next = op(t)
        except (RuntimeError, IndexError) as exc:
            with pytest.raises(
                IndexError if isinstance(exc, IndexError) else (RuntimeError, ValueError, IndexError)
            ):
                op(s)
            return
        s_next = op(s)
        torch_view = t_next.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
        assert (s_next.storage().id == s.storage().id) == torch_view, (name, layout(s), layout(t))
        check_same(s_next, t_next)
        s, t = s_next, t_next


DTYPE_PAIRS = ["float32", "float64", "int64", "int32", "int16", "uint8", "float16", "bfloat16", "complex64"]


@SETTINGS
@given(
    data=hs.data(),
    src_lay=layouts(min_dims=1, max_dims=3, max_size=4, allow_zero_stride=True),
    src_dt=hs.sampled_from(DTYPE_PAIRS),
    dst_dt=hs.sampled_from(DTYPE_PAIRS),
)
def test_copy_between_random_layouts_matches_torch(torch, data, src_lay, src_dt, dst_dt):
    src_s, src_t, _ = make_three(torch, src_lay, "int16")
    src_s, src_t = src_s.to(dtype=getattr(st, src_dt)), src_t.to(getattr(torch, src_dt))
    # destination: a random non-overlapping layout of the same shape (a permutation of a padded dense one)
    shape = src_lay[0]
    perm = data.draw(hs.permutations(range(len(shape))))
    pad = data.draw(hs.integers(0, 2))
    strides, running = [0] * len(shape), 1
    for d in reversed(perm):
        strides[d] = running
        running *= max(shape[d], 1) + pad
    offset = data.draw(hs.integers(0, 3))
    extent = sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
    storage = offset + 1 + extent if math.prod(shape) else offset + 1
    dst_s = st.zeros(storage, dtype=getattr(st, dst_dt)).as_strided(shape, strides, offset)
    dst_t = torch.zeros(storage, dtype=getattr(torch, dst_dt)).as_strided(shape, strides, offset)
    dst_s.copy_(src_s)
    dst_t.copy_(src_t)
    np.testing.assert_array_equal(
        to_np(dst_s.as_strided((storage,), (1,), 0).view(st.uint8)),
        dst_t.as_strided((storage,), (1,), 0).view(torch.uint8).numpy(),
    )


@SETTINGS
@given(
    lay=layouts(min_dims=1, max_dims=4, max_size=4),
    target=hs.sampled_from(["uint8", "int16", "int32", "float64", "complex128", "bool", "bfloat16"]),
)
def test_view_dtype_matches_torch(torch, lay, target):
    s, t, _ = make_three(torch, lay, "int32")
    try:
        tv = t.view(getattr(torch, target))
    except RuntimeError:
        with pytest.raises(RuntimeError):
            s.view(getattr(st, target))
        return
    sv = s.view(getattr(st, target))
    assert layout(sv) == layout(tv)
    assert sv.storage().id == s.storage().id
    same_size = {1: "uint8", 2: "int16", 4: "int32", 8: "int64", 16: "complex128"}[sv.itemsize]
    ours = sv.numpy() if target != "bfloat16" else sv.view(st.int16).numpy()
    theirs = tv.numpy() if target != "bfloat16" else tv.view(torch.int16).numpy()
    raw = f"u{min(sv.itemsize, 8)}" if same_size != "complex128" else "u8"
    np.testing.assert_array_equal(
        np.ascontiguousarray(ours).view(raw), np.ascontiguousarray(theirs).view(raw)
    )


@SETTINGS
@given(lay=layouts(max_dims=4, max_size=4))
def test_numpy_round_trip_of_random_layouts(lay):
    sizes, strides, offset, storage = lay
    s = st.arange(storage, dtype=st.float64).as_strided(sizes, strides, offset)
    a = s.numpy()
    assert a.shape == sizes
    if s.numel():
        assert a.ctypes.data == s.data_ptr()
    back = st.from_numpy(a)
    assert back.shape == s.shape
    np.testing.assert_array_equal(back.numpy(), a)


@hs.composite
def same_shape_views(draw):
    """Two non-self-overlapping views of one storage with the same shape (a destination and a source)."""
    ndim = draw(hs.integers(1, 3))
    shape = tuple(draw(hs.integers(1, 4)) for _ in range(ndim))
    views = []
    for _ in range(2):
        perm = draw(hs.permutations(range(ndim)))
        strides, running = [0] * ndim, 1
        pad = draw(hs.integers(0, 2))
        for d in reversed(perm):
            strides[d] = running
            running *= shape[d] + pad
        views.append((tuple(strides), draw(hs.integers(0, 12))))
    return shape, views


@SETTINGS
@given(case=same_shape_views())
def test_copy_between_overlapping_views_of_one_storage(torch, case):
    """torch refuses -> slimtensor refuses; torch copies -> slimtensor gives the result of copying from a
    snapshot of the source."""
    shape, ((dst_st, dst_off), (src_st, src_off)) = case
    n = 200
    t = torch.arange(n, dtype=torch.float32)
    s = st.arange(n, dtype=st.float32)
    expected = np.arange(n, dtype=np.float32)
    dst_np = np.lib.stride_tricks.as_strided(expected[dst_off:], shape, tuple(4 * x for x in dst_st))
    src_np = np.lib.stride_tricks.as_strided(expected[src_off:], shape, tuple(4 * x for x in src_st)).copy()
    try:
        t.as_strided(shape, dst_st, dst_off).copy_(t.as_strided(shape, src_st, src_off))
    except RuntimeError:
        with pytest.raises(RuntimeError) as info:
            s.as_strided(shape, dst_st, dst_off).copy_(s.as_strided(shape, src_st, src_off))
        assert "copy_()" in str(info.value)
        assert s.numpy().tolist() == list(range(n))  # nothing written
        return
    s.as_strided(shape, dst_st, dst_off).copy_(s.as_strided(shape, src_st, src_off))
    dst_np[...] = src_np
    np.testing.assert_array_equal(s.numpy(), expected)


@SETTINGS
@given(
    lay=layouts(max_dims=5, max_size=4),
    dtype=hs.sampled_from(["float64", "int8", "float16", "bool", "complex64"]),
)
def test_clone_and_to_layouts_match_torch(torch, lay, dtype):
    s, t, _ = make_three(torch, lay)
    for sc, tc in [
        (s.clone(), t.clone()),
        (s.to(dtype=getattr(st, dtype)), t.to(getattr(torch, dtype))),
        (st.empty_like(s), torch.empty_like(t)),
        (s.contiguous(), t.contiguous()),
    ]:
        assert sc.shape == tuple(tc.shape)
        assert sc.stride() == tc.stride(), (lay, dtype)
        assert sc.storage_offset() == tc.storage_offset()
    assert (s.to(dtype=st.float32) is s) and (s.contiguous() is s) == (t.contiguous() is t)
    np.testing.assert_array_equal(
        to_np(s.to(dtype=getattr(st, dtype))).astype(np.complex128),
        t.to(getattr(torch, dtype)).numpy().astype(np.complex128),
    )


@SETTINGS
@given(lay=layouts(max_dims=4, max_size=4), versioned=hs.booleans())
def test_dlpack_round_trips_of_random_layouts(torch, lay, versioned):
    s, t, n = make_three(torch, lay)
    capsule = s.__dlpack__(max_version=(1, 1)) if versioned else s.__dlpack__()
    back = st.from_dlpack(capsule)
    assert back.shape == s.shape
    np.testing.assert_array_equal(to_np(back), to_np(s))
    if s.numel():
        assert back.data_ptr() == s.data_ptr()
    via_torch = torch.from_dlpack(s)
    assert tuple(via_torch.shape) == s.shape
    np.testing.assert_array_equal(via_torch.numpy(), to_np(s))
    from_torch = st.from_dlpack(t)
    assert from_torch.shape == s.shape
    np.testing.assert_array_equal(to_np(from_torch), t.numpy())
    if n.size:
        np.testing.assert_array_equal(to_np(st.from_dlpack(n)), n)

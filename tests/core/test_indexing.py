"""Basic indexing t[...] (ints, slices with step >= 1, None, ...): always a view; values vs numpy, layouts vs
torch; t[...] = value (scalars, tensors, array-likes, broadcasting)."""

from __future__ import annotations

import numpy as np
import pytest
import slimtensor as st

from ._util import assert_contiguity_matches, layout, raises_named, to_np

KEYS = [
    0,
    -1,
    2,
    slice(None),
    slice(1, None),
    slice(None, None, 2),
    slice(-3, -1),
    slice(5, 1),
    slice(10, 20),
    slice(-100, 100, 3),
    (1, 2),
    (-1, -1, -1),
    (slice(1, 3), 0),
    (0, slice(None, None, 2)),
    (Ellipsis, 1),
    (Ellipsis, None),
    (None, Ellipsis),
    (None, 0, None, slice(1, None)),
    (1, Ellipsis, slice(None, 2)),
    (slice(None), slice(None), slice(None)),
    Ellipsis,
    (None,),
    (),
    (slice(None, None, 3), None, slice(4, None, 2)),
    (np.int64(1), np.int32(-1)),
    (slice(1, 1),),
    (slice(3, None), 1),
    (0, 0, slice(4, 5)),
]


def _base(m):
    return m.arange(4 * 5 * 6, dtype=m.float32).reshape(4, 5, 6)


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem_values_match_numpy(key):
    a = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    t = st.from_numpy(a)
    v = t[key]
    ref = a[key]
    assert v.shape == ref.shape
    np.testing.assert_array_equal(to_np(v), ref)
    assert v.storage().id == t.storage().id  # always a view
    if ref.size:  # numpy's strides of size-1 dims are arbitrary
        ours = [st_ for st_, n in zip(v.stride(), ref.shape, strict=False) if n != 1]
        assert ours == [b // 4 for b, n in zip(ref.strides, ref.shape, strict=False) if n != 1]


@pytest.mark.needs_torch
@pytest.mark.parametrize("key", KEYS, ids=repr)
@pytest.mark.parametrize("prep", ["plain", "transposed", "offset"])
def test_getitem_layout_matches_torch(torch, key, prep):
    def make(m):
        b = _base(m)
        if prep == "transposed":
            return b.transpose(0, 2).transpose(1, 2)
        if prep == "offset":
            return m.arange(300, dtype=m.float32)[7:].as_strided((4, 5, 6), (40, 7, 1))
        return b

    tkey = tuple(int(k) if isinstance(k, np.integer) else k for k in key) if isinstance(key, tuple) else key
    t, s = make(torch)[tkey], make(st)[key]
    assert layout(s) == layout(t)
    assert_contiguity_matches(s, t)
    np.testing.assert_array_equal(to_np(s), t.numpy())


def test_indexing_0d():
    z = st.full((), 5.0)
    assert z[()].shape == () and z[()].item() == 5.0
    assert z[None, ...].shape == (1,)
    assert z[...].shape == ()
    with raises_named(IndexError, "__getitem__()"):
        z[0]


@pytest.mark.parametrize(
    "key,exc,function",
    [
        ((4,), IndexError, "index 4"),
        ((-5,), IndexError, "index -5"),
        ((0, 0, 0, 0), IndexError, "__getitem__()"),
        ((0, Ellipsis, Ellipsis), IndexError, "__getitem__()"),
        ((slice(None, None, -1),), ValueError, "__getitem__()"),
        ((0, slice(3, 1, -1)), ValueError, "__getitem__()"),
    ],
)
def test_getitem_bad_keys(key, exc, function):
    t = _base(st)
    with raises_named(exc, "__getitem__()" if function.startswith("index") else function):
        t[key]


def test_getitem_step_zero():
    with pytest.raises(ValueError):
        _base(st)[::0]


def test_getitem_unsupported_index_types_raise_type_error():
    # TypeError naming __getitem__ and saying which indices are supported (was RuntimeError: std::bad_cast)
    t = _base(st)
    for key in [1.5, [0, 1], True, "a", (0, 1.0), st.arange(2)]:
        with raises_named(TypeError, "__getitem__()", "basic indexing"):
            t[key]


def test_getitem_none_alone():
    # numpy and torch: t[None] is t.unsqueeze(0); t[None] = v writes through it
    t = _base(st)
    assert layout(t[None]) == layout(t.unsqueeze(0))
    z = st.full((), 5.0)
    assert z[None].shape == (1,)
    t[None] = 1.0
    assert t.numpy().min() == 1.0


# --- __setitem__ ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key,value",
    [
        (0, 1.5),
        ((1, 2), -3),
        ((slice(None), 1), 7),
        (Ellipsis, 0.25),
        ((0, 0, 0), True),
        ((None, 1), 2),
        ((slice(1, None, 2), slice(None), slice(None, None, 3)), 9),
    ],
    ids=repr,
)
def test_setitem_scalar(key, value):
    a = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    t = st.from_numpy(a.copy())
    t[key] = value
    a[key] = value
    np.testing.assert_array_equal(t.numpy(), a)


def test_setitem_tensor_broadcasts_and_converts():
    t = st.zeros(3, 4)
    t[:, 1] = st.arange(3)  # int64 into float32
    t[0] = st.full((4,), 2.5, dtype=st.float64)
    t[1:, 2:] = st.arange(2, dtype=st.int8).reshape(1, 2)
    ref = np.zeros((3, 4), np.float32)
    ref[:, 1] = np.arange(3)
    ref[0] = 2.5
    ref[1:, 2:] = np.arange(2).reshape(1, 2)
    np.testing.assert_array_equal(t.numpy(), ref)


def test_setitem_array_likes():
    t = st.zeros(2, 3, dtype=st.int32)
    t[0] = [1, 2, 3]
    t[1] = np.array([4, 5, 6], dtype=np.int64)
    t[:, 0] = (9, 8)
    assert t.tolist() == [[9, 2, 3], [8, 5, 6]]


def test_setitem_shape_mismatch():
    t = st.zeros(2, 3)
    with pytest.raises(RuntimeError) as info:
        t[0] = st.zeros(4)
    assert "copy_()" in str(info.value) and "broadcast" in str(info.value)


def test_setitem_on_expanded_view_is_refused():
    e = st.zeros(1, 3).expand(2, 3)
    with raises_named(RuntimeError, "copy_()"):
        e[:] = st.ones(2, 3)


def test_setitem_read_only():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = st.from_numpy(a)
    with raises_named(RuntimeError, "fill_()", "read-only"):  # a number fills the view
        t[0] = 1.0
    with raises_named(RuntimeError, "copy_()", "read-only"):
        t[1:] = st.zeros(3, dtype=st.float64)
    np.testing.assert_array_equal(a, [0, 1, 2, 3])


def test_setitem_numpy_scalars_and_bad_values():
    t = st.zeros(2, 3)
    t[0] = np.float32(1.5)
    t[1, 1:] = np.int64(3)
    t[1, 0] = np.bool_(True)
    assert t.tolist() == [[1.5, 1.5, 1.5], [1.0, 3.0, 3.0]]
    for bad in [None, "x", object()]:
        with pytest.raises(TypeError):
            t[0] = bad
    assert t.tolist() == [[1.5, 1.5, 1.5], [1.0, 3.0, 3.0]]


@pytest.mark.needs_torch
def test_setitem_from_a_dlpack_producer(torch):
    t = st.zeros(2, 3)
    t[:, 1] = torch.tensor([4.0, 5.0])
    t[0] = torch.arange(3, dtype=torch.int64)
    assert t.tolist() == [[0.0, 1.0, 2.0], [0.0, 5.0, 0.0]]


def test_uninitialised_instances_refuse_safely():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cls, attr in [(st.Tensor, "numel"), (st.Storage, "nbytes"), (st.Device, "type")]:
            try:
                obj = cls.__new__(cls)
            except TypeError:  # Tensor.__new__ is st.Tensor(data): it makes no uninitialised instance
                assert cls is st.Tensor
                continue
            with pytest.raises(TypeError):
                v = getattr(obj, attr)
                v() if callable(v) else None

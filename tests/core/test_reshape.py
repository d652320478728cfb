"""reshape, view(shape), flatten: shape inference, and view-or-copy decisions exactly as torch's."""

from __future__ import annotations

import numpy as np
import pytest
import slimtensor as st

from ._util import assert_contiguity_matches, layout, raises_named, to_np

LAYOUTS = {
    "contiguous": ((2, 3, 4), (12, 4, 1), 0, 24),
    "transposed": ((4, 3, 2), (1, 4, 12), 0, 24),
    "row-sliced": ((2, 3, 4), (24, 4, 1), 4, 48),
    "col-sliced": ((2, 3, 2), (12, 4, 2), 1, 24),
    "size-1 odd strides": ((2, 1, 3, 1), (3, 99, 1, 7), 0, 6),
    "expanded": ((2, 3, 4), (0, 4, 1), 0, 12),
    "expanded-inner": ((6, 4), (1, 0), 0, 6),
    "empty": ((0, 3, 4), (12, 4, 1), 0, 0),
    "empty-odd": ((3, 0, 2), (1, 5, 9), 0, 0),
    "scalar": ((), (), 3, 6),
}
SHAPES = [
    (24,),
    (-1,),
    (6, 4),
    (2, 12),
    (4, 6),
    (2, 3, 4),
    (2, -1, 2),
    (1, 24, 1),
    (3, 8),
    (8, 3),
    (2, 2, 3, 2),
    (6, 1, 4),
    (12, 2),
    (0,),
    (0, 3),
    (3, 0, 4),
    (-1, 0),
    (),
    (1,),
    (1, 1),
    (-1, 1),
    (6,),
    (3, 2),
    (2, 3),
]


def _case(torch_or_st, name):
    shape, strides, offset, storage = LAYOUTS[name]
    base = torch_or_st.arange(max(storage, 1), dtype=torch_or_st.float32)
    return base.as_strided(shape, strides, offset), base


@pytest.mark.needs_torch
@pytest.mark.parametrize("name", list(LAYOUTS))
@pytest.mark.parametrize("method", ["reshape", "view"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_reshape_and_view_match_torch(torch, name, method, shape):
    t, tbase = _case(torch, name)
    s, sbase = _case(st, name)
    try:
        tr = getattr(t, method)(*shape) if shape else getattr(t, method)(())
    except RuntimeError:
        with pytest.raises(RuntimeError) as info:
            getattr(s, method)(*shape) if shape else getattr(s, method)(())
        assert f"{method}()" in str(info.value)
        return
    sr = getattr(s, method)(*shape) if shape else getattr(s, method)(())
    torch_is_view = tr.untyped_storage().data_ptr() == tbase.untyped_storage().data_ptr()
    assert (sr.storage().id == sbase.storage().id) == torch_is_view, "view-or-copy differs from torch"
    assert layout(sr) == layout(tr)
    assert_contiguity_matches(sr, tr)
    np.testing.assert_array_equal(to_np(sr), tr.numpy())


@pytest.mark.parametrize("shape", [(6, 4), [6, 4], ((6, 4),), ([6, 4],)], ids=str)
def test_shape_argument_forms(shape):
    a = st.arange(24)
    assert a.reshape(*shape).shape == (6, 4)
    assert a.view(*shape).shape == (6, 4)


def test_reshape_view_shares_and_copy_does_not():
    a = st.arange(12).reshape(3, 4)
    v = a.reshape(4, 3)
    v[0, 0] = 100
    assert a.tolist()[0][0] == 100
    c = a.t().reshape(12)  # not viewable: a copy
    c[0] = -5
    assert a.tolist()[0][0] == 100
    assert c.is_contiguous() and c.storage_offset() == 0


def test_reshape_returns_a_new_view_object():
    a = st.arange(6)
    r = a.reshape(6)
    assert r._is_same(a)


@pytest.mark.parametrize(
    "shape,match",
    [
        ((5,), "invalid for input of size 24"),
        ((-1, -1), "only one dimension can be inferred"),
        ((-1, 0), "ambiguous"),
        ((-2, 12), "invalid shape dimension"),
        ((7, -1), "invalid"),
        ((2**62, 2**62, -1), "overflow|invalid"),
    ],
)
@pytest.mark.parametrize("method", ["reshape", "view"])
def test_bad_shapes(method, shape, match):
    with raises_named(RuntimeError, f"{method}()", match):
        getattr(st.arange(24), method)(*shape)


def test_view_of_non_viewable_layout():
    with raises_named(RuntimeError, "view()", "reshape"):
        st.arange(6).reshape(2, 3).t().view(6)
    with raises_named(RuntimeError, "view()"):
        st.arange(12).reshape(3, 4)[:, :2].view(6)


@pytest.mark.needs_torch
@pytest.mark.parametrize("name", list(LAYOUTS))
@pytest.mark.parametrize("start,end", [(0, -1), (1, -1), (0, 1), (1, 2), (-2, -1), (2, 2), (0, 0)])
def test_flatten_matches_torch(torch, name, start, end):
    t, tbase = _case(torch, name)
    s, sbase = _case(st, name)
    try:
        tr = t.flatten(start, end)
    except (RuntimeError, IndexError) as exc:
        with pytest.raises(
            IndexError if isinstance(exc, IndexError) else (RuntimeError, ValueError, IndexError)
        ):
            s.flatten(start, end)
        return
    sr = s.flatten(start, end)
    torch_is_view = tr.untyped_storage().data_ptr() == tbase.untyped_storage().data_ptr()
    assert (sr.storage().id == sbase.storage().id) == torch_is_view
    assert layout(sr) == layout(tr)
    np.testing.assert_array_equal(to_np(sr), tr.numpy())


@pytest.mark.needs_torch
def test_flatten_0d_checks_dims(torch):
    # torch.zeros(()).flatten(1, -1) raises IndexError (dim out of range)
    for start, end in [(1, -1), (0, 1), (-2, -1), (2, 2)]:
        with pytest.raises(IndexError):
            torch.zeros(()).flatten(start, end)
        with raises_named(IndexError, "flatten()"):
            st.zeros(()).flatten(start, end)


def test_flatten_0d_valid_dims():
    for start, end in [(0, -1), (0, 0), (-1, -1), (-1, 0)]:
        r = st.full((), 3.0).flatten(start, end)
        assert r.shape == (1,) and r.tolist() == [3.0]


def test_big_non_viewable_reshape_copies_right():
    a = np.arange(300 * 200, dtype=np.float64).reshape(300, 200)
    t = st.from_numpy(a).t()
    r = t.reshape(-1)
    np.testing.assert_array_equal(r.numpy(), a.T.reshape(-1))

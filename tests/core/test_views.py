"""Views: as_strided, permute, transpose, T, mT, select, narrow, unsqueeze, squeeze, expand, flatten,
view(dtype). Every view shares storage; layouts (sizes, strides, offset) are compared with torch, values
with numpy, and where torch refuses an argument slimtensor refuses it too."""

from __future__ import annotations

import numpy as np
import pytest
import slimtensor as st

from ._util import assert_contiguity_matches, layout, raises_named, to_np

# (name, op) pairs, applied the same way to a slimtensor and a torch tensor.
OPS_3D = [
    ("permute(2,0,1)", lambda t: t.permute(2, 0, 1)),
    ("permute(-1,0,-2)", lambda t: t.permute(-1, 0, -2)),
    ("permute((1,2,0))", lambda t: t.permute((1, 2, 0))),
    ("transpose(0,2)", lambda t: t.transpose(0, 2)),
    ("transpose(-1,-2)", lambda t: t.transpose(-1, -2)),
    ("transpose(1,1)", lambda t: t.transpose(1, 1)),
    ("mT", lambda t: t.mT),
    ("select(1,2)", lambda t: t.select(1, 2)),
    ("select(-1,-1)", lambda t: t.select(-1, -1)),
    ("select(0,-2)", lambda t: t.select(0, -2)),
    ("narrow(2,1,2)", lambda t: t.narrow(2, 1, 2)),
    ("narrow(1,-2,2)", lambda t: t.narrow(1, -2, 2)),
    ("narrow(0,2,0)", lambda t: t.narrow(0, 2, 0)),
    ("unsqueeze(0)", lambda t: t.unsqueeze(0)),
    ("unsqueeze(1)", lambda t: t.unsqueeze(1)),
    ("unsqueeze(3)", lambda t: t.unsqueeze(3)),
    ("unsqueeze(-1)", lambda t: t.unsqueeze(-1)),
    ("unsqueeze(-4)", lambda t: t.unsqueeze(-4)),
    ("squeeze()", lambda t: t.squeeze()),
    ("squeeze(0)", lambda t: t.squeeze(0)),
    ("flatten()", lambda t: t.flatten()),
    ("flatten(1)", lambda t: t.flatten(1)),
    ("flatten(0,1)", lambda t: t.flatten(0, 1)),
    ("flatten(1,1)", lambda t: t.flatten(1, 1)),
    ("expand(2,2,3,4)", lambda t: t.expand(2, 2, 3, 4)),
    ("expand(-1,-1,-1)", lambda t: t.expand(-1, -1, -1)),
    ("expand((5,2,3,4))", lambda t: t.expand((5, 2, 3, 4))),
    ("as_strided", lambda t: t.as_strided((3, 2), (1, 3))),
    ("as_strided+offset", lambda t: t.as_strided((2, 2), (4, 1), 5)),
    ("as_strided 0-d", lambda t: t.as_strided((), (), 7)),
    ("chain", lambda t: t.transpose(0, 1).narrow(0, 1, 2).unsqueeze(0).select(3, 1)),
    ("chain2", lambda t: t.permute(1, 2, 0)[1:, ::2].mT.flatten(0, 1)),
]

# Base layouts: contiguous, transposed, sliced (with an offset), with size-1 and size-0 dims.
BASES = {
    "contiguous": lambda m, dev: m.arange(24, dtype=m.float32, device=dev).reshape(2, 3, 4),
    "permuted": lambda m, dev: m.arange(24, dtype=m.float32, device=dev).reshape(4, 3, 2).permute(2, 1, 0),
    "sliced": lambda m, dev: m.arange(60, dtype=m.float32, device=dev).reshape(3, 4, 5)[1:, :3, 1:],
}


def _pairs():
    for bname in BASES:
        for oname, op in OPS_3D:
            yield pytest.param(bname, op, id=f"{bname}-{oname}")


@pytest.mark.needs_torch
@pytest.mark.parametrize("base,op", list(_pairs()))
def test_views_match_torch(torch, base, op, device):
    s, t = BASES[base](st, device), BASES[base](torch, "cpu")
    try:
        tv = op(t)
    except (RuntimeError, IndexError, ValueError, TypeError) as exc:
        with pytest.raises(
            type(exc) if isinstance(exc, IndexError) else (RuntimeError, ValueError, IndexError)
        ):
            op(s)
        return
    sv = op(s)
    assert layout(sv) == layout(tv)
    # a view exactly when torch's result is a view (flatten copies when the dims cannot merge)
    torch_view = tv.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert (sv.storage().id == s.storage().id) == torch_view
    assert_contiguity_matches(sv, tv)
    np.testing.assert_array_equal(to_np(sv), tv.numpy())


@pytest.mark.needs_torch
def test_size0_tensor_is_contiguous(torch):
    # torch.arange(24.).reshape(4, 3, 2).permute(2, 1, 0).narrow(0, 2, 0): size (0, 3, 4), strides (1, 2, 6)
    t = torch.arange(24.0).reshape(4, 3, 2).permute(2, 1, 0).narrow(0, 2, 0)
    s = st.arange(24.0).reshape(4, 3, 2).permute(2, 1, 0).narrow(0, 2, 0)
    assert layout(s) == layout(t) == ((0, 3, 4), (1, 2, 6), 2)
    assert t.is_contiguous()
    assert s.is_contiguous()


def test_views_see_writes_through_the_base(device):
    base = st.zeros(3, 4, device=device)
    v = base.t()[1:, 1]
    v.fill_(7.0)
    ref = np.zeros((3, 4), np.float32)
    ref.T[1:, 1] = 7
    np.testing.assert_array_equal(to_np(base), ref)
    base[1, 3] = 9.0
    assert v.tolist() == [7.0, 7.0, 9.0]


def test_t_and_T(device):
    a = st.arange(6, device=device).reshape(2, 3)
    assert a.t().shape == (3, 2) and a.t().stride() == (1, 3)
    assert a.T.shape == (3, 2)
    b = st.arange(24, device=device).reshape(2, 3, 4)
    assert b.T.shape == (4, 3, 2) and b.T.stride() == (1, 4, 12)
    v = st.arange(3, device=device)
    assert v.t()._is_same(v) and v.T._is_same(v)
    z = st.zeros((), device=device)
    assert z.t().shape == () and z.T.shape == ()


@pytest.mark.needs_torch
def test_t_on_3d_refused_like_torch(torch):
    with pytest.raises(RuntimeError):
        torch.zeros(2, 3, 4).t()
    with raises_named(RuntimeError, "t()"):
        st.zeros(2, 3, 4).t()


@pytest.mark.needs_torch
def test_mT_on_1d_refused_like_torch(torch):
    with pytest.raises(RuntimeError):
        _ = torch.zeros(3).mT
    with pytest.raises((RuntimeError, ValueError)) as info:
        _ = st.zeros(3).mT
    assert "mT" in str(info.value)


def test_squeeze_leaves_a_non_1_dim(device):
    a = st.zeros(2, 1, 3, device=device)
    assert a.squeeze(0).shape == (2, 1, 3)
    assert a.squeeze(1).shape == (2, 3)
    assert a.squeeze(-2).shape == (2, 3)
    assert a.squeeze().shape == (2, 3)
    assert st.zeros(1, 1).squeeze().shape == ()
    z = st.zeros(())
    assert z.squeeze().shape == () and z.squeeze(0).shape == () and z.squeeze(-1).shape == ()


@pytest.mark.needs_torch
@pytest.mark.parametrize(
    "shape,strides,offset,storage,op",
    [
        ((2, 1, 3), (3, 3, 1), 0, 6, lambda t: t.unsqueeze(1)),
        ((2, 1, 3), (3, 7, 1), 0, 6, lambda t: t.squeeze(1)),
        ((4, 1), (1, 1), 2, 6, lambda t: t.unsqueeze(2)),
        ((1,), (5,), 3, 6, lambda t: t.expand(4, 3, -1)),
        ((3, 1), (2, 1), 0, 6, lambda t: t.expand(3, 5)),
        ((0, 3), (3, 1), 0, 0, lambda t: t.expand(2, 0, 3)),
        ((2, 0), (1, 1), 0, 0, lambda t: t.flatten()),
        ((3,), (2,), 1, 6, lambda t: t.unsqueeze(0).unsqueeze(-1)),
    ],
)
def test_size1_size0_strides_match_torch(torch, shape, strides, offset, storage, op):
    s = st.arange(max(storage, 1), dtype=st.float32).as_strided(shape, strides, offset)
    t = torch.arange(max(storage, 1), dtype=torch.float32).as_strided(shape, strides, offset)
    assert layout(op(s)) == layout(op(t))


def test_expand_makes_stride_zero_and_overlap(device):
    a = st.arange(3, device=device).reshape(3, 1)
    e = a.expand(2, 3, 4)
    assert e.stride() == (0, 1, 0)
    assert e._has_internal_overlap()
    assert not a._has_internal_overlap()
    np.testing.assert_array_equal(to_np(e), np.broadcast_to(np.arange(3).reshape(3, 1), (2, 3, 4)))


@pytest.mark.needs_torch
@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.permute(0, 0, 1),
        lambda t: t.permute(0, 1),
        lambda t: t.permute(0, 1, 3),
        lambda t: t.permute(0, 1, -4),
        lambda t: t.transpose(0, 3),
        lambda t: t.select(3, 0),
        lambda t: t.select(0, 2),
        lambda t: t.select(0, -3),
        lambda t: t.narrow(0, 0, 3),
        lambda t: t.narrow(1, 2, 2),
        lambda t: t.narrow(1, -4, 1),
        lambda t: t.narrow(1, 0, -1),
        lambda t: t.narrow(5, 0, 1),
        lambda t: t.unsqueeze(4),
        lambda t: t.unsqueeze(-5),
        lambda t: t.squeeze(3),
        lambda t: t.expand(3, 3, 4),
        lambda t: t.expand(2, 3),
        lambda t: t.expand(-1, 2, 3, 4),
        lambda t: t.expand(2, -2, 4),
        lambda t: t.flatten(2, 1),
        lambda t: t.flatten(0, 3),
        lambda t: t.size(3),
        lambda t: t.stride(-4),
        lambda t: t.as_strided((2, 3), (1,)),
        lambda t: t.as_strided((5, 5), (5, 1)),
        lambda t: t.as_strided((2,), (1,), 23),
        lambda t: t.as_strided((2,), (-1,), 5),
        lambda t: t.as_strided((2,), (1,), -1),
        lambda t: t.as_strided((-1,), (1,)),
    ],
)
def test_bad_view_arguments_refused_like_torch(torch, op):
    t = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    with pytest.raises((RuntimeError, IndexError, ValueError, TypeError)) as tinfo:
        op(t)
    s = st.arange(24, dtype=st.float32).reshape(2, 3, 4)
    expected = IndexError if tinfo.type is IndexError else (RuntimeError, ValueError, IndexError)
    with pytest.raises(expected):
        op(s)


def test_as_strided_default_offset_is_the_tensors(device):
    a = st.arange(10, device=device)[3:]
    assert a.as_strided((2,), (1,)).storage_offset() == 3
    assert a.as_strided((2,), (1,), 0).tolist() == [0, 1]
    assert a.as_strided((2,), (1,), storage_offset=8).tolist() == [8, 9]


def test_as_strided_bounds_checked_against_storage_not_view(device):
    a = st.arange(10, device=device)
    small = a[2:4]
    assert small.as_strided((10,), (1,), 0).tolist() == list(range(10))
    with raises_named(ValueError, "as_strided()", "storage"):
        small.as_strided((11,), (1,), 0)
    with raises_named(ValueError, "as_strided()"):
        small.as_strided((3, 4), (4, 1), 0)
    assert small.as_strided((0, 4), (100, 1), 50).numel() == 0  # empty views touch no memory


# --- view(dtype) -----------------------------------------------------------------------------------------


@pytest.mark.needs_torch
@pytest.mark.parametrize(
    "src,dst",
    [
        ("float32", "int32"),
        ("float32", "uint8"),
        ("float32", "float64"),
        ("int16", "float16"),
        ("uint8", "int64"),
        ("float64", "bfloat16"),
        ("complex64", "float32"),
        ("float32", "complex64"),
        ("int8", "bool"),
    ],
)
@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.arange(48, dtype=m.uint8).view(m.int64).reshape(2, 3)[:, :2],
        lambda m: m.arange(48, dtype=m.uint8).view(m.int64).reshape(6)[2:],
        lambda m: m.arange(48, dtype=m.uint8).view(m.int64).reshape(2, 3).t(),
        lambda m: m.arange(48, dtype=m.uint8).view(m.int64).reshape(3, 2, 1),
    ],
    ids=["rows", "offset", "transposed", "trailing-1"],
)
def test_view_dtype_matches_torch(torch, src, dst, make):
    try:
        t = make(torch).view(getattr(torch, src))
    except RuntimeError:
        with pytest.raises(RuntimeError):
            make(st).view(getattr(st, src))
        return
    s = make(st).view(getattr(st, src))
    assert layout(s) == layout(t)
    try:
        tv = t.view(getattr(torch, dst))
    except RuntimeError:
        with pytest.raises(RuntimeError):
            s.view(getattr(st, dst))
        return
    sv = s.view(getattr(st, dst))
    assert sv.dtype is getattr(st, dst)
    assert layout(sv) == layout(tv)
    assert sv.storage().id == s.storage().id
    np.testing.assert_array_equal(
        sv.view(st.uint8).numpy()
        if sv.itemsize == 1
        else to_np(sv.view(getattr(st, f"uint{sv.itemsize * 8}")))
        if sv.itemsize <= 8
        else to_np(sv),
        tv.view(torch.uint8).numpy()
        if tv.element_size() == 1
        else tv.view(getattr(torch, f"uint{tv.element_size() * 8}")).numpy()
        if tv.element_size() <= 8
        else tv.numpy(),
    )


def test_view_dtype_0d(device):
    a = st.full((), 1.0, device=device)
    assert a.view(st.int32).item() == 0x3F800000
    with pytest.raises(RuntimeError):
        a.view(st.float64)


def test_view_dtype_values_vs_numpy(device):
    a = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    t = st.from_numpy(a).to(device)
    np.testing.assert_array_equal(to_np(t.view(st.int32)), a.view(np.int32))
    np.testing.assert_array_equal(to_np(t.view(st.uint8)), a.view(np.uint8))
    np.testing.assert_array_equal(to_np(t.view(st.float64)), a.view(np.float64))


# --- metadata ----------------------------------------------------------------------------------------------


def test_metadata_accessors(device):
    t = st.arange(60, dtype=st.int16, device=device).reshape(3, 4, 5)[1:, ::2]
    assert t.shape == (2, 2, 5) == t.size()
    assert t.size(0) == 2 and t.size(-1) == 5
    assert t.stride() == (20, 10, 1) and t.stride(-2) == 10
    assert t.storage_offset() == 20
    assert t.ndim == 3 == t.dim() and t.numel() == 20 and len(t) == 2
    assert t.itemsize == 2 == t.element_size() and t.nbytes == 40
    assert t.data_ptr() == t.storage().data_ptr + 20 * 2
    assert t.layout == "(2, 2, 5):(20, 10, 1) @ 20"
    assert "layout=(2, 2, 5):(20, 10, 1) @ 20" in repr(t)
    assert [r.tolist() for r in t] == t.tolist()
    assert st.arange(3, device=device).layout == "(3,):(1,) @ 0"


def test_len_and_iter_of_0d():
    z = st.zeros(())
    with pytest.raises(TypeError):
        len(z)
    with pytest.raises(TypeError):
        iter(z).__next__()


def test_is_same(device):
    a = st.arange(6, device=device).reshape(2, 3)
    assert a._is_same(a.view(2, 3))
    assert not a._is_same(a.t())
    assert not a._is_same(a.clone())
    assert not a._is_same(a.view(st.float64))


@pytest.mark.needs_torch
def test_expand_new_size1_dim_stride(torch):
    # torch.zeros(1).expand(1, 1).stride() == (1, 1); slimtensor gives (0, 1)
    for make in [
        lambda m: m.zeros(1).expand(1, 1),
        lambda m: m.zeros(2, 3).expand(1, 2, 3),
        lambda m: m.zeros(3, 1).expand(1, 1, 3, 4),
    ]:
        assert make(st).stride() == make(torch).stride()


@pytest.mark.needs_torch
def test_empty_tensor_has_no_overlap(torch):
    # layout (2, 0):(0, 0): no element, so no two elements share memory; torch._debug_has_internal_overlap
    # gives 0
    t = torch.zeros(1).as_strided((2, 0), (0, 0))
    assert torch._debug_has_internal_overlap(t) == 0
    assert not st.zeros(1).as_strided((2, 0), (0, 0))._has_internal_overlap()
    assert not st.zeros(1).expand(3, 1).narrow(1, 0, 0)._has_internal_overlap()


def test_bounds_checked_in_bytes_when_storage_is_not_a_multiple_of_the_itemsize(device):
    raw = st.arange(10, dtype=st.uint8, device=device)  # 10 bytes
    w = raw[:8].view(st.int64)
    assert w.shape == (1,) and w.storage().nbytes == 10
    with raises_named(ValueError, "as_strided()", "storage"):
        w.as_strided((1,), (1,), 1)  # bytes [8, 16) of 10: a partial element past the end
    with raises_named(ValueError, "as_strided()"):
        w.as_strided((2,), (1,), 0)
    h = raw[:10].view(st.int16)
    assert h.shape == (5,)
    with raises_named(ValueError, "as_strided()"):
        h.as_strided((6,), (1,), 0)
    with pytest.raises(RuntimeError):
        raw[1:9].view(st.int64)  # offset 1 byte: not a multiple of 8


@pytest.mark.needs_torch
@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.transpose(0, 0),
        lambda t: t.transpose(-1, 0),
        lambda t: t.t(),
        lambda t: t.T,
        lambda t: t.squeeze(),
        lambda t: t.squeeze(0),
        lambda t: t.unsqueeze(0),
        lambda t: t.unsqueeze(-1),
        lambda t: t.flatten(),
        lambda t: t.view(1),
        lambda t: t.view(1, 1, 1),
        lambda t: t.reshape(()),
        lambda t: t.reshape(-1),
        lambda t: t.expand(2),
        lambda t: t.expand(2, 3),
        lambda t: t.expand(()),
        lambda t: t.permute(()),
        lambda t: t.select(0, 0),
        lambda t: t.narrow(0, 0, 1),
        lambda t: t.unsqueeze(2),
        lambda t: t.transpose(0, 1),
        lambda t: t.as_strided((2, 2), (0, 0)),
        lambda t: t[None, None],
        lambda t: t[...],
    ],
)
@pytest.mark.filterwarnings("ignore::UserWarning")  # torch: .T on a 0-d tensor is deprecated
def test_0d_views_match_torch(torch, op):
    t = torch.full((), 3.0).as_strided((), (), 0)
    s = st.full((), 3.0)
    try:
        tv = op(t)
    except (RuntimeError, IndexError, TypeError) as exc:
        expected = (
            IndexError if isinstance(exc, IndexError) else (RuntimeError, ValueError, IndexError, TypeError)
        )
        with pytest.raises(expected):
            op(s)
        return
    sv = op(s)
    assert layout(sv) == layout(tv)
    np.testing.assert_array_equal(to_np(sv), tv.numpy())

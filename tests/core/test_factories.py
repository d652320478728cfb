"""Factories: empty, empty_strided, empty_like, zeros, ones, full, arange, asarray, from_blob."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import slimtensor as st

from ._util import CONVERTIBLE, NUMPY_DTYPES, raises_named, to_np


def contiguous_strides(shape):
    """PyTorch's contiguous strides (size-0 and size-1 dims count as 1)."""
    out, running = [], 1
    for size in reversed(shape):
        out.append(running)
        running *= max(size, 1)
    return tuple(reversed(out))


SHAPES = [(), (0,), (1,), (5,), (2, 3), (2, 0, 3), (1, 1, 1), (3, 1, 4, 2)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("factory", ["empty", "zeros", "ones"])
def test_shape_forms(factory, shape, device):
    f = getattr(st, factory)
    forms = (
        f(shape, device=device),
        f(list(shape), device=device),
        f(*shape, device=device) if shape else f((), device=device),
    )
    for t in forms:
        assert (
            t.device.type == st.Device(device).type
        )  # "cuda" resolves to "cuda:0", which torch also calls unequal
        assert t.shape == shape
        assert t.ndim == len(shape) == t.dim()
        assert t.numel() == int(np.prod(shape, dtype=np.int64))
        assert t.is_contiguous()
        assert t.storage_offset() == 0
        assert t.stride() == contiguous_strides(shape)
        assert t.nbytes == t.numel() * 4
        assert t.storage().is_owning


@pytest.mark.parametrize("name", CONVERTIBLE)
def test_zeros_ones_values(name, device):
    dt = getattr(st, name)
    z, o = st.zeros(2, 3, dtype=dt, device=device), st.ones((2, 3), dtype=dt, device=device)
    assert z.dtype is dt and o.dtype is dt
    if name == "complex32":
        z, o = z.to(dtype=st.complex64), o.to(dtype=st.complex64)
    np.testing.assert_array_equal(to_np(z), np.zeros((2, 3)))
    np.testing.assert_array_equal(to_np(o), np.ones((2, 3)))


def test_zeros_is_all_zero_bits_even_after_reuse(device):
    for _ in range(5):
        junk = st.full((1 << 12,), -1.0, device=device)
        del junk
        z = st.zeros(1 << 12, dtype=st.float32, device=device)  # on cuda: the cached block junk had
        assert not np.any(to_np(z.view(st.uint32)))


@pytest.mark.parametrize(
    "value,dtype,expected_dtype",
    [
        (3, None, "int64"),
        (3.5, None, "float32"),
        (True, None, "bool"),
        (1 + 2j, None, "complex64"),
        (3, "float64", "float64"),
        (-1, "uint8", "uint8"),
        (2.75, "int32", "int32"),
        (0.1, "bfloat16", "bfloat16"),
        (65504.0, "float16", "float16"),
    ],
)
def test_full(value, dtype, expected_dtype, device):
    t = st.full((2, 3), value, dtype=None if dtype is None else getattr(st, dtype), device=device)
    assert t.dtype is getattr(st, expected_dtype)
    ref = (
        np.full((2, 3), value).astype(NUMPY_DTYPES[expected_dtype])
        if expected_dtype != "uint8"
        else np.full((2, 3), 255, np.uint8)
    )
    np.testing.assert_array_equal(to_np(t), ref)


@pytest.mark.needs_torch
@pytest.mark.parametrize("value", [3, 3.5, True, 1 + 2j, -7])
def test_full_default_dtype_matches_torch(torch, value):
    assert st.full((2,), value).dtype.name == str(torch.full((2,), value).dtype).removeprefix("torch.")


@pytest.mark.parametrize(
    "shape,strides",
    [
        ((2, 3), (1, 2)),
        ((2, 3), (10, 2)),
        ((2, 0), (10, 2)),
        ((4,), (0,)),
        ((), ()),
        ((3, 1), (1, 99)),
        ((2, 3, 4), (12, 1, 3)),
    ],
)
def test_empty_strided(shape, strides, device):
    t = st.empty_strided(shape, strides, device=device)
    assert (
        t.device.type == st.Device(device).type
    )  # "cuda" resolves to "cuda:0", which torch also calls unequal
    assert t.shape == shape and t.stride() == strides and t.storage_offset() == 0
    numel = int(np.prod(shape, dtype=np.int64))
    extent = 0 if numel == 0 else 1 + sum((s - 1) * d for s, d in zip(shape, strides, strict=False))
    assert t.storage().nbytes == extent * 4


@pytest.mark.needs_torch
@pytest.mark.parametrize(
    "shape,strides", [((2, 3), (1, 2)), ((2, 3), (10, 2)), ((2, 0), (10, 2)), ((3, 1), (1, 99))]
)
def test_empty_strided_storage_size_matches_torch(torch, shape, strides):
    t, tt = st.empty_strided(shape, strides), torch.empty_strided(shape, strides)
    assert t.storage().nbytes == tt.untyped_storage().nbytes()
    assert t.is_contiguous() == tt.is_contiguous()


@pytest.mark.needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.empty(2, 3),
        lambda m: m.empty(2, 3).t(),
        lambda m: m.empty(4, 6)[:, ::2],
        lambda m: m.empty(1, 3).expand(4, 3),
        lambda m: m.empty(2, 3, 4).permute(2, 0, 1),
        lambda m: m.empty(2, 3, 4, 5).permute(0, 2, 3, 1),
        lambda m: m.empty(5)[1:],
    ],
)
def test_empty_like_layout_matches_torch(torch, make):
    t, tt = st.empty_like(make(st)), torch.empty_like(make(torch))
    assert t.shape == tuple(tt.shape)
    assert t.stride() == tt.stride()
    assert t.storage_offset() == 0
    assert t.dtype is st.float32


def test_empty_like_dtype_device_and_fresh_storage(device):
    a = st.ones(2, 3, device=device)
    b = st.empty_like(a, dtype=st.int8, device=device)
    assert b.dtype is st.int8 and b.shape == (2, 3) and b.device == a.device
    assert b.storage().id != a.storage().id


def test_storage_alignment_is_at_least_64_bytes(device):
    for n in [1, 3, 7, 64, 1000]:
        for dt in [st.uint8, st.float64]:
            t = st.empty(n, dtype=dt, device=device)
            assert t.data_ptr() % 64 == 0, (n, dt)


def test_storage_ids_are_unique_and_stable(device):
    a, b = st.empty(2, device=device), st.empty(2, device=device)
    ia, ib = a.storage().id, b.storage().id
    assert ia != ib
    assert a[1:].storage().id == ia
    del a
    c = st.empty(2, device=device)
    assert c.storage().id not in (ia, ib)


def test_storage_use_count_counts_views(device):
    a = st.empty(4, device=device)
    base = a.storage().use_count
    v = a[1:]
    assert a.storage().use_count == base + 1
    del v
    assert a.storage().use_count == base


@pytest.mark.parametrize(
    "args,kwargs",
    [
        ((5,), {}),
        ((1, 10, 3), {}),
        ((5, 0, -2), {}),
        ((0, 0), {}),
        ((3, 1), {}),
        ((0.0, 1.0, 0.25), {}),
        ((-3, 3), {"dtype": "float64"}),
        ((10,), {"dtype": "int8"}),
        ((0.5, 3), {}),
        ((1, 2.5, 0.5), {}),
    ],
)
def test_arange_matches_numpy(args, kwargs, device):
    kwargs = {k: getattr(st, v) for k, v in kwargs.items()}
    t = st.arange(*args, **kwargs, device=device)
    assert (
        t.device.type == st.Device(device).type
    )  # "cuda" resolves to "cuda:0", which torch also calls unequal
    integral = all(isinstance(v, int) for v in args)
    ref = np.arange(*args, dtype=np.int64 if integral else np.float64)
    if kwargs.get("dtype") is not None:
        ref = ref.astype(NUMPY_DTYPES[kwargs["dtype"].name])
        assert t.dtype is kwargs["dtype"]
    elif not integral:
        ref = ref.astype(np.float32)
    np.testing.assert_array_equal(to_np(t), ref)
    assert t.is_contiguous()


@pytest.mark.needs_torch
@pytest.mark.parametrize("args", [(5,), (1, 10, 3), (5, 0, -2), (0.0, 1.0, 0.25), (0.5, 3), (-2, 2, 0.3)])
def test_arange_matches_torch(torch, args):
    t, tt = st.arange(*args), torch.arange(*args)
    assert t.dtype.name == str(tt.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(to_np(t), tt.numpy())


def test_arange_zero_step():
    with raises_named(ValueError, "arange()"):
        st.arange(0, 5, 0)


# --- asarray ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "obj", [[1, 2, 3], [[1.5, 2.0], [3.0, 4.0]], [[True, False]], [1j, 2], [[[1]], [[2]]], [], [[], []]]
)
def test_asarray_python_values(obj):
    t = st.asarray(obj)
    ref = np.asarray(obj)
    assert t.shape == ref.shape
    np.testing.assert_array_equal(to_np(t), ref.astype(to_np(t).dtype))


def test_asarray_python_scalar_is_0d():
    # torch.asarray(7).shape == () and np.asarray(7).shape == (); got (1,) (np.ascontiguousarray makes 0-d
    # 1-d)
    for obj in [7, 2.5, True, 1j, np.float32(2.0)]:
        t = st.asarray(obj)
        assert t.shape == (), (obj, t.shape)
        assert t.item() == obj


def test_asarray_numpy_0d_is_0d():
    assert st.asarray(np.array(3.0)).shape == ()
    assert st.from_numpy(np.array(7)).shape == ()


def test_asarray_shares_numpy_memory_unless_copy():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    shared = st.asarray(a)
    assert shared.data_ptr() == a.ctypes.data
    copied = st.asarray(a, copy=True)
    assert copied.data_ptr() != a.ctypes.data
    a[0, 0] = 42
    assert shared.tolist()[0][0] == 42
    assert copied.tolist()[0][0] == 0


def test_asarray_of_a_tensor_is_the_tensor_or_a_copy():
    t = st.arange(4)
    assert st.asarray(t) is t
    c = st.asarray(t, copy=True)
    assert c is not t and c.data_ptr() != t.data_ptr() and c.tolist() == t.tolist()
    d = st.asarray(t, dtype=st.float64)
    assert d.dtype is st.float64 and d.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_asarray_copy_false_needing_a_copy_raises():
    with raises_named(ValueError, "asarray()"):
        st.asarray([1, 2, 3], copy=False)
    with pytest.raises(ValueError):
        st.asarray(np.arange(6)[::-1], copy=False)


def test_asarray_copy_false_with_a_dtype_change_raises():
    # torch.asarray(torch.arange(3), dtype=torch.float64, copy=False) -> ValueError "can't alias tensor ...";
    # np.asarray(np.arange(3), dtype=np.float64, copy=False) -> ValueError; slimtensor returns a float64 copy
    with raises_named(ValueError, "asarray()"):
        st.asarray(st.arange(3), dtype=st.float64, copy=False)
    with raises_named(ValueError, "asarray()"):
        st.asarray(np.arange(3.0), dtype=st.float32, copy=False)
    other = [d.name for d in st.devices() if d.available and d.name != "cpu"]
    if other:
        with raises_named(ValueError, "asarray()"):
            st.asarray(st.arange(3), device=other[0], copy=False)


def test_asarray_copy_false_without_change_shares():
    t = st.arange(3)
    assert st.asarray(t, copy=False) is t
    assert st.asarray(t, dtype=st.int64, copy=False) is t
    a = np.arange(3.0)
    assert st.asarray(a, copy=False).data_ptr() == a.ctypes.data
    assert st.asarray(a, dtype=st.float64, copy=False).data_ptr() == a.ctypes.data


def test_asarray_negative_stride_numpy_copies():
    a = np.arange(6)[::-2]
    t = st.asarray(a)
    np.testing.assert_array_equal(to_np(t), a)


def test_asarray_dtype_and_device():
    t = st.asarray([1, 2], dtype=st.float16, device="cpu")
    assert t.dtype is st.float16 and t.device == st.Device("cpu")


def test_asarray_object_is_a_type_error():
    with raises_named(TypeError, "asarray()"):
        st.asarray([object()])


def test_asarray_dlpack_producer():
    class Producer:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kw):
            return self.t.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    src = st.arange(5, dtype=st.int32)
    t = st.asarray(Producer(src))
    assert t.data_ptr() == src.data_ptr() and t.tolist() == [0, 1, 2, 3, 4]


# --- from_blob -------------------------------------------------------------------------------------------


def test_from_blob_borrows_and_keeps_owner_alive():
    a = np.arange(12, dtype=np.float32)
    before = sys.getrefcount(a)
    t = st.from_blob(a.ctypes.data, (3, 4), owner=a)
    assert sys.getrefcount(a) == before + 1
    assert t.storage().owner is a
    assert not t.storage().is_owning
    assert t.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a.reshape(3, 4))
    a[5] = -1
    assert t.tolist()[1][1] == -1
    view = t[1:]
    del t
    assert sys.getrefcount(a) == before + 1  # the view still holds the storage
    del view
    assert sys.getrefcount(a) == before


def test_from_blob_owner_outlives_python_reference():
    t = st.from_blob(
        np.arange(4, dtype=np.int64).ctypes.data,
        (4,),
        dtype=st.int64,
        owner=(keep := np.arange(4, dtype=np.int64)),
    )
    del t
    a = np.arange(8, dtype=np.int64) * 3
    t = st.from_blob(a.ctypes.data, (8,), dtype=st.int64, owner=a)
    del a
    assert t.tolist() == [0, 3, 6, 9, 12, 15, 18, 21]
    del keep


def test_from_blob_strides_and_offset():
    a = np.arange(12, dtype=np.float32)
    t = st.from_blob(a.ctypes.data, (2, 2), (1, 4), storage_offset=1, dtype=st.float32, owner=a)
    assert t.storage_offset() == 1
    assert t.stride() == (1, 4)
    assert t.data_ptr() == a.ctypes.data + 4
    assert t.tolist() == [[1.0, 5.0], [2.0, 6.0]]


def test_from_blob_read_only():
    a = np.arange(3, dtype=np.float32)
    t = st.from_blob(a.ctypes.data, (3,), read_only=True, owner=a)
    assert t.is_read_only and t.storage().is_read_only
    with pytest.raises(RuntimeError):
        t.fill_(1.0)
    np.testing.assert_array_equal(a, [0, 1, 2])
    assert not t.numpy().flags.writeable


def test_from_blob_size_zero_null_pointer():
    t = st.from_blob(0, (0, 3))
    assert t.shape == (0, 3) and t.numel() == 0


def test_from_blob_null_pointer_with_elements_is_refused():
    with pytest.raises(ValueError) as info:
        st.from_blob(0, (3,))
    assert "from_blob" in str(info.value)


def test_from_blob_refusals_do_not_keep_the_owner():
    a = np.zeros(8, np.float32)
    before = sys.getrefcount(a)
    for kwargs in [
        {"shape": (-1,)},
        {"shape": (2, 3), "strides": (1,)},
        {"shape": (2,), "storage_offset": -1},
        {"shape": (2,), "dtype": "nope"},
        {"shape": (2,), "device": "gpu"},
        {"shape": (2**62,)},
        {"shape": (2,), "strides": (-1,)},
    ]:
        with pytest.raises((ValueError, TypeError)):
            st.from_blob(a.ctypes.data, owner=a, **kwargs)
    assert sys.getrefcount(a) == before

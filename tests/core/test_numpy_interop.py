"""numpy interop: from_numpy (zero-copy, lifetime, read-only, refusals), numpy(), __array__ (numpy 2's
dtype/copy), np.asarray, and the buffer protocol both ways."""

from __future__ import annotations

import gc
import sys
import weakref

import ml_dtypes
import numpy as np
import pytest
import slimtensor as st

from ._util import NUMPY_DTYPES, raises_named


@pytest.mark.parametrize("name", sorted(NUMPY_DTYPES))
@pytest.mark.parametrize(
    "make",
    [
        lambda a: a,
        lambda a: a.T,
        lambda a: a[1:, ::2],
        lambda a: np.asfortranarray(a),
        lambda a: a[:, 1],
        lambda a: a.reshape(-1)[3:9].reshape(2, 3),
        lambda a: a[:0],
        lambda a: a[2, 3, ...],
    ],
    ids=["c", "T", "slice", "fortran", "column", "offset", "empty", "0d"],
)
def test_from_numpy_is_zero_copy(name, make):
    base = np.arange(4 * 6).reshape(4, 6).astype(NUMPY_DTYPES[name])
    a = make(base)
    t = st.from_numpy(a)
    assert t.dtype is getattr(st, name)
    assert t.shape == a.shape
    if a.size:
        assert t.data_ptr() == a.ctypes.data
        assert [s * a.itemsize for s, n in zip(t.stride(), a.shape, strict=False) if n > 1] == [
            s for s, n in zip(a.strides, a.shape, strict=False) if n > 1
        ]
    np.testing.assert_array_equal(t.numpy(), a)
    assert not t.storage().is_owning
    back = t.numpy()
    assert back.dtype == a.dtype
    if a.size:
        assert back.ctypes.data == a.ctypes.data  # numpy() shares too


def test_writes_are_shared_both_ways():
    a = np.zeros((3, 4), np.float32)
    t = st.from_numpy(a)
    t[1, 2] = 5.0
    assert a[1, 2] == 5
    a[0, 0] = -1
    assert t[0, 0].item() == -1
    n = t.numpy()
    n[2, 3] = 7
    assert a[2, 3] == 7


def test_tensor_keeps_the_array_alive():
    a = np.arange(10, dtype=np.int64)
    ref = weakref.ref(a) if hasattr(a, "__weakref__") else None
    before = sys.getrefcount(a)
    t = st.from_numpy(a)
    assert sys.getrefcount(a) > before
    del a
    gc.collect(0)
    assert t.tolist() == list(range(10))
    v = t[2:5]
    del t
    gc.collect(0)
    assert v.tolist() == [2, 3, 4]
    del v
    gc.collect(0)
    if ref is not None:
        assert ref() is None


def test_numpy_array_keeps_the_tensor_alive():
    t = st.arange(5)
    n = t.numpy()
    del t
    gc.collect(0)
    assert n.tolist() == [0, 1, 2, 3, 4]


def test_read_only_arrays_give_read_only_tensors():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = st.from_numpy(a)
    assert t.is_read_only and t[1:].is_read_only and t.storage().is_read_only
    assert not t.numpy().flags.writeable
    with raises_named(RuntimeError, "fill_()", "read-only"):
        t.fill_(1.0)
    with raises_named(RuntimeError, "copy_()"):
        t.copy_(st.zeros(4, dtype=st.float64))
    with pytest.raises((TypeError, BufferError)):
        memoryview(t)[0] = 1.0
    c = t.clone()
    assert not c.is_read_only
    c.fill_(2.0)
    np.testing.assert_array_equal(a, [0, 1, 2, 3])


def test_broadcast_array_is_read_only_and_overlapping():
    b = np.broadcast_to(np.arange(3.0), (4, 3))
    t = st.from_numpy(b)
    assert t.stride() == (0, 1)
    assert t.is_read_only
    assert t._has_internal_overlap()
    np.testing.assert_array_equal(t.numpy(), b)


def test_negative_strides_refused():
    with raises_named(ValueError, "from_numpy()", "negative"):
        st.from_numpy(np.arange(6)[::-1])
    with raises_named(ValueError, "from_numpy()"):
        st.from_numpy(np.arange(6).reshape(2, 3)[:, ::-2])


def test_byte_strides_not_multiple_of_itemsize_refused():
    buf = np.zeros(64, np.uint8)
    a = np.ndarray((3,), dtype=np.int32, buffer=buf, offset=0, strides=(5,))
    with raises_named(ValueError, "from_numpy()", "multiple of the itemsize"):
        st.from_numpy(a)
    rec = np.zeros(4, dtype=[("a", np.int8), ("b", np.int32)])
    with pytest.raises((ValueError, TypeError)) as info:
        st.from_numpy(rec["b"])  # byte stride 5
    assert "from_numpy()" in str(info.value)


@pytest.mark.parametrize(
    "arr",
    [
        np.array(["a", "b"]),
        np.zeros(3, dtype=object),
        np.zeros(3, dtype=">i4"),
        np.zeros(3, dtype="datetime64[s]"),
        np.zeros(3, dtype=[("a", np.int32)]),
        np.zeros(3, dtype=np.float128) if hasattr(np, "float128") else np.zeros(3, dtype="timedelta64[s]"),
        np.zeros(3, dtype=np.clongdouble),
    ],
    ids=["str", "object", "big-endian", "datetime", "struct", "longdouble", "clongdouble"],
)
def test_unsupported_dtypes_refused(arr):
    with raises_named(TypeError, "from_numpy()", "supported"):
        st.from_numpy(arr)


def test_from_numpy_rejects_non_arrays():
    with raises_named(TypeError, "from_numpy()"):
        st.from_numpy([1, 2, 3])


# float8_e5m2: test_float8_e5m2_through_numpy (a known bug)
@pytest.mark.parametrize(
    "name", ["bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]
)
def test_ml_dtypes_round_trip(name):
    npdt = np.dtype(getattr(ml_dtypes, name))
    a = np.arange(8).astype(np.float32).astype(npdt).reshape(2, 4)
    t = st.from_numpy(a)
    assert t.dtype is getattr(st, name)
    assert t.data_ptr() == a.ctypes.data
    n = t.numpy()
    assert n.dtype == npdt
    np.testing.assert_array_equal(n.view(np.uint8), a.view(np.uint8))
    assert np.asarray(t).dtype == npdt
    np.testing.assert_array_equal(
        np.ascontiguousarray(t.t().numpy()).view(np.uint8), np.ascontiguousarray(a.T).view(np.uint8)
    )


def test_float8_e5m2_through_numpy():
    # got: st.from_numpy(np.zeros(3, ml_dtypes.float8_e5m2)) -> ValueError "cannot include dtype '5' in a
    # buffer";
    # st.zeros(2, dtype=st.float8_e5m2).numpy() / repr() / tolist() -> BufferError "float8_e5m2 has no buffer
    # format"
    t = st.zeros(2, dtype=st.float8_e5m2)
    assert "float8_e5m2" in repr(t)
    assert t.numpy().dtype == np.dtype(ml_dtypes.float8_e5m2)
    assert t.tolist() == [0.0, 0.0]
    a = np.arange(4).astype(np.float32).astype(ml_dtypes.float8_e5m2)
    u = st.from_numpy(a)
    assert u.dtype is st.float8_e5m2 and u.data_ptr() == a.ctypes.data


@pytest.mark.parametrize("name", [d.name for d in st.dtypes() if d.name != "float8_e5m2"])
def test_repr_and_tolist_of_every_dtype(name):
    dt = getattr(st, name)
    for t in [
        st.zeros(2, 3, dtype=dt),
        st.zeros(0, dtype=dt),
        st.zeros((), dtype=dt),
        st.zeros(3, 4, dtype=dt).t()[1:],
    ]:
        r = repr(t)
        assert r.startswith("tensor(") and f"dtype={name}" in r and f"layout={t.layout}" in r
        if name != "float4_e2m1fn_x2":
            values = t.tolist()
            assert np.asarray(values).shape == t.shape


def test_repr_of_a_large_tensor_is_summarised():
    r = repr(st.arange(10_000))
    assert "..." in r and len(r) < 2000


def test_bfloat16_values_through_numpy():
    a = np.array([1.5, -2.25, 3e38, 1e-40], dtype=ml_dtypes.bfloat16)
    t = st.from_numpy(a)
    np.testing.assert_array_equal(t.to(dtype=st.float32).numpy(), a.astype(np.float32))
    np.testing.assert_array_equal(
        st.from_numpy(a.astype(np.float32)).to(dtype=st.bfloat16).numpy().view(np.uint16), a.view(np.uint16)
    )


def test_complex32_has_no_numpy_dtype():
    t = st.zeros(2, dtype=st.complex32)
    with raises_named(TypeError, "numpy()", "complex64"):
        t.numpy()


def test_array_protocol_dtype_and_copy():
    t = st.arange(4, dtype=st.int32)
    a = np.asarray(t)
    assert a.dtype == np.int32 and a.ctypes.data == t.data_ptr()
    c = np.array(t, copy=True)
    assert c.ctypes.data != t.data_ptr() and c.tolist() == [0, 1, 2, 3]
    f = np.asarray(t, dtype=np.float64)
    assert f.dtype == np.float64 and f.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        np.array(t, dtype=np.float64, copy=False)
    same = np.array(t, copy=False)
    assert same.ctypes.data == t.data_ptr()


def test_array_protocol_of_strided_and_0d():
    t = st.arange(12).reshape(3, 4)[:, 1::2]
    a = np.asarray(t)
    assert a.strides == (32, 16)
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4)[:, 1::2])
    z = st.full((), 3.5)
    assert np.asarray(z).shape == () and float(np.asarray(z)) == 3.5


@pytest.mark.parametrize(
    "name,fmt",
    [
        ("uint8", "B"),
        ("int8", "b"),
        ("int16", "h"),
        ("int32", "i"),
        ("int64", "q"),
        ("uint16", "H"),
        ("uint32", "I"),
        ("uint64", "Q"),
        ("float16", "e"),
        ("float32", "f"),
        ("float64", "d"),
        ("bool", "?"),
        ("complex64", "Zf"),
        ("complex128", "Zd"),
    ],
)
def test_buffer_protocol_formats(name, fmt):
    t = st.zeros(2, 3, dtype=getattr(st, name))
    m = memoryview(t)
    assert m.format == fmt and m.shape == (2, 3) and m.itemsize == t.itemsize
    assert m.strides == (3 * t.itemsize, t.itemsize)
    assert not m.readonly
    m.release()


def test_buffer_protocol_strided_export():
    t = st.arange(6).reshape(2, 3).t()
    m = memoryview(t)
    assert m.strides == (8, 24) and not m.c_contiguous
    assert m.tolist() == [[0, 3], [1, 4], [2, 5]]
    m.release()


@pytest.mark.parametrize("name", ["bfloat16", "complex32", "float8_e4m3fn"])
def test_buffer_protocol_refuses_types_without_format(name):
    with pytest.raises(BufferError) as info:
        memoryview(st.zeros(2, dtype=getattr(st, name)))
    assert "buffer" in str(info.value)


def test_buffer_protocol_import_of_bytes_like():
    b = bytearray(b"abc")
    t = st.asarray(memoryview(b))
    assert t.dtype is st.uint8 and t.tolist() == [97, 98, 99]
    t[0] = 65
    assert b == bytearray(b"Abc")


def test_size_zero_round_trip():
    for shape in [(0,), (0, 3), (2, 0, 4)]:
        a = np.zeros(shape, np.float32)
        t = st.from_numpy(a)
        assert t.shape == shape and t.numel() == 0
        assert t.numpy().shape == shape
        assert np.asarray(t).shape == shape


@pytest.mark.parametrize("name", ["int16", "int32", "float32", "float64", "complex128", "bfloat16"])
def test_misaligned_arrays_convert_and_copy_exactly(name):
    """numpy arrays need not be aligned (np.frombuffer at an odd offset): copies read and write them
    exactly."""
    dt = NUMPY_DTYPES[name]
    buf = bytearray(dt.itemsize * 30 + 3)
    a = np.ndarray((5, 6), dtype=dt, buffer=buf, offset=3)
    assert not a.flags.aligned
    a[...] = (np.arange(30).reshape(5, 6) - 7).astype(dt)
    t = st.from_numpy(a)
    assert t.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(t.to(dtype=st.float64).numpy(), np.real(a).astype(np.float64))
    np.testing.assert_array_equal(t.t().contiguous().numpy(), a.T)
    t[1:, ::2] = st.full((4, 3), 9.0)
    ref = (np.arange(30).reshape(5, 6) - 7).astype(dt)
    ref[1:, ::2] = 9
    np.testing.assert_array_equal(a, ref)

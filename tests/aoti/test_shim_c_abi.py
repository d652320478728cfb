"""C-level tests of every tensor shim (through ctypes), bad input included: errors, never crashes."""

from __future__ import annotations

import ctypes
import threading
from ctypes import (
    POINTER,
    byref,
    c_bool,
    c_double,
    c_float,
    c_int8,
    c_int16,
    c_int32,
    c_int64,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)

import numpy as np
import pytest
from slimtensor.aoti import _lib

from ._helpers import shim_lib

H = c_void_p
P64 = POINTER(c_int64)
F32, F64, I64, I32, BOOL, BF16, U8 = 6, 7, 4, 3, 11, 15, 0


@pytest.fixture(scope="module")
def L():
    return shim_lib()


def arr(*v):
    return (c_int64 * max(1, len(v)))(*v)


def ok(rc):
    assert rc == 0, _lib.last_error()


def err(rc, *words):
    assert rc != 0, "expected an error"
    msg = _lib.last_error()
    for w in words:
        assert w in msg, msg
    return msg


def empty(L, sizes, strides=None, dtype=F32):
    h = H()
    ok(
        L.aoti_torch_empty_strided(
            len(sizes), arr(*sizes), arr(*strides) if strides is not None else None, dtype, 0, 0, byref(h)
        )
    )
    return h


def meta(L, h):
    d, n, off, sz = c_int64(), c_int64(), c_int64(), c_int64()
    sizes, strides = P64(), P64()
    dt, dev = c_int32(), c_int32()
    ok(L.aoti_torch_get_dim(h, byref(d)))
    ok(L.aoti_torch_get_numel(h, byref(n)))
    ok(L.aoti_torch_get_sizes(h, byref(sizes)))
    ok(L.aoti_torch_get_strides(h, byref(strides)))
    ok(L.aoti_torch_get_storage_offset(h, byref(off)))
    ok(L.aoti_torch_get_storage_size(h, byref(sz)))
    ok(L.aoti_torch_get_dtype(h, byref(dt)))
    ok(L.aoti_torch_get_device_type(h, byref(dev)))
    return dict(
        ndim=d.value,
        numel=n.value,
        sizes=[sizes[i] for i in range(d.value)],
        strides=[strides[i] for i in range(d.value)],
        offset=off.value,
        nbytes=sz.value,
        dtype=dt.value,
        device=dev.value,
    )


def ptr(L, h):
    p = c_void_p()
    ok(L.aoti_torch_get_data_ptr(h, byref(p)))
    return p.value or 0


def view_np(L, h, dtype=np.float32):
    from slimtensor.aoti._numpy import array_from_handle

    return array_from_handle(h)


def fill(L, h, values):
    a = view_np(L, h)
    a[...] = np.asarray(values).reshape(a.shape)


@pytest.fixture(autouse=True)
def no_leaks(L):
    before = _lib.live_handles()
    yield
    assert _lib.live_handles() == before, "a test leaked AOTI handles"


def test_constants(L):
    codes = {
        "float32": 6,
        "float64": 7,
        "float16": 5,
        "bfloat16": 15,
        "int64": 4,
        "int32": 3,
        "int16": 2,
        "int8": 1,
        "uint8": 0,
        "bool": 11,
        "complex32": 8,
        "complex64": 9,
        "complex128": 10,
        "uint16": 27,
        "uint32": 28,
        "uint64": 29,
        "float8_e5m2": 23,
        "float8_e4m3fn": 24,
        "float8_e5m2fnuz": 25,
        "float8_e4m3fnuz": 26,
        "float8_e8m0fnu": 44,
        "float4_e2m1fn_x2": 45,
    }
    for name, code in codes.items():
        assert getattr(L, f"aoti_torch_dtype_{name}")() == code, name
    devices = {"cpu": 0, "cuda": 1, "xpu": 12, "mps": 13, "meta": 14, "privateuse1": 20}
    for name, code in devices.items():
        assert getattr(L, f"aoti_torch_device_type_{name}")() == code
    layouts = {
        "strided": 0,
        "sparse_coo": 1,
        "sparse_csr": 2,
        "_mkldnn": 3,
        "sparse_csc": 4,
        "sparse_bsr": 5,
        "sparse_bsc": 6,
        "jagged": 7,
    }
    for name, code in layouts.items():
        assert getattr(L, f"aoti_torch_layout_{name}")() == code
    fmts = {"contiguous_format": 0, "preserve_format": 1, "channels_last": 2, "channels_last_3d": 3}
    for name, code in fmts.items():
        assert getattr(L, f"aoti_torch_memory_format_{name}")() == code
    assert L.aoti_torch_abi_version() == 0x020D000000000000
    assert L.aoti_torch_dtype_element_size(F32) == 4
    assert L.aoti_torch_dtype_element_size(BF16) == 2
    assert L.aoti_torch_dtype_element_size(10) == 16
    assert L.aoti_torch_dtype_element_size(99) == 0
    assert "dtype" in _lib.last_error()


def test_empty_strided_and_getters(L):
    h = empty(L, [2, 3])
    m = meta(L, h)
    assert m == dict(ndim=2, numel=6, sizes=[2, 3], strides=[3, 1], offset=0, nbytes=24, dtype=F32, device=0)
    assert ptr(L, h) % 64 == 0
    idx, lay, c, d = c_int32(), c_int32(), c_bool(), c_bool()
    ok(L.aoti_torch_get_device_index(h, byref(idx)))
    ok(L.aoti_torch_get_layout(h, byref(lay)))
    ok(L.aoti_torch_is_contiguous(h, byref(c)))
    ok(L.aoti_torch_is_defined(h, byref(d)))
    assert (idx.value, lay.value, c.value, d.value) == (0, 0, True, True)
    v = c_int64()
    ok(L.aoti_torch_get_size(h, -1, byref(v)))
    assert v.value == 3
    ok(L.aoti_torch_get_stride(h, 0, byref(v)))
    assert v.value == 3
    err(L.aoti_torch_get_size(h, 2, byref(v)), "aoti_torch_get_size")
    ok(L.aoti_torch_get_storage_numel(h, byref(v)))
    assert v.value == 6
    # sizes/strides pointers are stable while the handle lives
    p1, p2 = P64(), P64()
    ok(L.aoti_torch_get_sizes(h, byref(p1)))
    ok(L.aoti_torch_get_sizes(h, byref(p2)))
    assert ctypes.addressof(p1.contents) == ctypes.addressof(p2.contents)
    ok(L.aoti_torch_delete_tensor_object(h))


def test_empty_strided_layouts(L):
    h = empty(L, [2, 3], [1, 2])  # column-major: extent 6 elements
    m = meta(L, h)
    assert m["strides"] == [1, 2] and m["nbytes"] == 24
    ok(L.aoti_torch_delete_tensor_object(h))
    h = empty(L, [2, 3], [8, 2], dtype=F64)  # padded: extent 8 + 4 + 1 = 13
    assert meta(L, h)["nbytes"] == 13 * 8
    ok(L.aoti_torch_delete_tensor_object(h))
    h = empty(L, [0, 3])
    assert meta(L, h)["numel"] == 0
    ok(L.aoti_torch_delete_tensor_object(h))
    h = empty(L, [])  # 0-d
    m = meta(L, h)
    assert m["ndim"] == 0 and m["numel"] == 1 and m["nbytes"] == 4
    ok(L.aoti_torch_delete_tensor_object(h))
    h = H()
    ok(L.aoti_torch_empty_strided_pinned(1, arr(4), None, I64, 0, 0, byref(h)))
    ok(L.aoti_torch_delete_tensor_object(h))
    ok(L.aoti_torch_empty_strided(1, arr(4), None, F32, 0, -1, byref(h)))  # cpu index -1 means the cpu
    ok(L.aoti_torch_delete_tensor_object(h))


@pytest.mark.parametrize(
    "case",
    [
        "null_ret",
        "neg_ndim",
        "huge_ndim",
        "null_sizes",
        "neg_size",
        "bad_dtype",
        "quantized_dtype",
        "neg_dtype",
        "bad_device",
        "unknown_device",
        "cpu_index",
        "neg_stride",
        "overflow",
    ],
)
def test_empty_strided_errors(L, case):
    h = H()
    args = dict(ndim=2, sizes=arr(2, 3), strides=None, dtype=F32, dev=0, idx=0, ret=byref(h))
    words = ["aoti_torch_empty_strided"]
    if case == "null_ret":
        args["ret"] = None
        words.append("NULL")
    elif case == "neg_ndim":
        args["ndim"] = -1
        words.append("ndim")
    elif case == "huge_ndim":
        args["ndim"] = 1000
        words.append("ndim")
    elif case == "null_sizes":
        args["sizes"] = None
        words.append("sizes_ptr is NULL")
    elif case == "neg_size":
        args["sizes"] = arr(2, -3)
    elif case == "bad_dtype":
        args["dtype"] = 99
    elif case == "quantized_dtype":
        args["dtype"] = 12
    elif case == "neg_dtype":
        args["dtype"] = -1
    elif case == "bad_device":
        args["dev"] = -5
        words.append("device_type")
    elif case == "unknown_device":
        args["dev"] = 37
    elif case == "cpu_index":
        args["idx"] = 3
        words.append("device_index")
    elif case == "neg_stride":
        args["strides"] = arr(3, -1)
    elif case == "overflow":
        args["sizes"] = arr(2**40, 2**40)
    err(
        L.aoti_torch_empty_strided(
            args["ndim"], args["sizes"], args["strides"], args["dtype"], args["dev"], args["idx"], args["ret"]
        ),
        *words,
    )
    assert not h.value


def test_model_owner_ignores_an_unrelated_storage_at_a_freed_temporarys_address(L):
    # got: a from_blob temporary made while a model owner was entered, then freed, left its address in the
    # owner's constants; a later output whose storage header reused that address was "adopted" as a
    # constant, and its own memory freed under it (heap-use-after-free). The owner now keeps storage ids.
    owner = L.slimtensor_aoti_owner_new(None, None)
    buf = np.zeros(4, np.float32)
    try:
        L.slimtensor_aoti_owner_enter(owner)
        tmp = H()
        ok(L.aoti_torch_create_tensor_from_blob(buf.ctypes.data, 1, arr(4), None, 0, F32, 0, 0, byref(tmp)))
        ok(L.aoti_torch_delete_tensor_object(tmp))
    finally:
        L.slimtensor_aoti_owner_enter(None)
    outputs = [empty(L, [1 << 20]) for _ in range(4)]  # large: headers from the cache the temporary went to
    try:
        assert [L.slimtensor_aoti_owner_adopt_output(owner, h) for h in outputs] == [0, 0, 0, 0]
        assert L.slimtensor_aoti_owner_refs(owner) == 1
    finally:
        for h in outputs:
            ok(L.aoti_torch_delete_tensor_object(h))
        L.slimtensor_aoti_owner_release(owner)


@pytest.mark.parametrize(
    "case", ["neg_size", "overflow", "zero_hides_overflow", "unknown_device", "huge_alloc"]
)
def test_errors_name_the_shim_once(L, case):
    # got: "aoti_torch_empty_strided(): aoti_torch_empty_strided: out of memory ..." (the core's message
    # repeated the name the shim gave it)
    sizes = {"neg_size": (2, -3), "overflow": (2**40, 2**40), "zero_hides_overflow": (2**62, 4, 0)}.get(
        case, (2, 3)
    )
    if case == "huge_alloc":
        sizes = (1 << 50,)
    dev = 37 if case == "unknown_device" else 0
    h = H()
    rc = L.aoti_torch_empty_strided(
        len(sizes), arr(*sizes), None, U8 if case == "huge_alloc" else F32, dev, 0, byref(h)
    )
    msg = err(rc)
    assert msg.startswith("aoti_torch_empty_strided(): "), msg
    assert msg.count("aoti_torch_empty_strided") == 1, msg
    assert not h.value


def test_from_blob_offset_is_from_the_base(L):
    buf = np.arange(16, dtype=np.float32)
    base = buf.ctypes.data
    h = H()
    ok(L.aoti_torch_create_tensor_from_blob(base, 2, arr(2, 2), arr(2, 1), 3, F32, 0, 0, byref(h)))
    assert ptr(L, h) == base + 12
    m = meta(L, h)
    assert m["offset"] == 3 and m["nbytes"] == 28  # libtorch: the extent of the view from the base
    np.testing.assert_array_equal(view_np(L, h), [[3, 4], [5, 6]])
    view_np(L, h)[0, 0] = 100  # borrowed: writes reach the blob
    assert buf[3] == 100
    ok(L.aoti_torch_delete_tensor_object(h))
    ok(L.aoti_torch_create_tensor_from_blob_v2(base, 1, arr(4), None, 0, F32, 0, 0, byref(h), 0, None, 0))
    assert meta(L, h)["strides"] == [1]
    ok(L.aoti_torch_delete_tensor_object(h))


def test_from_blob_null_data(L):
    h = H()
    ok(L.aoti_torch_create_tensor_from_blob_v2(None, 2, arr(0, 3), None, 0, F32, 0, 0, byref(h), 0, None, 0))
    assert meta(L, h)["numel"] == 0
    ok(L.aoti_torch_delete_tensor_object(h))
    err(
        L.aoti_torch_create_tensor_from_blob_v2(None, 2, arr(2, 3), None, 0, F32, 0, 0, byref(h), 0, None, 0),
        "NULL",
        "elements",
    )


def test_from_blob_errors(L):
    buf = np.zeros(8, np.float32)
    h = H()
    err(
        L.aoti_torch_create_tensor_from_blob_v2(
            buf.ctypes.data, 1, arr(4), None, 0, F32, 0, 0, byref(h), 3, None, 0
        ),
        "mkldnn",
    )
    err(
        L.aoti_torch_create_tensor_from_blob_v2(
            buf.ctypes.data, 1, arr(4), None, -1, F32, 0, 0, byref(h), 0, None, 0
        ),
        "storage_offset",
    )
    err(L.aoti_torch_create_tensor_from_blob(buf.ctypes.data, 1, arr(4), None, 0, 123, 0, 0, byref(h)))
    err(
        L.aoti_torch_create_tensor_from_blob(buf.ctypes.data, -2, arr(4), None, 0, F32, 0, 0, byref(h)),
        "ndim",
    )
    err(L.aoti_torch_create_tensor_from_blob(buf.ctypes.data, 1, arr(4), None, 0, F32, 0, 0, None), "NULL")
    err(L.aoti_torch_create_tensor_from_blob(buf.ctypes.data, 1, arr(4), None, 0, F32, 1, 0, byref(h)))


def test_reinterpret_offset_is_an_increment(L):
    base = empty(L, [10])
    fill(L, base, np.arange(10))
    v1, v2 = H(), H()
    ok(L.aoti_torch__reinterpret_tensor(base, 1, arr(4), arr(1), 2, byref(v1)))
    ok(L.aoti_torch__reinterpret_tensor(v1, 2, arr(2, 2), arr(2, 1), 3, byref(v2)))
    assert meta(L, v2)["offset"] == 5
    np.testing.assert_array_equal(view_np(L, v2), [[5, 6], [7, 8]])
    ok(L.aoti_torch_delete_tensor_object(base))  # views keep the storage alive
    ok(L.aoti_torch_delete_tensor_object(v1))
    view_np(L, v2)[1, 1] = 42
    np.testing.assert_array_equal(view_np(L, v2), [[5, 6], [7, 42]])
    ok(L.aoti_torch_delete_tensor_object(v2))


def test_reinterpret_errors(L):
    base = empty(L, [10])
    v = H()
    err(L.aoti_torch__reinterpret_tensor(base, 1, arr(11), arr(1), 0, byref(v)))  # past the storage
    err(L.aoti_torch__reinterpret_tensor(base, 1, arr(4), arr(1), 7, byref(v)))
    err(L.aoti_torch__reinterpret_tensor(base, 1, arr(4), arr(1), -1, byref(v)), "offset")
    err(L.aoti_torch__reinterpret_tensor(base, -1, arr(4), arr(1), 0, byref(v)), "ndim")
    err(L.aoti_torch__reinterpret_tensor(None, 1, arr(4), arr(1), 0, byref(v)), "self is NULL")
    err(L.aoti_torch__reinterpret_tensor(base, 1, arr(4), arr(1), 0, None), "NULL")
    err(L.aoti_torch__reinterpret_tensor(base, 2, arr(4, 4), arr(2**62, 1), 0, byref(v)))
    ok(L.aoti_torch__reinterpret_tensor(base, 2, arr(2, 5), None, 0, byref(v)))  # NULL strides = contiguous
    assert meta(L, v)["strides"] == [5, 1]
    ok(L.aoti_torch_delete_tensor_object(v))
    ok(L.aoti_torch_delete_tensor_object(base))


def test_as_strided_keeps_offset(L):
    base = empty(L, [12])
    fill(L, base, np.arange(12))
    v, w = H(), H()
    ok(L.aoti_torch__reinterpret_tensor(base, 1, arr(6), arr(1), 4, byref(v)))
    ok(L.aoti_torch_as_strided(v, arr(3), arr(2), byref(w)))
    np.testing.assert_array_equal(view_np(L, w), [4, 6, 8])
    err(L.aoti_torch_as_strided(v, arr(5), arr(2), byref(w)))  # 4 + 8 > 11
    err(L.aoti_torch_as_strided(v, arr(3), None, byref(w)), "strides_ptr")
    for h in (w, v, base):
        ok(L.aoti_torch_delete_tensor_object(h))


def test_alloc_from_pool(L):
    pool = empty(L, [64], dtype=U8)
    v = H()
    ok(L.aoti_torch__alloc_from_pool(pool, 16, F32, 2, arr(2, 3), arr(3, 1), byref(v)))
    m = meta(L, v)
    assert m["dtype"] == F32 and m["offset"] == 4 and ptr(L, v) == ptr(L, pool) + 16
    err(L.aoti_torch__alloc_from_pool(pool, 6, F32, 1, arr(2), None, byref(v)), "multiple")
    err(L.aoti_torch__alloc_from_pool(pool, 48, F32, 1, arr(8), None, byref(v)))  # 48 + 32 > 64
    err(L.aoti_torch__alloc_from_pool(pool, 0, 77, 1, arr(2), None, byref(v)))
    off = H()
    ok(L.aoti_torch__reinterpret_tensor(pool, 1, arr(8), None, 8, byref(off)))
    err(L.aoti_torch__alloc_from_pool(off, 0, F32, 1, arr(2), None, byref(v)), "offset 0")
    for h in (off, v, pool):
        ok(L.aoti_torch_delete_tensor_object(h))


def test_new_handle_assign_and_uninitialized(L):
    a = empty(L, [3])
    fill(L, a, [1, 2, 3])
    b, c, u = H(), H(), H()
    ok(L.aoti_torch_new_tensor_handle(a, byref(b)))
    assert ptr(L, a) == ptr(L, b)
    ok(L.aoti_torch_new_uninitialized_tensor(byref(u)))
    d = c_bool(True)
    ok(L.aoti_torch_is_defined(u, byref(d)))
    assert not d.value
    p = c_void_p()
    err(L.aoti_torch_get_data_ptr(u, byref(p)), "undefined")
    err(L.aoti_torch_clone(u, byref(c)), "undefined")
    ok(L.aoti_torch_assign_tensors(a, u))
    assert ptr(L, u) == ptr(L, a)
    ok(L.aoti_torch_assign_tensors_out(a, byref(c)))
    ok(L.aoti_torch_delete_tensor_object(a))  # src stays usable through the others
    np.testing.assert_array_equal(view_np(L, c), [1, 2, 3])
    for h in (b, c, u):
        ok(L.aoti_torch_delete_tensor_object(h))
    err(L.aoti_torch_new_tensor_handle(None, byref(b)), "NULL")
    err(L.aoti_torch_assign_tensors(None, None), "NULL")
    err(L.aoti_torch_new_uninitialized_tensor(None), "NULL")


def test_delete_errors(L):
    err(L.aoti_torch_delete_tensor_object(None), "NULL")
    h = empty(L, [2])
    ok(L.aoti_torch_delete_tensor_object(h))
    err(L.aoti_torch_delete_tensor_object(h), "not a live")  # its key is dead
    foreign = (c_uint64 * 64)()
    err(L.aoti_torch_delete_tensor_object(ctypes.addressof(foreign)), "not a live")


GETTERS = [
    ("get_data_ptr", c_void_p),
    ("get_dim", c_int64),
    ("get_numel", c_int64),
    ("get_sizes", P64),
    ("get_strides", P64),
    ("get_dtype", c_int32),
    ("get_device_type", c_int32),
    ("get_device_index", c_int32),
    ("get_storage_offset", c_int64),
    ("get_storage_size", c_int64),
    ("get_storage_numel", c_int64),
    ("get_layout", c_int32),
    ("is_contiguous", c_bool),
    ("is_defined", c_bool),
]


def test_double_delete_of_many_handles_is_an_error(L):
    """Issue 14: 1,000 handles (more than a thread caches), each deleted twice: the second delete read freed
    memory (ASan: heap-use-after-free). Every second delete must be an error, and nothing may leak."""
    before = L.slimtensor_aoti_live_handles()
    hs = [empty(L, [3]) for _ in range(1000)]
    for h in hs:
        ok(L.aoti_torch_delete_tensor_object(h))
    for h in hs:
        err(L.aoti_torch_delete_tensor_object(h), "aoti_torch_delete_tensor_object", "not a live")
    assert L.slimtensor_aoti_live_handles() == before


def test_stale_handle_never_names_a_new_handle(L):
    """Issue 14: a double delete after the freed slot was reused by a new handle returned 0 and destroyed the
    new handle. A deleted handle's value must stay dead whatever is made after it."""
    for _ in range(3):
        old = empty(L, [2])
        ok(L.aoti_torch_delete_tensor_object(old))
        new = [empty(L, [4]) for _ in range(300)]  # reuses old's slot (and every cached one)
        err(L.aoti_torch_delete_tensor_object(old), "not a live")
        dim = c_int64()
        err(L.aoti_torch_get_dim(old, byref(dim)), "aoti_torch_get_dim", "not a live")
        for h in new:
            n = c_int64()
            ok(L.aoti_torch_get_numel(h, byref(n)))
            assert n.value == 4
            ok(L.aoti_torch_delete_tensor_object(h))


def test_getters_reject_deleted_and_foreign_handles(L):
    """docs/aoti.md: any pointer that is not a live handle is an error, getters included (they returned 0)."""
    h = empty(L, [2])
    ok(L.aoti_torch_delete_tensor_object(h))
    foreign = (c_uint64 * 64)(0x51AB7E45)  # a heap pointer that looks like an old handle
    for bad in (h, ctypes.addressof(foreign), 8, 2**63 + 5, 2**64 - 1):
        for name, t in GETTERS:
            v = t()
            err(getattr(L, "aoti_torch_" + name)(bad, byref(v)), "aoti_torch_" + name, "not a live")
        f = c_float()
        err(L.aoti_torch_item_float32(bad, byref(f)), "aoti_torch_item_float32", "not a live")
        err(L.aoti_torch_zero_(bad), "not a live")


def test_getters_reject_null(L):
    h = empty(L, [2])
    for name, t in GETTERS:
        f = getattr(L, "aoti_torch_" + name)
        v = t()
        err(f(None, byref(v)), name)
        err(f(h, None), name)
    ok(L.aoti_torch_delete_tensor_object(h))


def test_clone_and_clone_preserve_strides(L):
    a = empty(L, [3, 4])
    fill(L, a, np.arange(12))
    t, c, p = H(), H(), H()
    ok(L.aoti_torch__reinterpret_tensor(a, 2, arr(4, 3), arr(1, 4), 0, byref(t)))  # transposed view
    ok(L.aoti_torch_clone(t, byref(c)))
    ok(L.aoti_torch_clone_preserve_strides(t, byref(p)))
    assert meta(L, p)["strides"] == [1, 4] and ptr(L, p) != ptr(L, a)
    np.testing.assert_array_equal(view_np(L, c), np.arange(12).reshape(3, 4).T)
    np.testing.assert_array_equal(view_np(L, p), np.arange(12).reshape(3, 4).T)
    e, pe = H(), H()
    ok(L.aoti_torch__reinterpret_tensor(a, 2, arr(5, 4), arr(0, 1), 4, byref(e)))  # expanded row
    ok(L.aoti_torch_clone_preserve_strides(e, byref(pe)))
    assert meta(L, pe)["strides"] == [0, 1]
    np.testing.assert_array_equal(view_np(L, pe), np.tile([4, 5, 6, 7], (5, 1)))
    for h in (a, t, c, p, e, pe):
        ok(L.aoti_torch_delete_tensor_object(h))


def test_copy(L):
    a, b = empty(L, [2, 3]), empty(L, [2, 3])
    fill(L, a, np.arange(6))
    ok(L.aoti_torch_copy_(b, a, 0))
    np.testing.assert_array_equal(view_np(L, b), view_np(L, a))
    t = H()
    ok(L.aoti_torch__reinterpret_tensor(a, 2, arr(2, 3), arr(1, 2), 0, byref(t)))
    ok(L.aoti_torch_tensor_copy_(t, b))  # (src, dst) order
    np.testing.assert_array_equal(view_np(L, b), np.arange(6).reshape(3, 2).T)
    row, i = H(), empty(L, [2, 3], dtype=I64)
    ok(L.aoti_torch__reinterpret_tensor(a, 1, arr(3), arr(1), 0, byref(row)))
    ok(L.aoti_torch_copy_(i, row, 0))  # broadcasting and float -> int64
    np.testing.assert_array_equal(view_np(L, i), [[0, 1, 2], [0, 1, 2]])
    exp = H()
    ok(L.aoti_torch__reinterpret_tensor(a, 2, arr(2, 3), arr(0, 1), 0, byref(exp)))
    err(L.aoti_torch_copy_(exp, b, 0))  # destination overlaps itself
    err(L.aoti_torch_copy_(None, b, 0), "NULL")
    small = empty(L, [2])
    err(L.aoti_torch_copy_(a, small, 0))  # does not broadcast
    ok(L.aoti_torch_zero_(a))
    assert not view_np(L, a).any()
    for h in (a, b, t, row, i, exp, small):
        ok(L.aoti_torch_delete_tensor_object(h))


ITEM_TYPES = [
    ("float32", c_float, 6),
    ("float64", c_double, 7),
    ("uint8", c_uint8, 0),
    ("uint16", c_uint16, 27),
    ("uint32", c_uint32, 28),
    ("uint64", c_uint64, 29),
    ("int8", c_int8, 1),
    ("int16", c_int16, 2),
    ("int32", c_int32, 3),
    ("int64", c_int64, 4),
    ("bool", c_bool, 11),
]


@pytest.mark.parametrize("name,ctype,code", ITEM_TYPES)
def test_scalar_to_tensor_and_item(L, name, ctype, code):
    mk = getattr(L, f"aoti_torch_scalar_to_tensor_{name}")
    mk.restype, mk.argtypes = c_int32, [ctype, POINTER(H)]
    item = getattr(L, f"aoti_torch_item_{name}")
    item.restype, item.argtypes = c_int32, [H, POINTER(ctype)]
    h = H()
    value = True if name == "bool" else 7
    ok(mk(value, byref(h)))
    m = meta(L, h)
    assert m["dtype"] == code and m["ndim"] == 0
    out = ctype()
    ok(item(h, byref(out)))
    assert out.value == value
    f = c_float()
    ok(L.aoti_torch_item_float32(h, byref(f)))  # converts
    assert f.value == float(value)
    ok(L.aoti_torch_delete_tensor_object(h))
    err(item(None, byref(out)), "NULL")
    big = empty(L, [2], dtype=code)
    err(item(big, byref(out)), "one element")
    ok(L.aoti_torch_delete_tensor_object(big))


def test_item_conversions(L):
    f = H()
    mk = L.aoti_torch_scalar_to_tensor_float64
    mk.restype, mk.argtypes = c_int32, [c_double, POINTER(H)]
    ok(mk(1e10, byref(f)))
    i8 = c_int8()
    L.aoti_torch_item_int8.argtypes = [H, POINTER(c_int8)]
    err(L.aoti_torch_item_int8(f, byref(i8)), "overflow")
    bf = c_uint16()
    L.aoti_torch_item_bfloat16.argtypes = [H, POINTER(c_uint16)]
    ok(L.aoti_torch_item_bfloat16(f, byref(bf)))
    import ml_dtypes

    assert bf.value == int(np.array([1e10], np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)[0])
    ok(L.aoti_torch_delete_tensor_object(f))


def test_grad_mode_is_thread_local(L):
    assert L.aoti_torch_grad_mode_is_enabled()
    L.aoti_torch_grad_mode_set_enabled(False)
    seen = []
    t = threading.Thread(target=lambda: seen.append(L.aoti_torch_grad_mode_is_enabled()))
    t.start()
    t.join()
    assert seen == [True] and not L.aoti_torch_grad_mode_is_enabled()
    L.aoti_torch_grad_mode_set_enabled(True)


def test_warn_prints(L, capfd):
    L.aoti_torch_warn(b"fn", b"file.cpp", 12, b"careful")
    assert "careful" in capfd.readouterr().err


def test_memory_stats_count_handles(L):
    before = _lib.live_handles()
    hs = [empty(L, [4]) for _ in range(5)]
    assert _lib.live_handles() == before + 5
    for h in hs:
        ok(L.aoti_torch_delete_tensor_object(h))
    assert _lib.live_handles() == before


def test_empty_strided_on_a_plugin_device(L):
    """Device-generic: a handle on a plugin device allocates through the plugin (the test plugin hostdev)."""
    import slimtensor as st

    try:
        import slimtensor_hostdev  # noqa: F401
    except ImportError:
        pytest.skip("the test plugin slimtensor-hostdev is not installed (make build-test installs it)")
    devs = {d.name if hasattr(d, "name") else d["name"]: d for d in st.devices()}
    if "hostdev" not in devs or not st.Device("hostdev:0"):
        pytest.skip("hostdev is not registered")
    code = st.Device("hostdev:0").type_code if hasattr(st.Device("hostdev:0"), "type_code") else 20
    before = st.memory_stats("hostdev")
    h = H()
    ok(L.aoti_torch_empty_strided(2, arr(2, 3), None, F32, code, 1, byref(h)))
    m = meta(L, h)
    idx = c_int32()
    ok(L.aoti_torch_get_device_index(h, byref(idx)))
    assert m["device"] == code and idx.value == 1
    assert st.memory_stats("hostdev")["live_aoti_handles"] == before["live_aoti_handles"] + 1
    c = empty(L, [2, 3])
    fill(L, c, np.arange(6))
    ok(L.aoti_torch_copy_(h, c, 0))  # cpu -> device
    back = empty(L, [2, 3])
    ok(L.aoti_torch_copy_(back, h, 0))  # device -> cpu
    np.testing.assert_array_equal(view_np(L, back), np.arange(6).reshape(2, 3))
    for x in (h, c, back):
        ok(L.aoti_torch_delete_tensor_object(x))
    assert st.memory_stats("hostdev")["live_aoti_handles"] == before["live_aoti_handles"]
    err(L.aoti_torch_empty_strided(1, arr(2), None, F32, code, 7, byref(h)))  # no such device index


def test_handles_are_traced(L):
    """Handle creation and deletion are trace events (HandleCreate/HandleDelete) while a trace runs."""
    from slimtensor import _C

    first = _C._trace_start()
    h = empty(L, [2, 3])
    v = H()
    ok(L.aoti_torch__reinterpret_tensor(h, 1, arr(3), None, 0, byref(v)))
    ok(L.aoti_torch_delete_tensor_object(v))
    ok(L.aoti_torch_delete_tensor_object(h))
    events = _C._trace_stop(first)
    kinds = [(e["kind"], e["op"]) for e in events if "handle" in str(e["kind"]).lower()]
    assert kinds == [
        ("handle_create", "aoti_torch_empty_strided"),
        ("handle_create", "aoti_torch__reinterpret_tensor"),
        ("handle_delete", "aoti_torch_delete_tensor_object"),
        ("handle_delete", "aoti_torch_delete_tensor_object"),
    ], kinds
    created = [e for e in events if e["kind"] == "handle_create"]
    assert created[0]["id"] == h.value and tuple(created[0]["sizes"]) == (2, 3)
    assert created[1]["storage_id"] == created[0]["storage_id"]  # a view: same storage

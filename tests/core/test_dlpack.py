"""DLPack both ways: versioned (1.x) and legacy capsules, max_version, dl_device, copy, read-only flag,
byte_offset, size-0 tensors, null strides, consumed capsules, refusals (device, dtype, absurd shapes), and the
producer's deleter being called exactly once. Hand-made capsules come from ctypes.

Every import case runs through both envelopes of the one codec (src/dlpack/codec.h): the Python binding
(st.from_dlpack) and the C bridge for AOTI hosts (slimtensor_aoti_handle_from_dlpack(_versioned), then the
handle taken back as a tensor); export cases compare Tensor.__dlpack__ with slimtensor_aoti_handle_to_dlpack."""

from __future__ import annotations

import ctypes
import gc
import re

import ml_dtypes
import numpy as np
import pytest
import slimtensor as st

from ._util import raises_named, to_np


# --- the DLPack C structures, from the published specification ------------------------------------------
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


FLAG_READ_ONLY, FLAG_IS_COPIED = 1, 2
_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_PyCapsule_GetName = ctypes.pythonapi.PyCapsule_GetName
_PyCapsule_GetName.restype = ctypes.c_char_p
_PyCapsule_GetName.argtypes = [ctypes.py_object]
_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class HandMade:
    """A DLPack capsule over a numpy array's memory, with a deleter that counts its calls."""

    def __init__(
        self,
        array,
        shape,
        strides=None,
        byte_offset=0,
        dtype=(2, 32, 1),
        device=(1, 0),
        versioned=False,
        flags=0,
        version=(1, 1),
        ndim=None,
        data=-1,
    ):
        self.array = array
        self.calls = 0
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(*strides)
        self.deleter = DELETER(self._delete)
        managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
        if versioned:
            managed.version = DLPackVersion(*version)
            managed.flags = flags
        managed.deleter = self.deleter
        dl = managed.dl_tensor
        dl.data = (array.ctypes.data if array is not None else None) if data == -1 else data
        dl.device = DLDevice(*device)
        dl.ndim = len(shape) if ndim is None else ndim
        dl.dtype = DLDataType(*dtype)
        dl.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        dl.strides = None if strides is None else ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
        dl.byte_offset = byte_offset
        self.managed = managed
        self.name = b"dltensor_versioned" if versioned else b"dltensor"
        self.capsule = _PyCapsule_New(ctypes.addressof(managed), self.name, None)

    def _delete(self, ptr):
        assert ptr == ctypes.addressof(self.managed)
        self.calls += 1

    def capsule_name(self):
        return _PyCapsule_GetName(self.capsule).decode()


# --- the two envelopes of the codec ----------------------------------------------------------------------
PATHS = ["python", "aoti"]


def import_capsule(path, capsule):
    """A tensor from a capsule, through st.from_dlpack or through the C bridge an AOTI host uses."""
    if path == "python":
        return st.from_dlpack(capsule)
    from slimtensor.aoti import _lib

    return st._C._aoti_steal_handle(_lib.handle_from_capsule(capsule))


def bridge_export(t, versioned):
    """(managed struct, delete) of t exported through slimtensor_aoti_handle_to_dlpack(_versioned)."""
    from slimtensor.aoti import _lib

    lib = _lib.lib()
    h = st._C._aoti_new_handle(t)
    export = (
        lib.slimtensor_aoti_handle_to_dlpack_versioned if versioned else lib.slimtensor_aoti_handle_to_dlpack
    )
    ptr = export(h)
    if not ptr:  # the handle is still ours
        lib.aoti_torch_delete_tensor_object(h)
        raise RuntimeError(_lib.last_error())
    if versioned:
        return DLManagedTensorVersioned.from_address(
            ptr
        ), lambda: lib.slimtensor_aoti_dlpack_versioned_delete(ptr)
    return DLManagedTensor.from_address(ptr), lambda: lib.slimtensor_aoti_dlpack_delete(ptr)


# --- export and round trips ------------------------------------------------------------------------------


# (DLPack device type, index) of each device the `device` fixture gives: kDLCPU = 1, kDLCUDA = 2.
DL_DEVICE = {"cpu": (1, 0), "cuda": (2, 0)}


def test_capsule_kinds(device):
    t = st.arange(6, device=device).reshape(2, 3)
    assert "dltensor" in repr(t.__dlpack__()) and "versioned" not in repr(t.__dlpack__())
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 5)))
    assert "versioned" not in repr(t.__dlpack__(max_version=(0, 8)))
    assert t.__dlpack_device__() == DL_DEVICE[device]


@pytest.mark.parametrize("max_version", [None, (0, 8), (1, 0), (1, 1), (2, 0)])
@pytest.mark.parametrize(
    "make",
    [
        lambda d: st.arange(12, dtype=st.float32, device=d).reshape(3, 4),
        lambda d: st.arange(12, dtype=st.int16, device=d).reshape(3, 4).t(),
        lambda d: st.arange(30, dtype=st.float64, device=d).reshape(5, 6)[1:, ::2],
        lambda d: st.zeros(0, 3, device=d),
        lambda d: st.full((), 4, dtype=st.uint8, device=d),
        lambda d: st.arange(3, device=d).expand(2, 3),
        lambda d: st.arange(40, device=d)[5:],
    ],
    ids=["c", "t", "slice", "empty", "0d", "expand", "offset"],
)
@pytest.mark.parametrize("path", PATHS)
def test_round_trip_shares_memory(make, max_version, path, device):
    t = make(device)
    capsule = t.__dlpack__() if max_version is None else t.__dlpack__(max_version=max_version)
    u = import_capsule(path, capsule)
    assert u.shape == t.shape and u.dtype is t.dtype and u.device == t.device
    if t.numel():
        assert u.data_ptr() == t.data_ptr()
        assert [s for s, n in zip(u.stride(), u.shape, strict=False) if n > 1] == [
            s for s, n in zip(t.stride(), t.shape, strict=False) if n > 1
        ]
    np.testing.assert_array_equal(to_np(u), to_np(t))
    if t.numel() and not t._has_internal_overlap():
        u.fill_(7)
        assert to_np(t).min() == 7


def test_from_dlpack_of_a_producer_object(device):
    t = st.arange(5, device=device)
    u = st.from_dlpack(t)
    assert u.data_ptr() == t.data_ptr()
    assert u.storage().id != t.storage().id  # a borrowed storage that keeps the producer alive
    assert not u.storage().is_owning
    del t
    gc.collect(0)
    assert u.tolist() == [0, 1, 2, 3, 4]


def test_capsule_keeps_the_tensor_alive(device):
    t = st.arange(4, dtype=st.int32, device=device)
    capsule = t.__dlpack__(max_version=(1, 0))
    ptr = t.data_ptr()
    del t
    gc.collect(0)
    u = st.from_dlpack(capsule)
    assert u.data_ptr() == ptr and u.tolist() == [0, 1, 2, 3]


def test_unconsumed_capsule_frees_its_tensor(device):
    import slimtensor as s2

    before = s2.memory_stats(device)["live_storages"]
    t = st.zeros(100, device=device)
    c1, c2 = t.__dlpack__(), t.__dlpack__(max_version=(1, 0))
    del t
    gc.collect(0)
    assert s2.memory_stats(device)["live_storages"] == before + 1
    del c1, c2
    gc.collect(0)
    assert s2.memory_stats(device)["live_storages"] == before


def test_numpy_from_dlpack():
    t = st.arange(12, dtype=st.float32).reshape(3, 4)[:, 1:]
    a = np.from_dlpack(t)
    assert a.ctypes.data == t.data_ptr()
    np.testing.assert_array_equal(a, np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1:])
    b = np.arange(10.0).reshape(2, 5)[:, ::2]
    u = st.from_dlpack(b)
    assert u.data_ptr() == b.ctypes.data and u.stride() == (5, 2)
    np.testing.assert_array_equal(u.numpy(), b)


def test_numpy_legacy_capsule():
    a = np.arange(6, dtype=np.int32)
    u = st.from_dlpack(a.__dlpack__())
    assert u.data_ptr() == a.ctypes.data and u.tolist() == list(range(6))


@pytest.mark.needs_torch
@pytest.mark.parametrize(
    "name",
    [
        "float32",
        "float64",
        "float16",
        "bfloat16",
        "int8",
        "uint8",
        "int16",
        "int32",
        "int64",
        "bool",
        "complex64",
        "complex128",
        "uint16",
        "uint32",
        "uint64",
    ],
)
def test_torch_both_ways(torch, name):
    tt = torch.arange(24).reshape(2, 3, 4).to(getattr(torch, name)).permute(2, 0, 1)[1:]
    s = st.from_dlpack(tt)
    assert s.dtype is getattr(st, name)
    assert s.shape == tuple(tt.shape) and s.stride() == tt.stride()
    assert s.data_ptr() == tt.data_ptr()
    back = torch.from_dlpack(s)
    assert back.dtype == tt.dtype and back.stride() == tt.stride() and back.data_ptr() == tt.data_ptr()
    assert torch.equal(back, tt)


@pytest.mark.needs_torch
@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_torch_float8(torch, name):
    tt = torch.arange(6, dtype=torch.float32).to(getattr(torch, name))
    try:
        s = st.from_dlpack(tt)
    except Exception:  # noqa: BLE001
        pytest.skip(f"torch {torch.__version__} does not export {name} over DLPack")
    assert s.dtype is getattr(st, name)
    np.testing.assert_array_equal(s.view(st.uint8).numpy(), tt.view(torch.uint8).numpy())


def test_read_only_flag_both_ways():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = st.from_dlpack(a)  # numpy sets the read-only flag in a versioned capsule
    assert t.is_read_only
    ro = st.from_numpy(a)
    exported = np.from_dlpack(ro)
    assert not exported.flags.writeable
    with pytest.raises(BufferError) as info:
        ro.__dlpack__()  # a legacy capsule cannot say read-only
    assert "__dlpack__()" in str(info.value) and "read-only" in str(info.value)
    u = st.from_dlpack(ro.__dlpack__(copy=True))  # a writable copy can go legacy
    assert not u.is_read_only and u.data_ptr() != ro.data_ptr()


def test_dl_device_and_copy(device):
    t = st.arange(4, device=device)
    here = DL_DEVICE[device]
    same = st.from_dlpack(t.__dlpack__(max_version=(1, 0), dl_device=here))
    assert same.data_ptr() == t.data_ptr()
    same2 = st.from_dlpack(t.__dlpack__(max_version=(1, 0), dl_device=here, copy=False))
    assert same2.data_ptr() == t.data_ptr()
    copied = st.from_dlpack(t.__dlpack__(max_version=(1, 0), copy=True))
    assert copied.data_ptr() != t.data_ptr() and copied.tolist() == [0, 1, 2, 3]
    assert copied.device == t.device
    with pytest.raises(BufferError) as info:
        t.__dlpack__(max_version=(1, 0), dl_device=(4, 0))  # kDLOpenCL: no device of ours
    assert "__dlpack__()" in str(info.value)


def test_copied_flag_is_set(device):
    t = st.arange(4, device=device)
    capsule = t.__dlpack__(max_version=(1, 0), copy=True)
    m = DLManagedTensorVersioned.from_address(_PyCapsule_GetPointer(capsule, b"dltensor_versioned"))
    assert m.version.major == 1
    assert m.flags & FLAG_IS_COPIED
    assert not m.flags & FLAG_READ_ONLY
    plain = t.__dlpack__(max_version=(1, 0))
    m2 = DLManagedTensorVersioned.from_address(_PyCapsule_GetPointer(plain, b"dltensor_versioned"))
    assert m2.flags == 0
    assert m2.dl_tensor.data == t.data_ptr() and m2.dl_tensor.ndim == 1 and m2.dl_tensor.shape[0] == 4


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("versioned", [False, True])
def test_exported_capsule_describes_the_view(path, versioned, device):
    t = st.arange(30, dtype=st.int16, device=device).reshape(5, 6)[1:, 2::3]
    delete = None
    if path == "python":
        capsule = t.__dlpack__(max_version=(1, 1)) if versioned else t.__dlpack__()
        cls, name = (
            (DLManagedTensorVersioned, b"dltensor_versioned") if versioned else (DLManagedTensor, b"dltensor")
        )
        m = cls.from_address(_PyCapsule_GetPointer(capsule, name))
    else:
        m, delete = bridge_export(t, versioned)
    if versioned:
        assert (m.version.major, m.version.minor) == (1, 1) and m.flags == 0
    dl = m.dl_tensor
    # CPU and CUDA (addressable): the address of element 0 (as torch expects)
    assert dl.byte_offset == 0 and dl.data == t.data_ptr()
    assert (dl.device.device_type, dl.device.device_id) == DL_DEVICE[device]
    assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (0, 16, 1)
    assert (
        dl.ndim == 2
        and [dl.shape[i] for i in range(2)] == [4, 2]
        and [dl.strides[i] for i in range(2)] == [6, 3]
    )
    assert dl.data + dl.byte_offset == t.data_ptr()
    if delete is not None:
        delete()


@pytest.mark.parametrize("path", PATHS)
def test_export_refuses_what_dlpack_cannot_say(path):
    c32 = st.zeros(3, dtype=st.complex32)
    ro_array = np.zeros(3, np.float32)
    ro_array.flags.writeable = False
    ro = st.from_numpy(ro_array)
    if path == "python":
        with raises_named(BufferError, "__dlpack__()", "complex32", "DLPack"):
            c32.__dlpack__(max_version=(1, 1))
        with raises_named(BufferError, "__dlpack__()", "read-only"):
            ro.__dlpack__()
        return
    with pytest.raises(RuntimeError, match="complex32 has no DLPack type code"):
        bridge_export(c32, True)
    with pytest.raises(RuntimeError, match="read-only"):
        bridge_export(ro, False)
    m, delete = bridge_export(ro, True)
    assert m.flags & FLAG_READ_ONLY
    delete()


# --- hand-made capsules ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("versioned", [False, True])
def test_byte_offset_is_honoured(versioned, path):
    a = np.arange(16, dtype=np.float32)
    h = HandMade(a, (2, 3), (4, 1), byte_offset=8, versioned=versioned)
    t = import_capsule(path, h.capsule)
    assert t.data_ptr() == a.ctypes.data + 8
    assert t.tolist() == [[2, 3, 4], [6, 7, 8]]
    assert h.capsule_name() == ("used_dltensor_versioned" if versioned else "used_dltensor")
    assert h.calls == 0
    v = t[1:]
    del t
    gc.collect(0)
    assert h.calls == 0  # the view still holds the memory
    del v
    gc.collect(0)
    assert h.calls == 1


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("versioned", [False, True])
def test_null_strides_mean_contiguous(versioned, path):
    a = np.arange(24, dtype=np.int64)
    h = HandMade(a, (2, 3, 4), None, dtype=(0, 64, 1), versioned=versioned)
    t = import_capsule(path, h.capsule)
    assert t.stride() == (12, 4, 1) and t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), a.reshape(2, 3, 4))
    del t
    gc.collect(0)
    assert h.calls == 1


@pytest.mark.parametrize("path", PATHS)
def test_size_zero_with_null_data(path):
    h = HandMade(None, (0, 5), None, data=None)
    t = import_capsule(path, h.capsule)
    assert t.shape == (0, 5) and t.numel() == 0
    del t
    gc.collect(0)
    assert h.calls == 1


@pytest.mark.parametrize("path", PATHS)
def test_0d_capsule(path):
    a = np.array([3.5], np.float64)
    h = HandMade(a, (), None, dtype=(2, 64, 1), versioned=True)
    t = import_capsule(path, h.capsule)
    assert t.shape == () and t.item() == 3.5
    del t
    gc.collect(0)
    assert h.calls == 1


@pytest.mark.parametrize("path", PATHS)
def test_versioned_read_only_flag_import(path):
    a = np.arange(4, dtype=np.float32)
    h = HandMade(a, (4,), versioned=True, flags=FLAG_READ_ONLY)
    t = import_capsule(path, h.capsule)
    assert t.is_read_only
    with pytest.raises(RuntimeError):
        t.fill_(1.0)
    del t
    gc.collect(0)
    assert h.calls == 1


@pytest.mark.parametrize(
    "dtype,name",
    [
        ((0, 8, 1), "int8"),
        ((1, 16, 1), "uint16"),
        ((2, 16, 1), "float16"),
        ((4, 16, 1), "bfloat16"),
        ((5, 64, 1), "complex64"),
        ((6, 8, 1), "bool"),
        ((10, 8, 1), "float8_e4m3fn"),
        ((12, 8, 1), "float8_e5m2"),
    ],
)
@pytest.mark.parametrize("path", PATHS)
def test_dtype_codes(dtype, name, path):
    a = np.zeros(16, np.uint8)
    h = HandMade(a, (2,), None, dtype=dtype)
    t = import_capsule(path, h.capsule)
    assert t.dtype is getattr(st, name)
    del t
    gc.collect(0)
    assert h.calls == 1


def _refused(h, exc, *words, path="python"):
    if path == "python":
        with raises_named(exc, "from_dlpack()", *words):
            st.from_dlpack(h.capsule)
        gc.collect(0)
        assert h.calls == 0, "a refused capsule still belongs to its producer: no deleter call"
        assert h.capsule_name() in ("dltensor", "dltensor_versioned"), (
            "a refused capsule must not be marked used"
        )
        return
    # The C bridge always takes the managed tensor: on a refusal it has called the deleter, once.
    from slimtensor.aoti import _lib

    with pytest.raises(_lib.BridgeError) as info:
        import_capsule(path, h.capsule)
    message = str(info.value)
    assert message.startswith("slimtensor_aoti_handle_from_dlpack"), message
    assert all(w.lower() in message.lower() for w in words), (words, message)
    gc.collect(0)
    assert h.calls == 1


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [(2, 32, 4), (2, 8, 1), (3, 64, 1), (99, 32, 1), (0, 7, 1), (2, 128, 1)])
def test_unsupported_dtype_refused(dtype, path):
    _refused(HandMade(np.zeros(64, np.uint8), (2,), dtype=dtype), TypeError, "dtype", path=path)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("device", [(2, 0), (999, 0), (4, 0)])
def test_unsupported_device_refused(device, path):
    registered = {d.name for d in st.devices() if d.available}
    if device[0] == 2 and "cuda" in registered:
        pytest.skip("a CUDA device is available")
    if device[0] == 2 and path == "python" and any(d.name == "cuda" for d in st.devices()):
        # slimtensor-cuda installed on a machine without a GPU: refused with the plugin's reason
        h = HandMade(np.zeros(8, np.float32), (2,), device=device)
        with pytest.raises(RuntimeError, match="unavailable"):
            st.from_dlpack(h.capsule)
        gc.collect(0)
        assert h.calls == 0, "a refused capsule still belongs to its producer: no deleter call"
        return
    _refused(HandMade(np.zeros(8, np.float32), (2,), device=device), BufferError, "device", path=path)


@pytest.mark.parametrize(
    "shape,strides,ndim",
    [
        ((-1,), None, None),
        ((2, -3), None, None),
        ((2**40, 2**40), None, None),
        ((2**62,), None, None),
        ((4,), (-1,), None),
        ((3, 2), (2**62, 1), None),
        ((2,), None, -1),
        ((2,), None, 65),
    ],
    ids=[
        "negative",
        "negative2",
        "numel-overflow",
        "bytes-overflow",
        "negative-stride",
        "extent-overflow",
        "ndim<0",
        "ndim>64",
    ],
)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("versioned", [False, True])
def test_absurd_shapes_refused(shape, strides, ndim, versioned, path):
    shp = shape if ndim is None or ndim < 0 else shape * ndim
    h = HandMade(np.zeros(64, np.float32), shp, strides, versioned=versioned, ndim=ndim)
    _refused(h, ValueError, path=path)


@pytest.mark.parametrize("path", PATHS)
def test_null_data_with_elements_refused(path):
    _refused(HandMade(None, (3,), data=None), ValueError, "null", path=path)


@pytest.mark.parametrize("path", PATHS)
def test_unknown_major_version_refused(path):
    _refused(
        HandMade(np.zeros(4, np.float32), (2,), versioned=True, version=(2, 0)),
        BufferError,
        "version",
        path=path,
    )


def test_consumed_capsule_refused():
    a = np.arange(4, dtype=np.float32)
    h = HandMade(a, (4,))
    t = st.from_dlpack(h.capsule)
    with raises_named(ValueError, "from_dlpack()", "already consumed"):
        st.from_dlpack(h.capsule)
    del t
    gc.collect(0)
    assert h.calls == 1
    capsule = st.arange(3).__dlpack__(max_version=(1, 0))
    st.from_dlpack(capsule)
    with raises_named(ValueError, "from_dlpack()", "consumed"):
        st.from_dlpack(capsule)


def test_foreign_capsule_and_non_producers_refused():
    foreign = _PyCapsule_New(ctypes.addressof(ctypes.c_int(0)), b"something_else", None)
    with raises_named(TypeError, "from_dlpack()"):
        st.from_dlpack(foreign)
    with raises_named(TypeError, "from_dlpack()"):
        st.from_dlpack([1, 2, 3])


def test_legacy_producer_without_max_version():
    class Old:
        def __init__(self):
            self.a = np.arange(3, dtype=np.int64)

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    assert st.from_dlpack(Old()).tolist() == [0, 1, 2]


def test_bfloat16_reaches_numpy_through_numpy_not_dlpack():
    t = st.full((3,), 1.5, dtype=st.bfloat16)
    n = t.numpy()
    assert n.dtype == np.dtype(ml_dtypes.bfloat16) and n.astype(np.float32).tolist() == [1.5] * 3


def test_misbehaving_producers():
    class ReturnsInt:
        def __dlpack__(self, **kw):
            return 42

        def __dlpack_device__(self):
            return (1, 0)

    class Refuses:
        def __dlpack__(self, **kw):
            raise BufferError("no export today")

        def __dlpack_device__(self):
            return (1, 0)

    with raises_named(TypeError, "from_dlpack()"):
        st.from_dlpack(ReturnsInt())
    with pytest.raises(BufferError, match="no export today"):
        st.from_dlpack(Refuses())


NULL_SHAPE = """
import sys
sys.path.insert(0, {root!r})
import numpy as np, slimtensor as st
from tests.core.test_dlpack import HandMade
a = np.zeros(8, np.float32)
for versioned in (False, True):
    h = HandMade(a, (2,), None, versioned=versioned)
    h.managed.dl_tensor.shape = None
    try:
        st.from_dlpack(h.capsule)
        print("accepted")
    except ValueError as exc:
        print("refused", "from_dlpack()" in str(exc), h.calls, h.capsule_name())
"""


def test_null_shape_pointer_refused():
    # got: the process dies with SIGSEGV (rc -11): import_managed() reads dl.shape[d] without a null check
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run(
        [sys.executable, "-c", NULL_SHAPE.format(root=root)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"rc {proc.returncode}: {proc.stderr[-500:]}"
    assert proc.stdout.split("\n")[:2] == ["refused True 0 dltensor", "refused True 0 dltensor_versioned"]


@pytest.mark.parametrize("path", PATHS)
def test_0d_capsule_with_null_shape(path):
    a = np.array([2.5], np.float32)
    h = HandMade(a, (), None)
    h.managed.dl_tensor.shape = None
    t = import_capsule(path, h.capsule)
    assert t.shape == () and t.item() == 2.5
    del t
    gc.collect(0)
    assert h.calls == 1


@pytest.mark.parametrize("path", PATHS)
def test_cuda_host_memory_imports_as_cpu(path):
    a = np.arange(4, dtype=np.float32)
    h = HandMade(a, (4,), device=(3, 0))  # kDLCUDAHost: pinned host memory the CPU can read
    t = import_capsule(path, h.capsule)
    assert t.device == st.Device("cpu") and t.tolist() == [0, 1, 2, 3]
    del t
    gc.collect(0)
    assert h.calls == 1


# --- interop regressions (issues 13 and 14) ----------------------------------------------------------------


class LegacyOnly:
    """A producer that only makes legacy capsules (as jax does), over a numpy array's memory."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return np.asarray(self.array).__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def test_legacy_capsule_of_an_unknown_producer_imports_read_only():
    # got: writable, and a write changed an immutable (jax) array
    a = np.arange(4, dtype=np.float32)
    t = st.from_dlpack(LegacyOnly(a))
    assert t.is_read_only and t.tolist() == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="read-only"):
        t.fill_(7)
    assert a.tolist() == [0, 1, 2, 3]
    assert st.from_dlpack(a.__dlpack__()).is_read_only  # a bare legacy capsule: producer unknown


class LegacyArray(np.ndarray):
    """A numpy array (subclass) that exports legacy capsules only (of its writable base's memory, so that
    numpy itself does not refuse when this view is read-only)."""

    def __dlpack__(self, stream=None):
        return np.asarray(self.base).__dlpack__()


def test_legacy_capsule_of_a_known_writable_producer_imports_writable():
    a = np.arange(4, dtype=np.float32).view(LegacyArray)
    t = st.from_dlpack(a)
    assert not t.is_read_only
    t.fill_(2)
    assert np.asarray(a).tolist() == [2, 2, 2, 2]
    a.flags.writeable = False
    assert st.from_dlpack(a).is_read_only  # numpy's writeable flag decides
    own = st.arange(3)
    assert not st.from_dlpack(own.__dlpack__()).is_read_only  # slimtensor's own legacy capsule


@pytest.mark.needs_torch
def test_legacy_capsule_of_torch_imports_writable(torch):
    class LegacyTorch(torch.Tensor):
        def __dlpack__(self, stream=None):
            return torch.Tensor.__dlpack__(self.as_subclass(torch.Tensor))

    tt = torch.arange(4, dtype=torch.float32).as_subclass(LegacyTorch)
    t = st.from_dlpack(tt)
    assert not t.is_read_only and t.data_ptr() == tt.data_ptr()


def test_legacy_export_of_read_only_gives_a_fix_the_user_can_apply():
    # got: "ask for max_version=(1, 0)", which a jax or torch user cannot change
    a = np.arange(3.0)
    a.flags.writeable = False
    ro = st.from_numpy(a)
    with raises_named(
        BufferError, "__dlpack__()", "read-only", re.escape("t.clone()"), re.escape("np.asarray(t)")
    ) as info:
        ro.__dlpack__()
    assert "max_version" not in str(info.value)


def test_from_dlpack_falls_back_to_the_buffer_protocol():
    # got: TypeError for a bytearray
    b = bytearray(b"\x01\x02\x03")
    t = st.from_dlpack(b)
    assert t.dtype is st.uint8 and t.tolist() == [1, 2, 3] and not t.is_read_only
    t.fill_(9)
    assert b == bytearray(b"\x09\x09\x09")
    assert st.from_dlpack(b"ab").is_read_only
    assert st.from_dlpack(memoryview(b"xyz")).tolist() == [120, 121, 122]
    with raises_named(TypeError, "from_dlpack()", "buffer"):
        st.from_dlpack(3.5)


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn"])
def test_numpy_from_dlpack_of_a_dtype_numpy_lacks_says_what_works(name):
    # got: numpy's "Unsupported dtype in DLTensor"
    t = st.zeros(3, dtype=getattr(st, name))
    with pytest.raises(BufferError) as info:
        np.from_dlpack(t)
    msg = str(info.value)
    assert "t.numpy()" in msg and "np.asarray(t)" in msg and name in msg
    assert np.asarray(t).dtype == np.dtype(getattr(ml_dtypes, name))
    # other consumers still get the capsule
    assert st.from_dlpack(t.__dlpack__(max_version=(1, 0))).dtype is t.dtype
    assert "versioned" in repr(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))


@pytest.mark.needs_torch
def test_torch_takes_bfloat16_over_dlpack(torch):
    t = st.full((3,), 1.5, dtype=st.bfloat16)
    tt = torch.from_dlpack(t)
    assert tt.dtype == torch.bfloat16 and tt.tolist() == [1.5] * 3


@pytest.mark.parametrize("result", [42, None, "capsule", object()])
def test_dlpack_returning_a_non_capsule_names_the_producer(result):
    # got: "expected a capsule named 'dltensor' or 'dltensor_versioned' but got ''"
    class BrokenProducer:
        def __dlpack__(self, **kw):
            return result

        def __dlpack_device__(self):
            return (1, 0)

    with raises_named(
        TypeError,
        "from_dlpack()",
        re.escape("BrokenProducer.__dlpack__() returned"),
        type(result).__name__,
        "not a DLPack capsule",
    ):
        st.from_dlpack(BrokenProducer())


def test_an_attribute_error_inside_dlpack_is_not_mistaken_for_no_dlpack():
    class Raises:
        def __dlpack__(self, **kw):
            raise AttributeError("inner bug")

    with pytest.raises(AttributeError, match="inner bug"):
        st.from_dlpack(Raises())


# --- streams and arguments ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [0, 1, 2, -1, 12345])
def test_cpu_export_takes_no_stream(stream):
    # got: any stream was silently ignored
    with raises_named(ValueError, "__dlpack__()", "stream must be None"):
        st.arange(3).__dlpack__(stream=stream)
    st.arange(3).__dlpack__(stream=None)


def test_dlpack_arguments_are_keyword_only_and_checked():
    t = st.arange(3)
    with pytest.raises(TypeError, match="keyword"):
        t.__dlpack__(None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'strem'"):
        t.__dlpack__(strem=None)
    with raises_named(TypeError, "__dlpack__()", "max_version"):
        t.__dlpack__(max_version="1.0")
    with raises_named(TypeError, "__dlpack__()", "copy"):
        t.__dlpack__(max_version=(1, 0), copy="yes")
    with raises_named(BufferError, "__dlpack__()", "copy=False"):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0), copy=False)


# --- device tensors (the hostdev test plugin: opaque handles, worker-thread streams) -----------------------


def _hostdev():
    devices = {d.name: d for d in st.devices()}
    if "hostdev" not in devices or not devices["hostdev"].available:
        pytest.skip("the hostdev test plugin is not installed")


@pytest.mark.parametrize("path", PATHS)
def test_device_round_trip_passes_handle_and_byte_offset(path):
    _hostdev()
    t = st.arange(30, dtype=st.float32).to("hostdev:0").reshape(5, 6)[1:, 2::3]
    capsule = t.__dlpack__(max_version=(1, 1))
    m = DLManagedTensorVersioned.from_address(_PyCapsule_GetPointer(capsule, b"dltensor_versioned"))
    ref_offset = 8 * 4  # element 8 of the allocation
    assert m.dl_tensor.byte_offset == ref_offset  # an opaque handle: the offset travels beside it
    assert m.dl_tensor.device.device_type == t.__dlpack_device__()[0]
    u = import_capsule(path, capsule)
    assert str(u.device) == str(t.device) and u.shape == t.shape and u.stride() == t.stride()
    np.testing.assert_array_equal(u.cpu().numpy(), np.arange(30, dtype=np.float32).reshape(5, 6)[1:, 2::3])
    u2 = st.from_dlpack(t)  # a producer object: slimtensor passes its own current stream
    np.testing.assert_array_equal(u2.cpu().numpy(), u.cpu().numpy())


@pytest.mark.parametrize("path", PATHS)
def test_device_import_refuses_a_misaligned_byte_offset(path):
    # Note [Device element alignment]: a float32 2 bytes into a device allocation would fault a GPU kernel.
    _hostdev()
    t = st.arange(8, dtype=st.float32).to("hostdev:0")
    capsule = t.__dlpack__(max_version=(1, 1))
    m = DLManagedTensorVersioned.from_address(_PyCapsule_GetPointer(capsule, b"dltensor_versioned"))
    m.dl_tensor.byte_offset += 2
    m.dl_tensor.shape[0] = 4
    from slimtensor.aoti import _lib

    refusal = ValueError if path == "python" else _lib.BridgeError  # the C bridge: an error code and message
    with pytest.raises(refusal, match=r"element 0 of this float32 view .* not a multiple of 4 bytes"):
        import_capsule(path, capsule)
    aligned = t.__dlpack__(max_version=(1, 1))
    m = DLManagedTensorVersioned.from_address(_PyCapsule_GetPointer(aligned, b"dltensor_versioned"))
    m.dl_tensor.byte_offset += 4
    m.dl_tensor.shape[0] = 4
    assert import_capsule(path, aligned).cpu().tolist() == [1.0, 2.0, 3.0, 4.0]


def test_device_stream_rules():
    _hostdev()
    t = st.zeros(4, device="hostdev:0")
    with raises_named(ValueError, "__dlpack__()", "stream=0"):
        t.__dlpack__(max_version=(1, 1), stream=0)
    with raises_named(ValueError, "__dlpack__()", "stream must be"):
        t.__dlpack__(max_version=(1, 1), stream=-5)
    for stream in (None, -1, 1, 2):
        st.from_dlpack(t.__dlpack__(max_version=(1, 1), stream=stream))

"""DLPack both ways: versioned (1.x) and legacy capsules, max_version, dl_device, copy, read-only flag,
byte_offset, size-0 tensors, null strides, consumed capsules, refusals (device, dtype, absurd shapes), and the
producer's deleter being called exactly once. Hand-made capsules come from ctypes."""

from __future__ import annotations

import ctypes
import gc

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


# --- export and round trips ------------------------------------------------------------------------------


def test_capsule_kinds():
    t = st.arange(6).reshape(2, 3)
    assert "dltensor" in repr(t.__dlpack__()) and "versioned" not in repr(t.__dlpack__())
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 5)))
    assert "versioned" not in repr(t.__dlpack__(max_version=(0, 8)))
    assert t.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("max_version", [None, (0, 8), (1, 0), (1, 1), (2, 0)])
@pytest.mark.parametrize(
    "make",
    [
        lambda: st.arange(12, dtype=st.float32).reshape(3, 4),
        lambda: st.arange(12, dtype=st.int16).reshape(3, 4).t(),
        lambda: st.arange(30, dtype=st.float64).reshape(5, 6)[1:, ::2],
        lambda: st.zeros(0, 3),
        lambda: st.full((), 4, dtype=st.uint8),
        lambda: st.arange(3).expand(2, 3),
        lambda: st.arange(40)[5:],
    ],
    ids=["c", "t", "slice", "empty", "0d", "expand", "offset"],
)
def test_round_trip_shares_memory(make, max_version):
    t = make()
    capsule = t.__dlpack__() if max_version is None else t.__dlpack__(max_version=max_version)
    u = st.from_dlpack(capsule)
    assert u.shape == t.shape and u.dtype is t.dtype
    if t.numel():
        assert u.data_ptr() == t.data_ptr()
        assert [s for s, n in zip(u.stride(), u.shape, strict=False) if n > 1] == [
            s for s, n in zip(t.stride(), t.shape, strict=False) if n > 1
        ]
    np.testing.assert_array_equal(to_np(u), to_np(t))
    if t.numel() and not t._has_internal_overlap():
        u.fill_(7)
        assert to_np(t).min() == 7


def test_from_dlpack_of_a_producer_object():
    t = st.arange(5)
    u = st.from_dlpack(t)
    assert u.data_ptr() == t.data_ptr()
    assert u.storage().id != t.storage().id  # a borrowed storage that keeps the producer alive
    assert not u.storage().is_owning
    del t
    gc.collect(0)
    assert u.tolist() == [0, 1, 2, 3, 4]


def test_capsule_keeps_the_tensor_alive():
    t = st.arange(4, dtype=st.int32)
    capsule = t.__dlpack__(max_version=(1, 0))
    ptr = t.data_ptr()
    del t
    gc.collect(0)
    u = st.from_dlpack(capsule)
    assert u.data_ptr() == ptr and u.tolist() == [0, 1, 2, 3]


def test_unconsumed_capsule_frees_its_tensor():
    import slimtensor as s2

    before = s2.memory_stats("cpu")["live_storages"]
    t = st.zeros(100)
    c1, c2 = t.__dlpack__(), t.__dlpack__(max_version=(1, 0))
    del t
    gc.collect(0)
    assert s2.memory_stats("cpu")["live_storages"] == before + 1
    del c1, c2
    gc.collect(0)
    assert s2.memory_stats("cpu")["live_storages"] == before


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


def test_dl_device_and_copy():
    t = st.arange(4)
    same = st.from_dlpack(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))
    assert same.data_ptr() == t.data_ptr()
    same2 = st.from_dlpack(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False))
    assert same2.data_ptr() == t.data_ptr()
    copied = st.from_dlpack(t.__dlpack__(max_version=(1, 0), copy=True))
    assert copied.data_ptr() != t.data_ptr() and copied.tolist() == [0, 1, 2, 3]
    with pytest.raises(BufferError) as info:
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    assert "__dlpack__()" in str(info.value)


def test_copied_flag_is_set():
    t = st.arange(4)
    capsule = t.__dlpack__(max_version=(1, 0), copy=True)
    m = DLManagedTensorVersioned.from_address(_PyCapsule_GetPointer(capsule, b"dltensor_versioned"))
    assert m.version.major == 1
    assert m.flags & FLAG_IS_COPIED
    assert not m.flags & FLAG_READ_ONLY
    plain = t.__dlpack__(max_version=(1, 0))
    m2 = DLManagedTensorVersioned.from_address(_PyCapsule_GetPointer(plain, b"dltensor_versioned"))
    assert m2.flags == 0
    assert m2.dl_tensor.data == t.data_ptr() and m2.dl_tensor.ndim == 1 and m2.dl_tensor.shape[0] == 4


def test_exported_capsule_describes_the_view():
    t = st.arange(30, dtype=st.int16).reshape(5, 6)[1:, 2::3]
    capsule = t.__dlpack__()
    m = DLManagedTensor.from_address(_PyCapsule_GetPointer(capsule, b"dltensor"))
    dl = m.dl_tensor
    assert (dl.device.device_type, dl.device.device_id) == (1, 0)
    assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (0, 16, 1)
    assert (
        dl.ndim == 2
        and [dl.shape[i] for i in range(2)] == [4, 2]
        and [dl.strides[i] for i in range(2)] == [6, 3]
    )
    assert dl.data + dl.byte_offset == t.data_ptr()


# --- hand-made capsules ----------------------------------------------------------------------------------


@pytest.mark.parametrize("versioned", [False, True])
def test_byte_offset_is_honoured(versioned):
    a = np.arange(16, dtype=np.float32)
    h = HandMade(a, (2, 3), (4, 1), byte_offset=8, versioned=versioned)
    t = st.from_dlpack(h.capsule)
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


@pytest.mark.parametrize("versioned", [False, True])
def test_null_strides_mean_contiguous(versioned):
    a = np.arange(24, dtype=np.int64)
    h = HandMade(a, (2, 3, 4), None, dtype=(0, 64, 1), versioned=versioned)
    t = st.from_dlpack(h.capsule)
    assert t.stride() == (12, 4, 1) and t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), a.reshape(2, 3, 4))
    del t
    gc.collect(0)
    assert h.calls == 1


def test_size_zero_with_null_data():
    h = HandMade(None, (0, 5), None, data=None)
    t = st.from_dlpack(h.capsule)
    assert t.shape == (0, 5) and t.numel() == 0
    del t
    gc.collect(0)
    assert h.calls == 1


def test_0d_capsule():
    a = np.array([3.5], np.float64)
    h = HandMade(a, (), None, dtype=(2, 64, 1), versioned=True)
    t = st.from_dlpack(h.capsule)
    assert t.shape == () and t.item() == 3.5
    del t
    gc.collect(0)
    assert h.calls == 1


def test_versioned_read_only_flag_import():
    a = np.arange(4, dtype=np.float32)
    h = HandMade(a, (4,), versioned=True, flags=FLAG_READ_ONLY)
    t = st.from_dlpack(h.capsule)
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
def test_dtype_codes(dtype, name):
    a = np.zeros(16, np.uint8)
    h = HandMade(a, (2,), None, dtype=dtype)
    t = st.from_dlpack(h.capsule)
    assert t.dtype is getattr(st, name)
    del t
    gc.collect(0)
    assert h.calls == 1


def _refused(h, exc, *words):
    with raises_named(exc, "from_dlpack()", *words):
        st.from_dlpack(h.capsule)
    gc.collect(0)
    assert h.calls == 0, "a refused capsule still belongs to its producer: no deleter call"
    assert h.capsule_name() in ("dltensor", "dltensor_versioned"), "a refused capsule must not be marked used"


@pytest.mark.parametrize("dtype", [(2, 32, 4), (2, 8, 1), (3, 64, 1), (99, 32, 1), (0, 7, 1), (2, 128, 1)])
def test_unsupported_dtype_refused(dtype):
    _refused(HandMade(np.zeros(64, np.uint8), (2,), dtype=dtype), TypeError, "dtype")


@pytest.mark.parametrize("device", [(2, 0), (999, 0), (4, 0)])
def test_unsupported_device_refused(device):
    cuda = next((d for d in st.devices() if d.name == "cuda"), None)
    if device[0] == 2 and cuda is not None:
        if cuda.available:
            pytest.skip("a CUDA device is usable here")
        # The CUDA plugin without a GPU: registered but unavailable, refused with its reason, capsule untouched.
        h = HandMade(np.zeros(8, np.float32), (2,), device=device)
        with pytest.raises(RuntimeError, match="registered but unavailable"):
            st.from_dlpack(h.capsule)
        gc.collect(0)
        assert h.calls == 0 and h.capsule_name() in ("dltensor", "dltensor_versioned")
        return
    _refused(HandMade(np.zeros(8, np.float32), (2,), device=device), BufferError, "device")


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
@pytest.mark.parametrize("versioned", [False, True])
def test_absurd_shapes_refused(shape, strides, ndim, versioned):
    shp = shape if ndim is None or ndim < 0 else shape * ndim
    h = HandMade(np.zeros(64, np.float32), shp, strides, versioned=versioned, ndim=ndim)
    _refused(h, ValueError)


def test_null_data_with_elements_refused():
    _refused(HandMade(None, (3,), data=None), ValueError, "null")


def test_unknown_major_version_refused():
    _refused(HandMade(np.zeros(4, np.float32), (2,), versioned=True, version=(2, 0)), BufferError, "version")


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


def test_0d_capsule_with_null_shape():
    a = np.array([2.5], np.float32)
    h = HandMade(a, (), None)
    h.managed.dl_tensor.shape = None
    t = st.from_dlpack(h.capsule)
    assert t.shape == () and t.item() == 2.5
    del t
    gc.collect(0)
    assert h.calls == 1


def test_cuda_host_memory_imports_as_cpu():
    a = np.arange(4, dtype=np.float32)
    h = HandMade(a, (4,), device=(3, 0))  # kDLCUDAHost: pinned host memory the CPU can read
    t = st.from_dlpack(h.capsule)
    assert t.device == st.Device("cpu") and t.tolist() == [0, 1, 2, 3]
    del t
    gc.collect(0)
    assert h.calls == 1

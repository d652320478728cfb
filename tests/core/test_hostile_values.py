"""Hostile values from Python that crashed or gave undefined behaviour (issue 14): each is an error now."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import slimtensor as st


class IndexRaises:
    def __index__(self):
        raise ZeroDivisionError("boom")


@pytest.mark.parametrize(
    "call",
    [
        lambda v: st.zeros(4).fill_(v),
        lambda v: st.full((2,), v),
        lambda v: st.zeros(2, dtype=st.int64).fill_(v),
    ],
    ids=["fill_", "full", "fill_int64"],
)
@pytest.mark.parametrize(
    "value",
    [np.array([1, 2]), np.zeros((2, 2), np.int64), IndexRaises()],
    ids=["array2", "array2x2", "index_raises"],
)
def test_values_whose_index_raises_are_type_errors(call, value):
    """A NULL from PyNumber_Index was used unchecked: SIGSEGV (test_index_raising_value_does_not_crash_a_child)."""
    with pytest.raises(TypeError, match=r"expected a number .* whose __index__ raised"):
        call(value)


def test_index_raising_value_does_not_crash_a_child():
    """The same in a fresh process, where the crash was a SIGSEGV (the return code proves it is gone)."""
    code = textwrap.dedent("""
        import numpy as np, slimtensor as st
        for f in (lambda: st.zeros(4).fill_(np.array([1, 2])), lambda: st.full((2,), np.array([1, 2]))):
            try:
                f()
            except TypeError as e:
                print("ok", e)
        """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.count("ok") == 2, r.stdout


def test_one_element_arrays_still_fill():
    t = st.zeros(3).fill_(np.array([5]))
    assert t.tolist() == [5.0, 5.0, 5.0]
    assert st.full((2,), np.int64(7), dtype=st.int64).tolist() == [7, 7]


@pytest.mark.parametrize("v", [float("nan"), float("inf"), -float("inf"), 1e300, -1e300, 2.0**63])
def test_non_finite_and_huge_floats_fill_floats_and_refuse_ints(v):
    """Scalar::from_double cast them to int64 (undefined behaviour; UBSan float-cast-overflow)."""
    t = st.zeros(2, dtype=st.float64).fill_(v)
    np.testing.assert_array_equal(t.numpy(), np.full(2, v))
    c = st.zeros(1, dtype=st.complex128).fill_(complex(v, 1))
    assert c.numpy()[0].imag == 1
    if v == v and abs(v) != float("inf") and abs(v) < 2.0**63:
        return
    with pytest.raises(RuntimeError, match="cannot be converted"):
        st.zeros(2, dtype=st.int64).fill_(v)


def test_narrow_with_a_huge_length_is_an_index_error():
    """start + length overflowed int64 (and the error spoke of byte sizes)."""
    with pytest.raises(
        IndexError, match=r"narrow\(\): start \(2\) \+ length \(9223372036854775807\) exceeds"
    ):
        st.zeros(4).narrow(0, 2, 2**63 - 1)
    with pytest.raises(IndexError, match="exceeds dimension size"):
        st.zeros(4).narrow(0, -2, 2**63 - 1)


def test_an_empty_slice_past_a_huge_stride_is_empty_not_refused():
    """start * stride overflowed int64 for an empty result (a size-1 dim of stride 2**63-1, sliced at its end):
    the offset wrapped negative and the view was refused, where numpy gives an empty view (found by the views
    fuzzer). An empty view keeps its base's offset; an ordinary empty slice still advances it, as torch's."""
    t = st.asarray(np.zeros(16, np.bool_))[3:][:: 2**63 - 1]
    assert tuple(t.shape) == (1,) and t.storage_offset() == 3
    for u in (t[1:], t[5:9], t.narrow(0, 1, 0), t.narrow(0, -0, 0)[1:]):
        assert tuple(u.shape) == (0,) and u.storage_offset() == 3
    assert st.asarray(np.zeros(4))[1:3][2:].storage_offset() == 3


def test_most_negative_size_is_a_value_error():
    with pytest.raises(ValueError, match=r"sizes must be >= 0 but size\[0\] is -9223372036854775808"):
        st.empty(-(2**63))
    with pytest.raises(ValueError, match="sizes must be >= 0"):
        st.empty_strided((-(2**63),), (1,))


def test_buffer_export_of_a_huge_step_has_a_defined_stride():
    """stride * itemsize overflowed int64 for t[::2**63-1] (a size-1 dim): memoryview got stride -4."""
    t = st.arange(4, dtype=st.float32)[:: 2**63 - 1]
    m = memoryview(t)
    assert m.shape == (1,) and m.strides[0] >= 0
    assert np.asarray(m).tolist() == [0.0]


def test_from_blob_on_an_unregistered_device_is_refused():
    """It gave a 'cuda:0' tensor over host memory; a device must be registered and usable, as for empty()."""
    if any(d.startswith("cuda") for d in map(str, st.devices())):
        pytest.skip("a CUDA plugin is registered here")
    a = np.zeros(4, np.float32)
    with pytest.raises(RuntimeError, match="no device of type cuda(:0)? is registered") as e1:
        st.from_blob(a.ctypes.data, (4,), dtype=st.float32, device="cuda")
    with pytest.raises(RuntimeError, match="no device of type cuda(:0)? is registered"):
        st.empty(4, device="cuda")
    assert "install its plugin" in str(e1.value)


def test_copy_onto_own_transpose_says_exact_overlap():
    m = st.zeros((3, 3))
    with pytest.raises(RuntimeError, match=r"own memory in another layout \(as in m\.copy_\(m\.T\)\)"):
        m.copy_(m.T)
    a = st.arange(8, dtype=st.float32)
    with pytest.raises(RuntimeError, match="partially overlap"):
        a[1:].copy_(a[:-1])


def test_pickle_naming_an_unknown_dtype_is_a_value_error():
    t = st.arange(3, dtype=st.float32)
    fn, (data, shape, _, device) = t.__reduce__()
    for bad in ("float33", "to_numpy_dtype", 5):
        with pytest.raises(ValueError, match="cannot unpickle a tensor of dtype .* no such slimtensor dtype"):
            fn(data, shape, bad, device)
    assert fn(data, shape, "float32", device).tolist() == [0.0, 1.0, 2.0]


def test_from_blob_of_null_on_a_device_says_null():
    # Was "device index -1 is out of range": NULL is located nowhere, and refused as NULL (hostdev's
    # memory is handles; on an addressable device such as cuda the message says "data is NULL").
    if "hostdev" not in {d.name for d in st.devices() if d.available}:
        pytest.skip("the hostdev test plugin is not installed (make build-test)")
    with pytest.raises(
        ValueError, match=r"from_blob\(\): the device memory handle is NULL but the view has elements"
    ):
        st.from_blob(0, (4,), dtype=st.float32, device="hostdev")
    assert st.from_blob(0, (0,), dtype=st.float32, device="hostdev").numel() == 0

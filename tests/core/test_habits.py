"""Torch habits: dtype shorthands, .cuda(), *_like, st.tensor, st.Tensor(data), ==, hashing, no arithmetic."""

from __future__ import annotations

import collections
import gc
import operator

import numpy as np
import pytest
import slimtensor as st


@pytest.mark.parametrize(
    "method,dtype",
    [
        ("float", "float32"),
        ("double", "float64"),
        ("half", "float16"),
        ("bfloat16", "bfloat16"),
        ("int", "int32"),
        ("long", "int64"),
        ("short", "int16"),
        ("char", "int8"),
        ("byte", "uint8"),
        ("bool", "bool"),
        ("cfloat", "complex64"),
        ("cdouble", "complex128"),
    ],
)  # names, not dtype objects: parameters live until interpreter shutdown, after nanobind's leak check
def test_dtype_shorthands_convert_or_return_the_tensor_itself(method, dtype):
    t = st.arange(6).reshape(2, 3)
    converted = getattr(t, method)()
    assert converted.dtype == getattr(st, dtype) and converted.shape == (2, 3)
    expected = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(
        np.asarray(converted.tolist()), expected != 0 if method == "bool" else expected
    )
    assert getattr(converted, method)() is converted  # nothing to change: the tensor itself, as torch


def test_is_cuda_and_is_cpu():
    t = st.ones(2)
    assert t.is_cpu and not t.is_cuda


def test_cuda_without_a_cuda_device_names_the_call_and_the_fix():
    if any(d.name == "cuda" and d.available for d in st.devices()):
        pytest.skip("a CUDA device is available here")
    for call in (lambda t: t.cuda(), lambda t: t.to("cuda"), lambda t: t.to(device="cuda:0")):
        with pytest.raises((RuntimeError, ValueError)) as info:
            call(st.ones(2))
        message = str(info.value)
        assert "empty_strided" not in message, message
        # not registered: what to install; registered without a GPU: the plugin's reason
        assert "cuda" in message and ("slimtensor-cuda" in message or "unavailable" in message), message


def test_cuda_rejects_another_device_kind():
    with pytest.raises(ValueError, match=r"cuda\(\): expected a cuda device"):
        st.ones(2).cuda("cpu")


# --- comparisons and hashing ------------------------------------------------------------------------------


def test_equal_compares_shape_and_values():
    a, b = st.ones(2), st.ones(2)
    assert st.equal(a, b) and a.equal(b)
    assert not st.equal(a, st.zeros(2))
    assert not st.equal(a, st.ones(3))
    assert not st.equal(a, st.ones(2, 1))
    assert st.equal(st.arange(3), st.arange(3, dtype=st.float32))  # values, after promotion (as torch)
    nan = st.full((1,), float("nan"))
    assert not st.equal(nan, nan)  # NaN != NaN, as torch.equal
    assert st.equal(st.ones(2, dtype=st.bfloat16), st.ones(2))
    with pytest.raises(TypeError, match=r"equal\(\): b must be a slimtensor.Tensor, got list"):
        st.equal(a, [1, 1])


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_comparison_operators_raise_and_say_what_to_use(op):
    a, b = st.ones(2), st.ones(2)
    with pytest.raises(TypeError) as info:
        eval(f"a {op} b", {}, {"a": a, "b": b})
    message = str(info.value)
    assert "st.equal" in message and "is" in message and "np.asarray" in message
    with pytest.raises(TypeError):
        eval(f"a {op} 1")


def test_tensors_hash_by_identity():
    a, b = st.ones(2), st.ones(2)
    assert hash(a) == hash(a) and hash(a) != hash(b)
    assert {a, b} == {a, b} and len({a, b, a}) == 2
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b"
    assert a in {a} and b not in {a}
    assert a in [a] and a in (a,)  # membership of the same object needs no ==


def test_membership_in_sequences_is_by_identity():
    a, b, c = st.ones(2), st.ones(2), st.zeros(2)
    assert a not in [b] and b not in [a]  # equal values, different objects
    assert (a in [b]) is False and (a not in [b]) is True
    assert a in [b, c, a] and c in (a, b, c) and a not in (b, c)
    assert a in collections.deque([b, a]) and a not in collections.deque([b])
    assert a not in [1, "x", None, b]  # other types first: their __eq__ defers to the tensor's
    assert [i for i, x in enumerate([a, b, c]) if x in (c, a)] == [0, 2]

    def member(x, items):
        return x in items

    for _ in range(2000):  # past CPython's warm-up: the specialised instruction still reads as CONTAINS_OP
        assert not member(a, [b]) and member(a, [b, a])


@pytest.mark.parametrize(
    "expression",
    ["a == b", "a != b", "[a] == [b]", "(a,) == (b,)", "[b].index(a)", "[b].count(a)", "operator.eq(a, b)"],
)
def test_equality_outside_membership_still_raises(expression):
    a, b = st.ones(2), st.ones(2)
    for _ in range(3):
        assert a not in [b]  # a membership test before or between does not change what == does
        with pytest.raises(TypeError, match=r"will not silently compare identity"):
            eval(expression, {"operator": operator}, {"a": a, "b": b})


def test_equality_error_points_to_identity_and_membership():
    a, b = st.ones(2), st.ones(2)
    with pytest.raises(TypeError) as info:
        a == b  # noqa: B015
    message = str(info.value)
    assert "st.equal(a, b)" in message and "`t in items` tests identity" in message
    assert "x is t" in message


# --- factories ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("function,value", [("zeros_like", 0), ("ones_like", 1)])
def test_zeros_like_and_ones_like(function, value):
    function = getattr(st, function)
    src = st.empty((2, 3), dtype=st.int32)
    out = function(src)
    assert out.shape == (2, 3) and out.dtype == st.int32 and out.storage().id != src.storage().id
    assert out.tolist() == [[value] * 3] * 2
    as_float = function(src, dtype=st.float64)
    assert as_float.dtype == st.float64 and as_float.tolist() == [[float(value)] * 3] * 2


def test_full_like_keeps_a_dense_layout():
    src = st.empty((2, 3)).T
    out = st.full_like(src, 7.5)
    assert out.shape == (3, 2) and out.stride() == src.stride()  # preserve_format, as torch
    assert out.tolist() == [[7.5, 7.5]] * 3
    with pytest.raises(TypeError, match=r"full_like\(\): expected a slimtensor.Tensor, got list"):
        st.full_like([1, 2], 0)


def test_tensor_copies_with_torch_default_dtypes():
    assert st.tensor([1, 2]).dtype == st.int64
    assert st.tensor([1.5, 2]).dtype == st.float32
    assert st.tensor([True]).dtype == st.bool
    assert st.tensor(3.0).shape == ()
    t = st.tensor([[1, 2], [3, 4]], dtype=st.bfloat16)
    assert t.dtype == st.bfloat16 and t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    a = np.arange(4, dtype=np.float32)
    copied = st.tensor(a)
    assert copied.storage().is_owning and copied.data_ptr() != a.ctypes.data
    src = st.arange(3)
    assert st.tensor(src).storage().id != src.storage().id  # always a copy
    with pytest.raises(TypeError, match=r"tensor\(\): cannot convert an object of type object"):
        st.tensor(object())


def test_tensor_of_python_data_allocates_once_in_the_requested_dtype():
    with st.trace() as tr:
        t = st.tensor([[1, 2, 3]], dtype=st.float64)
    assert tr.kinds().count("storage_alloc") == 1 and "copy" not in tr.kinds()
    assert t.storage().is_owning and t.dtype == st.float64


def test_Tensor_of_data_is_a_float32_copy():
    t = st.Tensor([1, 2, 3])
    assert isinstance(t, st.Tensor) and t.dtype == st.float32 and t.tolist() == [1.0, 2.0, 3.0]
    assert st.Tensor(np.arange(2)).dtype == st.float32
    for bad in ((), (2, 3), (2,)):
        with pytest.raises(TypeError, match=r"st.empty\(2, 3\)"):
            st.Tensor(*bad)


def test_arange_allocates_one_storage_in_the_requested_dtype_and_copies_nothing():
    gc.collect()
    with st.trace() as tr:
        t = st.arange(12, dtype=st.float32)
    storages = tr.storages()
    assert len(storages) == 1 and storages[0].owning and storages[0].bytes == 48
    assert "copy" not in tr.kinds()
    assert t.tolist() == [float(i) for i in range(12)]
    assert st.arange(2, 8, 3).tolist() == [2, 5]
    assert st.arange(0, 1, 0.25).dtype == st.float32
    b = st.arange(4, dtype=st.bfloat16)
    assert b.dtype == st.bfloat16 and b.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert st.arange(3, dtype=st.complex32).tolist() == [0j, 1 + 0j, 2 + 0j]  # no numpy dtype: a copy inside


# --- no arithmetic ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("expression", ["t + 1", "1 + t", "t * t", "t @ t", "-t", "t / 2", "abs(t)"])
def test_operators_say_slimtensor_does_no_arithmetic(expression):
    t = st.ones(2)
    with pytest.raises(TypeError, match="slimtensor does no arithmetic") as info:
        eval(expression, {}, {"t": t})
    assert "np.asarray(t)" in str(info.value) and "torch.from_dlpack(t)" in str(info.value)


@pytest.mark.parametrize("name", ["sum", "mean", "flip", "max", "exp", "add_"])
def test_math_methods_say_where_to_go_and_hasattr_stays_false(name):
    t = st.ones(3)
    with pytest.raises(
        AttributeError, match=rf"Tensor has no method {name}\(\): slimtensor does no arithmetic"
    ):
        getattr(t, name)()
    assert not hasattr(t, name)


def test_numpy_functions_still_take_the_array_path():
    t = st.arange(4, dtype=st.float32)
    assert np.sum(t) == 6.0 and np.max(t) == 3.0
    np.testing.assert_array_equal(np.flip(np.asarray(t)), [3, 2, 1, 0])
    np.testing.assert_array_equal(np.asarray(t) + 1, [1, 2, 3, 4])


@pytest.mark.parametrize("name", ["cat", "stack", "sum", "flip", "matmul", "add"])
def test_module_math_functions_say_where_to_go(name):
    with pytest.raises(AttributeError, match=rf"has no function {name}\(\): slimtensor does no arithmetic"):
        getattr(st, name)
    assert not hasattr(st, name)

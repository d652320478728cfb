"""dtype objects: c10 codes, itemsizes, flags, aliases, and how dtype= arguments are understood."""

from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pytest
import slimtensor as st

from ._util import NUMPY_DTYPES

# c10::ScalarType codes and itemsizes (issue 2 lists them; the rest are c10's).
C10 = {
    "uint8": (0, 1),
    "int8": (1, 1),
    "int16": (2, 2),
    "int32": (3, 4),
    "int64": (4, 8),
    "float16": (5, 2),
    "float32": (6, 4),
    "float64": (7, 8),
    "complex32": (8, 4),
    "complex64": (9, 8),
    "complex128": (10, 16),
    "bool": (11, 1),
    "bfloat16": (15, 2),
    "float8_e5m2": (23, 1),
    "float8_e4m3fn": (24, 1),
    "float8_e5m2fnuz": (25, 1),
    "float8_e4m3fnuz": (26, 1),
    "uint16": (27, 2),
    "uint32": (28, 4),
    "uint64": (29, 8),
    "float8_e8m0fnu": (44, 1),
    "float4_e2m1fn_x2": (45, 1),
}

ALIASES = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "short": "int16",
    "int": "int32",
    "long": "int64",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "chalf": "complex32",
}


@pytest.mark.parametrize("name", sorted(C10))
def test_code_and_itemsize(name):
    d = getattr(st, name)
    assert isinstance(d, st.dtype)
    assert d.name == name
    assert (d.code, d.itemsize) == C10[name]
    assert st.empty(3, dtype=d).element_size() == C10[name][1]
    assert st.empty(3, dtype=d).nbytes == 3 * C10[name][1]


def test_dtypes_lists_every_dtype_in_code_order():
    ds = st.dtypes()
    assert [d.name for d in ds] == sorted(C10, key=lambda n: C10[n][0])
    assert len({d.code for d in ds}) == len(ds)


@pytest.mark.needs_torch
@pytest.mark.parametrize("name", sorted(C10))
def test_flags_match_torch(torch, name):
    d, td = getattr(st, name), getattr(torch, name)
    assert d.itemsize == td.itemsize
    assert d.is_floating_point == td.is_floating_point
    assert d.is_complex == td.is_complex
    assert d.is_signed == td.is_signed


@pytest.mark.parametrize("alias,name", sorted(ALIASES.items()))
def test_aliases_are_the_same_object(alias, name):
    assert getattr(st, alias) is getattr(st, name)


def test_equality_hash_repr():
    assert st.float32 == st.float32
    assert st.float32 != st.float64
    assert hash(st.float32) == hash(st.float)
    assert len({st.float32, st.float, st.float64}) == 2
    assert repr(st.bfloat16) == "slimtensor.bfloat16"
    assert str(st.int64) == "slimtensor.int64"


@pytest.mark.parametrize("name", sorted(C10))
def test_pickle_dtype_returns_the_singleton(name):
    d = getattr(st, name)
    assert pickle.loads(pickle.dumps(d)) is d


@pytest.mark.parametrize(
    "spec,name",
    [
        ("float64", "float64"),
        ("bfloat16", "bfloat16"),
        (np.float16, "float16"),
        (np.dtype("int16"), "int16"),
        (np.uint32, "uint32"),
        (ml_dtypes.bfloat16, "bfloat16"),
        (np.dtype(ml_dtypes.float8_e4m3fn), "float8_e4m3fn"),
        (bool, "bool"),
        (int, "int64"),
        (float, "float64"),
        (complex, "complex128"),
    ],
)
def test_dtype_argument_forms(spec, name):
    assert st.empty(2, dtype=spec).dtype is getattr(st, name)
    assert st.zeros(2, dtype=spec).dtype is getattr(st, name)


def test_default_dtypes_follow_torch():
    assert st.empty(2).dtype is st.float32
    assert st.zeros(2).dtype is st.float32
    assert st.ones(2).dtype is st.float32
    assert st.empty_strided((2,), (1,)).dtype is st.float32
    assert st.full((2,), 1).dtype is st.int64
    assert st.full((2,), 1.5).dtype is st.float32
    assert st.full((2,), True).dtype is st.bool
    assert st.full((2,), 1 + 2j).dtype is st.complex64
    assert st.arange(3).dtype is st.int64
    assert st.arange(0.0, 1.0, 0.5).dtype is st.float32
    assert st.asarray([1, 2]).dtype is st.int64
    assert st.asarray([1.0, 2.0]).dtype is st.float32
    assert st.asarray([1j]).dtype is st.complex64
    assert st.asarray([True]).dtype is st.bool


@pytest.mark.parametrize("name", sorted(NUMPY_DTYPES))
def test_numpy_dtype_round_trip(name):
    a = np.zeros(3, dtype=NUMPY_DTYPES[name])
    t = st.from_numpy(a)
    assert t.dtype is getattr(st, name)
    assert t.numpy().dtype == NUMPY_DTYPES[name]

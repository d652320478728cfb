"""Pickling is by value: the elements of the tensor (not its whole storage), its shape, dtype and device."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import slimtensor as st

from ._util import CONVERTIBLE, to_np


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize(
    "make",
    [
        lambda: st.arange(12).reshape(3, 4),
        lambda: st.arange(12).reshape(3, 4).t()[1:],
        lambda: st.arange(60, dtype=st.float32).reshape(3, 4, 5)[:, ::2, 1:],
        lambda: st.zeros(0, 3),
        lambda: st.full((), 2.5),
        lambda: st.arange(3).expand(2, 3),
        lambda: st.arange(10)[7:],
    ],
    ids=["c", "t", "slice", "empty", "0d", "expand", "offset"],
)
def test_round_trip(make, protocol):
    t = make()
    u = pickle.loads(pickle.dumps(t, protocol=protocol))
    assert u.shape == t.shape and u.dtype is t.dtype and u.device == t.device
    assert u.is_contiguous() and u.storage_offset() == 0
    assert u.storage().id != t.storage().id
    np.testing.assert_array_equal(to_np(u), to_np(t))


@pytest.mark.parametrize("name", CONVERTIBLE + ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"])
def test_every_dtype(name):
    dt = getattr(st, name)
    t = st.empty(2, 3, dtype=dt)
    t.view(getattr(st, f"uint{8 * dt.itemsize}") if dt.itemsize <= 8 else st.uint64).copy_(
        st.arange(6 if dt.itemsize <= 8 else 12, dtype=st.uint8).reshape(2, -1)
    )
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype is dt and u.shape == (2, 3)
    assert u.view(st.uint8).tolist() == t.view(st.uint8).tolist()


def test_a_small_view_pickles_small():
    big = st.zeros(1 << 20)
    data = pickle.dumps(big[5:8])
    assert len(data) < 1000
    assert pickle.loads(data).tolist() == [0.0, 0.0, 0.0]


def test_read_only_and_borrowed_become_owned_copies():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = st.from_numpy(a)
    u = pickle.loads(pickle.dumps(t))
    assert u.tolist() == [0, 1, 2, 3]
    u.fill_(1.0)  # a fresh, writable tensor
    np.testing.assert_array_equal(a, [0, 1, 2, 3])


def test_deepcopy_is_a_value_copy():
    t = st.arange(6).reshape(2, 3)
    c = copy.deepcopy(t)
    assert c.tolist() == t.tolist() and c.data_ptr() != t.data_ptr()
    c[0, 0] = 9
    assert t[0, 0].item() == 0


def test_values_survive_special_floats():
    a = np.array([np.nan, -np.inf, np.inf, -0.0, 1e-45, 3.4e38], np.float32)
    u = pickle.loads(pickle.dumps(st.from_numpy(a)))
    np.testing.assert_array_equal(u.numpy().view(np.uint32), a.view(np.uint32))


def test_dtype_and_device_pickle():
    assert pickle.loads(pickle.dumps(st.bfloat16)) is st.bfloat16
    assert pickle.loads(pickle.dumps(st.Device("cuda:1"))) == st.Device("cuda:1")
    assert pickle.loads(pickle.dumps(st.Device("cpu"))) == st.Device("cpu")


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float4_e2m1fn_x2"])
def test_strided_float8_pickles_by_value(name):
    a = st.empty(3, 4, dtype=getattr(st, name))
    a.view(st.uint8).copy_(st.arange(12, dtype=st.uint8).reshape(3, 4))
    b = pickle.loads(pickle.dumps(a.t()[1:]))
    assert b.dtype is a.dtype and b.shape == (3, 3)
    assert b.view(st.uint8).tolist() == [[1, 5, 9], [2, 6, 10], [3, 7, 11]]

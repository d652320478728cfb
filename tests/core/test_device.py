"""Devices: parsing device strings, Device objects, the registry (st.devices()) and threads."""

from __future__ import annotations

import pytest
import slimtensor as st

from ._util import raises_named


@pytest.mark.parametrize(
    "text,type_,index,code",
    [
        ("cpu", "cpu", 0, 0),
        ("cpu:0", "cpu", 0, 0),
        ("cuda", "cuda", None, 1),
        ("cuda:0", "cuda", 0, 1),
        ("cuda:1", "cuda", 1, 1),
        ("cuda:12", "cuda", 12, 1),
        ("cuda:9999", "cuda", 9999, 1),
        ("mps", "mps", None, 13),
        ("mps:0", "mps", 0, 13),
    ],
)
def test_parse(text, type_, index, code):
    d = st.Device(text)
    assert (d.type, d.index, d.code) == (type_, index, code)
    assert st.Device(d) == d
    assert st.Device(str(d)) == d


@pytest.mark.needs_torch
@pytest.mark.parametrize("text", ["cpu", "cuda", "cuda:0", "cuda:12", "mps", "mps:0"])
def test_parse_matches_torch(torch, text):
    d, td = st.Device(text), torch.device(text)
    assert d.type == td.type
    if td.type != "cpu":
        assert d.index == td.index
    assert str(d) == str(td)


def test_type_and_index_arguments():
    assert st.Device("cuda", 3) == st.Device("cuda:3")
    assert st.Device("cpu", 0) == st.Device("cpu")
    assert st.Device("cuda:1") != st.Device("cuda:2")
    assert st.Device("cuda:1") != st.Device("mps:1")
    assert hash(st.Device("cuda:1")) == hash(st.Device("cuda", 1))
    assert len({st.Device("cuda:1"), st.Device("cuda", 1), st.Device("cpu")}) == 2


def test_repr_is_torch_style():
    assert repr(st.Device("cuda:1")) == "device(type='cuda', index=1)"
    assert repr(st.Device("cpu")) == "device(type='cpu')"
    assert str(st.Device("cuda:12")) == "cuda:12"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "gpu",
        "CUDA",
        " cpu",
        "cpu ",
        "cuda:",
        "cuda:x",
        "cuda:-1",
        "cuda:0:1",
        "cuda: 1",
        ":0",
        "cuda:12345",
        "cpu:1",
        "cuda:1.5",
    ],
)
def test_bad_strings(text):
    with raises_named(ValueError, "Device()"):
        st.Device(text)


@pytest.mark.parametrize("index", [-1, 10000])
def test_bad_index(index):
    with raises_named(ValueError, "Device()"):
        st.Device("cuda", index)


def test_cpu_has_only_index_zero():
    with raises_named(ValueError, "Device()", "only index 0"):
        st.Device("cpu", 1)


@pytest.mark.parametrize("bad", [3, 1.5, b"cpu"])
def test_bad_type(bad):
    with raises_named(TypeError, "Device()"):
        st.Device(bad)


def test_devices_lists_cpu_first_and_available():
    infos = st.devices()
    assert infos[0].name == "cpu"
    assert infos[0].code == 0
    assert infos[0].available is True
    assert infos[0].count >= 1
    assert infos[0].reason == ""
    for info in infos:
        assert isinstance(info.name, str) and info.name
        assert info.available or info.reason, f"{info.name} is unavailable without a reason"
    assert len({i.name for i in infos}) == len(infos)


def test_tensor_device():
    t = st.empty(2, device="cpu:0")
    assert t.device == st.Device("cpu")
    assert t.device.type == "cpu"
    assert t.__dlpack_device__() == (1, 0)
    assert st.empty(2, device=st.Device("cpu")).device == st.Device("cpu")


def test_unregistered_device_is_a_clear_error():
    names = {i.name for i in st.devices()}
    name = next((n for n in ("cuda", "mps") if n not in names), None)
    if name is None:
        pytest.skip("plugins for both cuda and mps are registered here")
    with pytest.raises((RuntimeError, ValueError)) as info:
        st.empty(2, device="cuda:0")
    assert "cuda" in str(info.value)
    message = str(info.value)
    # not registered: what to install; registered (slimtensor-cuda without a GPU): why it is unavailable
    assert "slimtensor-cuda" in message or "devices()" in message or "registered but unavailable" in message


def test_registered_but_unavailable_device_says_why():
    # E.g. the CUDA plugin on a machine without a GPU or driver: registered, with its reason.
    unavailable = [i for i in st.devices() if not i.available]
    if not unavailable:
        pytest.skip("every registered device is available here")
    d = unavailable[0]
    with pytest.raises(RuntimeError, match="registered but unavailable") as info:
        st.empty(2, device=f"{d.name}:0")
    assert d.reason and d.reason in str(info.value)


def test_num_threads_round_trip():
    old = st.get_num_threads()
    try:
        st.set_num_threads(1)
        assert st.get_num_threads() == 1
        st.set_num_threads(3)
        assert st.get_num_threads() == 3
    finally:
        st.set_num_threads(old)
    assert st.get_num_threads() == old


@pytest.mark.parametrize(
    "bad,exc",
    [
        (0, ValueError),
        (-1, ValueError),
        (10**9, ValueError),
        (1.5, TypeError),
        (True, TypeError),
        ("2", TypeError),
    ],
)
def test_num_threads_bad(bad, exc):
    old = st.get_num_threads()
    with raises_named(exc, "set_num_threads()"):
        st.set_num_threads(bad)
    assert st.get_num_threads() == old

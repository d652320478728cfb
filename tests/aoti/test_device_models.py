"""st.aoti.load for a device other than the CPU: the plugin names its shim libraries, the loader resolves the
model's shims against the core and them, refuses what it cannot bind, and binds the model to all of them
through one written library of DT_NEEDED entries (Note [Device shim libraries], Note [A library of DT_NEEDED
entries]). The models here are small C libraries compiled by the test: what the loader reads of a model (its
undefined names, its container entry point: the model_shaped_library fixture of tests/conftest.py), not
AOTInductor output; models compiled by torch for a device run in that device's tests, on the device."""

from __future__ import annotations

import ctypes
import os
import sys

import pytest
import slimtensor as st
from slimtensor import aoti
from slimtensor.aoti import _device_libraries, _elf, _runtime

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the model binding is ELF (Linux) only")


def test_a_device_without_a_plugin_is_refused_with_the_fix(model_shaped_library):
    model = model_shaped_library("model")
    with pytest.raises(aoti.AOTIError, match=r"no device plugin registers 'nosuchdevice'.*pip install"):
        aoti.load(model, device="nosuchdevice")


def test_a_cpu_model_calling_an_unknown_shim_is_refused_by_name(model_shaped_library):
    model = model_shaped_library("model", device_shim="aoti_torch_no_such_shim")
    with pytest.raises(
        aoti.AOTIError, match=r"1 shim function\(s\) slimtensor does not implement: aoti_torch_no_such_shim\."
    ):
        aoti.load(model)


def test_a_plugin_that_names_no_shim_library_is_refused_by_name(model_shaped_library):
    pytest.importorskip("slimtensor_hostdev", reason="the test plugin is not installed (make build-test)")
    model = model_shaped_library("model")
    with pytest.raises(aoti.AOTIError, match=r"slimtensor_hostdev\.aoti_libraries\(\) is not defined"):
        aoti.load(model, device="hostdev")


@pytest.mark.parametrize(
    "answer", [[], "lib.so", ["relative/lib.so"], ["/no/such/library.so"], [None]], ids=repr
)
def test_a_bad_library_list_names_the_plugin_and_the_rule(monkeypatch, answer):
    slimtensor_hostdev = pytest.importorskip("slimtensor_hostdev", reason="the test plugin is not installed")
    monkeypatch.setattr(slimtensor_hostdev, "aoti_libraries", lambda: answer, raising=False)
    with pytest.raises(
        RuntimeError, match=r"slimtensor_hostdev\.aoti_libraries\(\) must return a non-empty list"
    ):
        _device_libraries.device_plugin("hostdev")


def test_resolve_maps_each_name_to_the_first_library_that_defines_it(model_shaped_library):
    core, other = aoti.library_path(), model_shaped_library("other")
    names = {"aoti_torch_get_dim", "probe_core_shim", "AOTInductorModelContainerCreateWithDevice", "nowhere"}
    assert _device_libraries.resolve(names, [core, other]) == {
        "aoti_torch_get_dim": core,  # defined by the core; undefined in `other`
        "probe_core_shim": other,
        "AOTInductorModelContainerCreateWithDevice": other,
        "nowhere": None,
    }
    assert _device_libraries.resolve({"probe_core_shim"}, [other, other])["probe_core_shim"] == other


def test_the_written_library_lists_exactly_its_entries_and_loads(tmp_path, model_shaped_library):
    model = model_shaped_library("model")
    needed = str(tmp_path / "needed.so")
    names = ["libm.so.6", os.path.realpath(aoti.library_path())]
    _elf.write_needed_library(needed, names, like=model)
    assert _elf.needed(needed) == names
    assert _elf.defined_symbols(needed) == set()
    ctypes.CDLL(needed, mode=os.RTLD_LOCAL | os.RTLD_NOW)  # the dynamic loader accepts it
    with pytest.raises(_elf.ElfError, match="non-empty string without NUL"):
        _elf.write_needed_library(needed, ["a\0b"], like=model)


def test_a_model_bound_through_the_written_library_calls_the_core(tmp_path, model_shaped_library):
    """The binding itself: one DT_NEEDED on the written library, RTLD_DEEPBIND, and the model's core shim
    resolves to the libslimtensor this process runs (its last-error message proves which copy answered)."""
    model = model_shaped_library("model")
    needed = str(tmp_path / "needed.so")
    core = aoti.library_path()
    _elf.write_needed_library(needed, [_elf.soname(core) or core], like=model)
    _elf.add_needed(model, needed)
    dll = ctypes.CDLL(model, mode=_runtime.model_dlopen_mode())
    assert dll.probe_core_shim() != 0  # aoti_torch_get_dim(NULL, ...) is refused by the core ...
    assert "aoti_torch_get_dim" in aoti.last_error()  # ... whose thread-local last error says so
    st.empty(1)  # the core still works after the probe

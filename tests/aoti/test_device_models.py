"""st.aoti.load for a device other than the CPU, the parts that need no device: a device without a plugin
that runs its models, a model calling a shim nobody defines, and the library of DT_NEEDED entries a plugin can
bind its models through (Note [A library of DT_NEEDED entries] in slimtensor/aoti/_elf.py). The models here
are small C libraries compiled by the test: what the loader reads of a model (its
undefined names, its container entry point: the model_shaped_library fixture of tests/conftest.py), not
AOTInductor output; models compiled by torch for a device run in that device's tests, on the device."""

from __future__ import annotations

import ctypes
import os
import sys

import pytest
import slimtensor as st
from slimtensor import aoti
from slimtensor.aoti import _elf, _runtime

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the model binding is ELF (Linux) only")


def test_a_device_without_a_plugin_for_its_models_is_refused_by_name(model_shaped_library):
    model = model_shaped_library("model")
    with pytest.raises(
        NotImplementedError, match=r"no installed plugin runs AOTInductor models on 'nosuchdevice'"
    ):
        aoti.load(model, device="nosuchdevice")


def test_a_cpu_model_calling_an_unknown_shim_is_refused_by_name(model_shaped_library):
    model = model_shaped_library("model", device_shim="aoti_torch_no_such_shim")
    with pytest.raises(
        aoti.AOTIError, match=r"1 shim function\(s\) slimtensor does not implement: aoti_torch_no_such_shim\."
    ):
        aoti.load(model)


def test_the_written_library_lists_exactly_its_entries_and_loads(tmp_path, model_shaped_library):
    model = model_shaped_library("model")
    needed = str(tmp_path / "needed.so")
    names = ["libm.so.6", os.path.realpath(aoti.library_path())]
    _elf.write_needed_library(needed, names, like=model, soname="libwritten_for_test.so")
    assert _elf.needed(needed) == names
    assert _elf.soname(needed) == "libwritten_for_test.so"
    assert _elf.defined_symbols(needed) == set()
    ctypes.CDLL(needed, mode=os.RTLD_LOCAL | os.RTLD_NOW)  # the dynamic loader accepts it
    _elf.write_needed_library(needed, names[:1], like=model)  # replaces the loaded file, never truncates it
    assert _elf.needed(needed) == names[:1] and _elf.soname(needed) is None
    for bad in (["a\0b"], [""]):
        with pytest.raises(_elf.ElfError, match="non-empty string without NUL"):
            _elf.write_needed_library(needed, bad, like=model)


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

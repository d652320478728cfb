"""st.aoti.load(path, device="mps"): the Metal plugin's `slimtensor.aoti` entry point (Note [Binding an MPS
model] in slimtensor_metal/_aoti.py). On Linux (no Metal): the loader finds the plugin's support, the shim
library defines the MPS shims, the library the model binds to brings the core and the plugin, the load is
refused with the plugin's reason, and a model bound the way the loader binds it calls the very plugin this
process runs. On macOS: the same through the Mach-O binding (Note [Binding a Mach-O model] in
slimtensor/aoti/_macho.py), and the shims stay out of the flat namespace. On a Mac with Metal: a model
compiled by torch for "mps" runs. Nothing under macOS has run so far (no Mac where this was written;
docs/plugins.md)."""

from __future__ import annotations

import ctypes
import os
import sys

import numpy as np
import pytest
import slimtensor as st
from slimtensor import aoti

slimtensor_metal = pytest.importorskip(
    "slimtensor_metal", reason="slimtensor-metal is not installed (make build-test)"
)

NO_METAL = "Metal needs macOS on Apple silicon"
HAVE_BRIDGE = bool(slimtensor_metal._metal.HAVE_BRIDGE)
linux_only = pytest.mark.skipif(sys.platform != "linux", reason="the ELF binding (Linux)")
macos_only = pytest.mark.skipif(sys.platform != "darwin", reason="the Mach-O binding, run by dyld (macOS)")
without_metal = pytest.mark.skipif(
    HAVE_BRIDGE, reason="this build has the Metal bridge: mps may be available"
)


def test_the_mps_models_plugin_is_found_through_its_entry_point() -> None:
    from slimtensor.aoti import _device_support

    support = _device_support.device_support("mps")
    assert support is slimtensor_metal._aoti.support()  # made once per process
    assert support.device_type == "mps"
    assert support.soname == (None if sys.platform == "darwin" else "libslimtensor_metal_aoti.so")
    assert os.path.samefile(support.shim_library, slimtensor_metal._metal.__file__)
    assert support.graphs is None
    with pytest.raises(ValueError, match=r"stream= is for CUDA models"):
        support.stream_handle(0, object())
    assert support.stream_handle(0, None) == 0


@pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="ELF or Mach-O only")
def test_the_shim_library_defines_the_mps_shims_the_core_does_not() -> None:
    from slimtensor.aoti import _elf, _macho

    binary = _macho if sys.platform == "darwin" else _elf
    metal = binary.defined_symbols(slimtensor_metal._aoti.support().shim_library)
    core = binary.defined_symbols(aoti.library_path())
    for shim in ("aoti_torch_mps_malloc", "aoti_torch_mps_create_shader_library", "aoti_torch_mps_mm_out"):
        assert shim in metal and shim not in core


@linux_only
def test_the_written_library_brings_the_core_and_the_plugin() -> None:
    """What the model's one DT_NEEDED names: a loaded library whose own DT_NEEDED are the core and _metal."""
    from slimtensor.aoti import _elf

    support = slimtensor_metal._aoti.support()
    core = aoti.library_path()
    with open("/proc/self/maps") as f:
        written = {line.rstrip() for line in f if f"/{support.soname}" in line}
    assert written and all(line.endswith("(deleted)") for line in written)  # loaded; its file removed at once
    assert _elf.soname(core) is not None  # so the written library can name the core by soname


@linux_only
@without_metal
def test_loading_an_mps_model_without_metal_says_why(model_shaped_library) -> None:
    model = model_shaped_library("mps_model", device_shim="aoti_torch_mps_free")
    before = aoti.live_handles()
    with pytest.raises(RuntimeError, match=rf"device='mps': the MPS device is unavailable: {NO_METAL}"):
        aoti.load(model, device="mps")
    assert aoti.live_handles() == before


@linux_only
def test_a_model_bound_as_the_loader_binds_it_calls_this_processs_plugin(model_shaped_library) -> None:
    """The loader's binding step for "mps", run by hand (loading refuses an unavailable device first): one
    DT_NEEDED on the plugin's soname, RTLD_DEEPBIND; the model's MPS shim is the plugin's, from the copy
    already mapped here (without Metal: freeing a non-NULL buffer fails, freeing NULL succeeds, as torch), and
    its core shim is the core's."""
    from slimtensor.aoti import _elf, _runtime

    support = slimtensor_metal._aoti.support()
    model = model_shaped_library("mps_model", device_shim="aoti_torch_mps_free")
    _elf.add_needed(model, support.soname)
    dll = ctypes.CDLL(model, mode=_runtime.model_dlopen_mode())
    dll.probe_device_shim.argtypes = [ctypes.c_void_p]
    assert dll.probe_device_shim(None) == 0
    if not HAVE_BRIDGE:
        assert dll.probe_device_shim(ctypes.c_void_p(0x1000)) != 0  # refused before the pointer is touched
        assert "aoti_torch_mps_free()" in support.last_error()  # the plugin's own thread-local message
    assert dll.probe_core_shim() != 0 and "aoti_torch_get_dim" in aoti.last_error()
    with open("/proc/self/maps") as f:
        mapped = {line.split()[-1] for line in f if line.rstrip().endswith(".so")}
    metal = support.shim_library
    assert sum(os.path.samefile(p, metal) for p in mapped if os.path.exists(p)) == 1  # one copy only


# --- on macOS (with or without Metal) -----------------------------------------------------------------------

RTLD_DEFAULT = ctypes.c_void_p(-2).value  # dlfcn.h on macOS: ((void*)-2), the flat search


def _address(handle_owner: ctypes.CDLL, name: str) -> int | None:
    try:
        return ctypes.cast(getattr(handle_owner, name), ctypes.c_void_p).value
    except AttributeError:
        return None


def _loaded_images() -> list[str]:
    libc = ctypes.CDLL("/usr/lib/libSystem.B.dylib")
    libc._dyld_image_count.restype = ctypes.c_uint32
    libc._dyld_get_image_name.restype, libc._dyld_get_image_name.argtypes = ctypes.c_char_p, [ctypes.c_uint32]
    return [libc._dyld_get_image_name(i).decode() for i in range(libc._dyld_image_count())]


@macos_only
def test_the_shims_stay_out_of_the_flat_namespace() -> None:
    """Note [Out of the flat namespace]: a flat lookup (dlsym(RTLD_DEFAULT), as a torch model's imports)
    finds neither the core's nor the plugin's shims (a libtorch in the process may answer with its own)."""
    support = slimtensor_metal._aoti.support()
    flat = ctypes.CDLL("flat namespace", handle=RTLD_DEFAULT)
    local = os.RTLD_LOCAL | os.RTLD_NOLOAD  # RTLD_LOCAL: looking must not unhide them
    for path, name in (
        (aoti.library_path(), "aoti_torch_empty_strided"),
        (support.shim_library, "aoti_torch_mps_malloc"),
    ):
        ours = _address(ctypes.CDLL(path, mode=local), name)
        assert ours is not None
        assert _address(flat, name) != ours, f"{name} of {path} is visible to flat lookups"


@macos_only
def test_a_mach_o_model_bound_as_the_loader_binds_it_calls_this_processs_plugin(model_shaped_library) -> None:
    """The loader's Mach-O step by hand (loading refuses an unavailable device first): an LC_LOAD_DYLIB on the
    core and on _metal, the flat shims bound two-level to them, opened RTLD_LOCAL; dyld binds them to the
    copies already loaded (one image each) and the calls reach them."""
    from slimtensor.aoti import _macho
    from slimtensor.aoti._model import bind_macho_model

    support = slimtensor_metal._aoti.support()
    model = model_shaped_library("mps_model", device_shim="aoti_torch_mps_free")
    core = os.path.realpath(aoti.library_path())
    providers = [
        (core, _macho.defined_symbols(core)),
        (support.shim_library, _macho.defined_symbols(support.shim_library)),
    ]
    assert bind_macho_model(model, model, providers) == {
        "aoti_torch_get_dim": core,
        "aoti_torch_mps_free": support.shim_library,
    }
    dll = ctypes.CDLL(model, mode=os.RTLD_LOCAL | os.RTLD_NOW)
    dll.probe_device_shim.argtypes = [ctypes.c_void_p]
    assert dll.probe_device_shim(None) == 0
    if not HAVE_BRIDGE:
        assert dll.probe_device_shim(ctypes.c_void_p(0x1000)) != 0
        assert "aoti_torch_mps_free()" in support.last_error()
    assert dll.probe_core_shim() != 0 and "aoti_torch_get_dim" in aoti.last_error()
    images = [p for p in _loaded_images() if os.path.exists(p)]
    for provider in (core, support.shim_library):
        assert sum(os.path.samefile(p, provider) for p in images) == 1  # the copy this process runs, once


# --- on a Mac with Metal ------------------------------------------------------------------------------------


@pytest.mark.needs_mps
def test_a_torch_model_compiled_for_mps_runs(tmp_path) -> None:
    torch = pytest.importorskip("torch", reason="compiling an MPS model needs torch")
    if not torch.backends.mps.is_available():
        pytest.skip("torch sees no MPS device")

    class Linear(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 4)

        def forward(self, x):
            return torch.relu(self.fc(x)) + 1.0

    torch.manual_seed(0)
    module = Linear().to("mps").eval()
    x = torch.randn(2, 8, device="mps")
    with torch.no_grad():
        ep = torch.export.export(module, (x,))
        path = torch._inductor.aoti_compile_and_package(
            ep,
            package_path=str(tmp_path / "linear.pt2"),
            inductor_configs={"aot_inductor.link_libtorch": False},
        )
        expected = module(x).cpu().numpy()
    with aoti.load(path, device="mps") as model:
        (out,) = model(st.from_numpy(x.cpu().numpy()).to("mps"))
        np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-4, atol=1e-4)

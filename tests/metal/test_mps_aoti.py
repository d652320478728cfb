"""st.aoti.load(path, device="mps"): models are bound to the Metal plugin's shim library (Note [Device shim
libraries]). On Linux (no Metal): the plugin names its library, an MPS model's shims resolve to it and to
the core, a shim the plugin lacks is named, the load is refused with the plugin's reason, and a model bound
through the loader's mechanism calls the very plugin this process runs. On a Mac with Metal: a model
compiled by torch for "mps" runs (never run so far: no Mac where this was written; docs/plugins.md)."""

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
linux_only = pytest.mark.skipif(sys.platform != "linux", reason="the model binding is ELF (Linux) only")
without_metal = pytest.mark.skipif(
    HAVE_BRIDGE, reason="this build has the Metal bridge: mps may be available"
)


def test_the_plugin_names_its_own_extension_as_the_shim_library() -> None:
    from slimtensor.aoti import _device_libraries, _elf

    (library,) = slimtensor_metal.aoti_libraries()
    assert os.path.samefile(library, slimtensor_metal._metal.__file__)
    plugin = _device_libraries.device_plugin("mps")
    assert plugin.source == "slimtensor_metal" and plugin.libraries == (library,)
    if sys.platform == "linux":
        defined = _elf.defined_symbols(library)
        for shim in (
            "aoti_torch_mps_malloc",
            "aoti_torch_mps_create_shader_library",
            "aoti_torch_mps_mm_out",
        ):
            assert shim in defined


@linux_only
def test_an_mps_models_shims_resolve_to_the_plugin_and_the_core(model_shaped_library) -> None:
    from slimtensor.aoti import _device_libraries, _elf

    model = model_shaped_library("mps_model", device_shim="aoti_torch_mps_free")
    core, (metal,) = aoti.library_path(), slimtensor_metal.aoti_libraries()
    shims = {n for n in _elf.undefined_symbols(model) if n.startswith("aoti_torch_")}
    assert _device_libraries.resolve(shims, [core, metal]) == {
        "aoti_torch_get_dim": core,  # device-generic: the core's
        "aoti_torch_mps_free": metal,  # the device's own: the plugin's
    }


@linux_only
@without_metal
def test_loading_an_mps_model_without_metal_says_why(model_shaped_library) -> None:
    model = model_shaped_library("mps_model", device_shim="aoti_torch_mps_malloc")
    before = aoti.live_handles()
    with pytest.raises(aoti.AOTIError, match=rf"compiled for 'mps', which is unavailable here: {NO_METAL}"):
        aoti.load(model, device="mps")
    assert aoti.live_handles() == before


@linux_only
def test_a_shim_the_plugin_lacks_is_named_before_anything_loads(model_shaped_library) -> None:
    model = model_shaped_library("mps_model", device_shim="aoti_torch_mps_no_such_kernel")
    with pytest.raises(aoti.AOTIError) as info:
        aoti.load(model, device="mps")
    message = str(info.value)
    assert "aoti_torch_mps_no_such_kernel" in message and "slimtensor_metal plugin" in message
    assert slimtensor_metal.aoti_libraries()[0] in message  # the libraries searched


@linux_only
def test_a_model_bound_like_the_loader_does_calls_this_processs_plugin(
    tmp_path, model_shaped_library
) -> None:
    """The loader's binding step for "mps", run by hand (loading refuses an unavailable device first): the
    model's MPS shim is the plugin's, from the plugin copy already mapped here (whose MPS context, on a
    machine without Metal, does not exist: freeing a non-NULL buffer fails, freeing NULL succeeds, as torch)."""
    from slimtensor.aoti import _elf, _runtime

    model = model_shaped_library("mps_model", device_shim="aoti_torch_mps_free")
    core, (metal,) = aoti.library_path(), slimtensor_metal.aoti_libraries()
    needed = str(tmp_path / "needed.so")
    _elf.write_needed_library(needed, [_elf.soname(core) or core, metal], like=model)
    _elf.add_needed(model, needed)
    dll = ctypes.CDLL(model, mode=_runtime.model_dlopen_mode())
    dll.probe_device_shim.argtypes = [ctypes.c_void_p]
    assert dll.probe_device_shim(None) == 0
    if not HAVE_BRIDGE:
        assert dll.probe_device_shim(ctypes.c_void_p(0x1000)) != 0  # refused before the pointer is touched
    assert dll.probe_core_shim() != 0 and "aoti_torch_get_dim" in aoti.last_error()
    with open("/proc/self/maps") as f:
        mapped = {line.split()[-1] for line in f if line.rstrip().endswith(".so")}
    assert sum(os.path.samefile(p, metal) for p in mapped if os.path.exists(p)) == 1  # one copy only


# --- on a Mac with Metal ------------------------------------------------------------------------------------


@pytest.mark.needs_mps
@pytest.mark.xfail(
    sys.platform == "darwin",
    strict=True,
    reason="st.aoti.load binds models by patching ELF; binding a Mach-O model to the core and the plugin is "
    "not written yet (docs/plugins.md, 'The Metal plugin')",
)
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

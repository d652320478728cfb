"""slimtensor-metal registered through the real core's plugin discovery (the installed package): on a
machine without Metal, "mps" is listed as unavailable with the plugin's reason, in st.devices() and in
`slimtensor info`, and using it raises that reason; SLIMTENSOR_REQUIRE_MPS=1 turns the skipped MPS tests
into failures."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap

import pytest
import slimtensor as st

slimtensor_metal = pytest.importorskip(
    "slimtensor_metal", reason="slimtensor-metal is not installed (make build-test)"
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NO_METAL = "Metal needs macOS on Apple silicon"
HAVE_BRIDGE = bool(slimtensor_metal._metal.HAVE_BRIDGE)


def _mps():
    return {d.name: d for d in st.devices()}["mps"]


def test_mps_is_registered_by_the_plugin() -> None:
    info = _mps()
    assert info.code == 13  # c10's MPS
    assert info.source == "slimtensor_metal"
    assert info.plugin_version == importlib.metadata.version("slimtensor-metal")


@pytest.mark.skipif(
    HAVE_BRIDGE, reason="this build has the Metal bridge (macOS): availability depends on the GPU"
)
def test_unavailable_with_the_reason_without_metal() -> None:
    info = _mps()
    assert not info.available
    assert info.reason == NO_METAL
    assert slimtensor_metal.unavailable_reason() == NO_METAL
    with pytest.raises(RuntimeError, match=NO_METAL):
        st.empty((2,), device="mps")
    # The plugin's own API stays harmless without a device.
    slimtensor_metal.synchronize()
    slimtensor_metal.empty_cache()
    assert isinstance(slimtensor_metal.memory_stats(), dict)


@pytest.mark.skipif(
    HAVE_BRIDGE, reason="this build has the Metal bridge (macOS): availability depends on the GPU"
)
def test_slimtensor_info_shows_the_reason() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "slimtensor", "info"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stdout + r.stderr
    line = next((ln for ln in r.stdout.splitlines() if ln.strip().startswith("mps ")), "")
    assert NO_METAL in line and "slimtensor_metal" in line, r.stdout
    assert "mps (slimtensor_metal:register from slimtensor-metal" in r.stdout


@pytest.mark.skipif(
    HAVE_BRIDGE, reason="this build has the Metal bridge (macOS): availability depends on the GPU"
)
@pytest.mark.parametrize(
    "call", ["st.ones(2).to('mps')", "st.empty(2, device='mps')", "st.ones(2).to('mps:0')"]
)
def test_a_c10_device_name_loads_the_plugins_before_saying_none_is_there(call: str) -> None:
    """ "mps" (like "cuda") parses without a plugin, as a c10 name; the first use in a fresh process must still
    load the plugins and give the plugin's reason, not "no device of type mps:0 is registered; install ..."."""
    code = f"import slimtensor as st\ntry:\n    {call}\nexcept RuntimeError as e:\n    print(e)\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert NO_METAL in r.stdout and "is registered but unavailable" in r.stdout, r.stdout


_REQUIRE_PROBE = textwrap.dedent(
    """
    import pytest

    @pytest.mark.needs_mps
    def test_on_mps():
        pass
    """
)


@pytest.mark.skipif(HAVE_BRIDGE, reason="needs a machine where mps is unavailable")
@pytest.mark.parametrize("require", ["", "1"])
def test_require_mps_fails_instead_of_skipping(tmp_path, require: str) -> None:
    """needs_mps (tests/conftest.py): skipped with the reason, or failed under SLIMTENSOR_REQUIRE_MPS=1."""
    probe = tmp_path / "test_probe_mps.py"
    probe.write_text(_REQUIRE_PROBE)
    # tests/conftest.py loaded as a plugin (the probe lies outside tests/, so it is not its conftest by path)
    env = dict(os.environ, SLIMTENSOR_REQUIRE_MPS=require, PYTHONPATH=os.path.join(ROOT, "tests"))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "conftest",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.path.join(ROOT, "pyproject.toml"),
            str(probe),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    out = r.stdout + r.stderr
    if require:
        assert r.returncode == 1, out
        assert "1 failed" in out and f"SLIMTENSOR_REQUIRE_MPS=1 but mps is unavailable: {NO_METAL}" in out, (
            out
        )
    else:
        assert r.returncode == 0, out
        assert "1 skipped" in out, out

"""No CUDA context at import, and a device that is unavailable says why (runs everywhere, CI included)."""

from __future__ import annotations

import json

import pytest

from .conftest import cuda_skip_reason, run_python

pytest.importorskip("slimtensor_cuda")


def test_import_creates_no_context() -> None:
    res = run_python(
        "import json, slimtensor, slimtensor_cuda as c; s0 = c._state(); "
        "slimtensor_cuda_reason = c.unavailable_reason(); print(json.dumps([s0, c._state()]))"
    )
    assert res.returncode == 0, res.stderr
    at_import, after_probe = json.loads(res.stdout.strip().splitlines()[-1])
    assert at_import == {
        "native_loaded": False,
        "probed": False,
        "driver_initialised": False,
        "context_touched": False,
    }
    assert (
        after_probe["probed"] and not after_probe["context_touched"]
    )  # asking about devices makes no context


def test_missing_runtime_wheel_is_a_reason() -> None:
    res = run_python(
        "import slimtensor_cuda as c; c._wheel_cudart = lambda: None; r = c.unavailable_reason(); print(r); "
        "import sys; sys.exit(0 if r and 'pip install' in r and 'nvidia-cuda-runtime' in r else 1)"
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_fallback_table_registers_unavailable() -> None:
    from slimtensor_cuda import _fallback

    cap = _fallback.capsule("testing the fallback")
    assert "slimtensor.device_plugin" in repr(cap)


@pytest.mark.skipif(not cuda_skip_reason(), reason="a CUDA device is usable here")
def test_unavailable_device_raises_with_reason() -> None:
    import slimtensor_cuda as c

    reason = c.unavailable_reason()
    assert reason and c.device_count() == 0 and not c.is_available()
    for call in (c.Stream, c.current_stream, c.synchronize, c.memory_stats, c.current_device):
        with pytest.raises(RuntimeError, match="unavailable"):
            call()


@pytest.mark.skipif(not cuda_skip_reason(), reason="a CUDA device is usable here")
def test_core_lists_cuda_unavailable_and_device_calls_raise() -> None:
    """Through the core: cuda is listed unavailable with its reason, and device calls raise it."""
    code = (
        "import slimtensor as st, slimtensor_cuda as c\n"
        "try:\n    c.register()\nexcept RuntimeError as e:\n    print('REFUSED', e); raise SystemExit(3)\n"
        "d = [x for x in st.devices() if str(getattr(x, 'name', x)).startswith('cuda')]\n"
        "assert d, st.devices()\n"
        "for f in (lambda: st.empty(2, device='cuda'), lambda: st.zeros(3, device='cuda:0'),\n"
        "          lambda: st.ones(2).to('cuda')):\n"
        "    try:\n        f()\n    except Exception as e:\n        assert 'driver' in str(e) or 'unavailable' in str(e), e\n"
        "    else:\n        raise AssertionError('no error')\n"
    )
    res = run_python(code, env={"SLIMTENSOR_DEVICE_AUTOLOAD": "0"})
    if res.returncode == 3:
        pytest.skip(
            f"the installed core refuses ABI 1.1 plugins (lands with branch abi): {res.stdout.strip()}"
        )
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_factory_on_cuda_loads_the_plugin_in_a_fresh_process() -> None:
    # "cuda" is a name the core knows itself, so no unknown-name lookup triggers the plugin autoload: the
    # lookup of the device type does (device_registry.cpp usable_device).
    res = run_python(
        "import slimtensor as st\n"
        "try:\n    print('OK', st.zeros(2, device='cuda').tolist())\n"
        "except RuntimeError as e:\n    print('ERR', e)\n"
    )
    assert res.returncode == 0, res.stderr
    assert "is registered; install its plugin" not in res.stdout, res.stdout
    if cuda_skip_reason():
        assert res.stdout.startswith("ERR") and "unavailable" in res.stdout, res.stdout
    else:
        assert res.stdout.strip() == "OK [0.0, 0.0]", res.stdout

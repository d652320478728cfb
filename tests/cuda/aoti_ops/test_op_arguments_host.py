"""What the CUDA op fallbacks check before touching a GPU, run everywhere the plugin builds (no GPU needed):
CPU or null tensors are refused with the op's name, null output pointers are errors, and a missing NVIDIA
library is reported with the pip package that provides it (Notes [Op fallback errors], [NVIDIA libraries at
run time])."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ._cuda_calls import Call, OpError, call, call_out, last_error, lib


@pytest.fixture(scope="module", autouse=True)
def _shim_library():
    try:
        lib()
    except Exception as exc:  # noqa: BLE001  (the plugin or its shim library is not usable here)
        pytest.skip(f"libslimtensor_cuda_aoti is not loadable here: {type(exc).__name__}: {exc}")


def test_cpu_tensors_are_refused_with_the_op_name():
    a = np.ones((2, 3), np.float32)
    b = np.ones((3, 4), np.float32)
    out = np.empty((2, 4), np.float32)
    with pytest.raises(OpError, match=r"aoti_torch_cuda_mm_out\(\): out must be a CUDA tensor"):
        call_out("aoti_torch_cuda_mm_out", lambda c: (c.tensor(out), c.tensor(a), c.tensor(b)))


@pytest.mark.parametrize(
    "name,args",
    [
        ("aoti_torch_cuda_mm_out", lambda c: (None, None, None)),
        ("aoti_torch_cuda_bmm_out", lambda c: (None, None, None)),
        ("aoti_torch_cuda_addmm_out", lambda c: (None, None, None, None, 1.0, 1.0)),
        ("aoti_torch_cuda_baddbmm_out", lambda c: (None, None, None, None, 1.0, 1.0)),
    ],
)
def test_null_handles_are_refused(name, args):
    with pytest.raises(OpError, match=rf"{name}\(\): .*null AtenTensorHandle"):
        call_out(name, args)


def test_attention_with_cpu_inputs_is_refused():
    q = np.zeros((1, 1, 4, 8), np.float32)
    with pytest.raises(OpError, match="query must be a CUDA tensor"):
        call(
            "aoti_torch_cuda__scaled_dot_product_efficient_attention",
            lambda c: (c.tensor(q), c.tensor(q), c.tensor(q), None, 0, 0.0, 0, None),
            "hhhh",
        )


def test_null_output_pointers_are_errors():
    L = lib()
    rc = L.aoti_torch_cuda__scaled_dot_product_efficient_attention(
        None, None, None, None, 0, 0.0, 0, None, None, None, None, None
    )
    assert rc != 0 and "an output pointer is null" in last_error()
    c = Call()
    try:
        one = c.ints((1,))
        rc = L.aoti_torch_cuda_convolution(None, None, None, one, 1, one, 1, one, 1, 0, one, 1, 1, None)
    finally:
        c.close()
    assert rc != 0 and "ret0 is null" in last_error()


def test_unknown_library_name():
    assert lib().slimtensor_cuda_aoti_op_library_status(b"cufft") == 1
    assert "unknown library cufft" in last_error()


def test_clear_last_error_empties_it():
    """The AOTI runner empties the plugin's last error before each call into a model (Note [Fresh shim
    errors] in slimtensor/aoti/_model.py), so a stale message never joins a later failure's."""
    from ._cuda_calls import support

    assert lib().slimtensor_cuda_aoti_op_library_status(b"cufft") == 1
    assert "unknown library cufft" in last_error()
    support().clear_last_error()
    assert last_error() == ""
    assert lib().slimtensor_cuda_aoti_op_library_status(b"cudart") == 1  # and a new failure is reported
    assert "unknown library cudart" in last_error()


_PROBE = """
import sys
sys.path.insert(0, {here!r})
import _cuda_calls as c
L = c.lib()
for name in ("cublasLt", "cudnn"):
    rc = L.slimtensor_cuda_aoti_op_library_status(name.encode())
    print(name, rc, c.last_error())
"""


def test_missing_libraries_name_their_pip_packages(tmp_path):
    """SLIMTENSOR_CUDA_LIBRARY_DIRS pins the search to an empty folder: both libraries are missing."""
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, SLIMTENSOR_CUDA_LIBRARY_DIRS=str(tmp_path))
    r = subprocess.run(
        [sys.executable, "-c", _PROBE.format(here=here)], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert lines["cublasLt"].startswith("1 ")
    assert "needs cuBLASLt, which is not installed" in lines["cublasLt"]
    assert "pip install nvidia-cublas" in lines["cublasLt"] and str(tmp_path) in lines["cublasLt"]
    assert lines["cudnn"].startswith("1 ") and "pip install nvidia-cudnn-cu13" in lines["cudnn"]


def test_installed_libraries_open():
    """Where the wheels are installed (the GPU machine: torch's environment), both libraries open."""
    import importlib.metadata

    for name, dist in (("cublasLt", "nvidia-cublas"), ("cudnn", "nvidia-cudnn-cu13")):
        try:
            importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        assert lib().slimtensor_cuda_aoti_op_library_status(name.encode()) == 0, last_error()

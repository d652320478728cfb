"""Symbol isolation (DESIGN.md "Symbols"): models bind to slimtensor, libtorch keeps its own shims.

Each case runs in a fresh subprocess, because what is loaded into a process cannot be unloaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from ._helpers import needs_torch

RUN_SLIM = """
import numpy as np
from slimtensor import aoti
import json, os
d = os.environ["MODEL_DIR"]
z = np.load(f"{d}/mlp.npz")
h0 = aoti.live_handles()
m = aoti.load(f"{d}/mlp.pt2")
created = aoti.live_handles() - h0   # the model's constant handles: made by slimtensor's shims
out = m.run_numpy(z["in0_0"])[0]
np.testing.assert_allclose(out, z["out0_0"], rtol=2e-5, atol=2e-5)
assert created == 4, created
m.close()
assert aoti.live_handles() == h0
"""

RUN_TORCH_STOCK = """
import torch, numpy as np, os
d = os.environ["MODEL_DIR"]
z = np.load(f"{d}/linear_libtorch.npz")
from slimtensor import aoti
h0 = aoti.live_handles()
runner = torch._inductor.aoti_load_package(f"{d}/linear_libtorch.pt2")
out = runner(torch.from_numpy(z["in0_0"]))
out = out[0] if isinstance(out, (list, tuple)) else out
np.testing.assert_allclose(out.numpy(), z["out0_0"], rtol=2e-5, atol=2e-5)
assert aoti.live_handles() == h0, "a libtorch model used slimtensor's shims"
"""

NO_LIBTORCH = """
maps = open("/proc/self/maps").read()
bad = [l for l in maps.splitlines() if "libtorch" in l or "libc10" in l]
assert not bad, bad[:3]
import sys
assert "torch" not in sys.modules
"""


def _run(code: str, model_dir: str):
    env = dict(os.environ, MODEL_DIR=model_dir)
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, f"subprocess failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"


def test_no_libtorch_in_a_slimtensor_process(model_dir):
    _run(RUN_SLIM + NO_LIBTORCH, model_dir)


TORCH_INPUTS = """
import torch, numpy as np, os
import slimtensor as st
from slimtensor import aoti
d = os.environ["MODEL_DIR"]
z = np.load(f"{d}/mlp.npz")
with aoti.load(f"{d}/mlp.pt2") as m:
    y = m(torch.from_numpy(z["in0_0"]))           # any __dlpack__ producer
    assert isinstance(y, st.Tensor)
    np.testing.assert_allclose(np.asarray(y), z["out0_0"], rtol=2e-5, atol=2e-5)
    t = torch.from_dlpack(y)                       # and back, without a copy
    np.testing.assert_allclose(t.numpy(), z["out0_0"], rtol=2e-5, atol=2e-5)
"""


@needs_torch
def test_torch_imported_first(model_dir):
    _run("import torch\n" + RUN_SLIM + RUN_TORCH_STOCK + RUN_SLIM + TORCH_INPUTS, model_dir)


@needs_torch
def test_torch_imported_after(model_dir):
    _run(
        "import slimtensor\n" + RUN_SLIM + "import torch\n" + RUN_SLIM + RUN_TORCH_STOCK + RUN_SLIM, model_dir
    )


@needs_torch
def test_stock_model_loaded_before_slimtensor_model(model_dir):
    _run(RUN_TORCH_STOCK + RUN_SLIM + RUN_TORCH_STOCK, model_dir)


def test_libslimtensor_is_not_global(model_dir):
    """Nothing in the global scope provides aoti_torch_* after slimtensor loaded a model."""
    _run(
        RUN_SLIM
        + """
import ctypes
glob = ctypes.CDLL(None)
try:
    glob.aoti_torch_empty_strided
except AttributeError:
    pass
else:
    raise AssertionError("aoti_torch_empty_strided is in the global scope")
""",
        model_dir,
    )


def test_debug_handles_turn_misuse_into_errors(model_dir):
    code = (
        """
import ctypes, numpy as np
from slimtensor.aoti import _lib
L = _lib.lib()
assert L.slimtensor_aoti_debug_handles() == 1
from slimtensor.aoti._numpy import handle_from_array
a = np.zeros(4, np.float32)
h = handle_from_array(a)
assert L.aoti_torch_delete_tensor_object(h) == 0
assert L.aoti_torch_delete_tensor_object(h) != 0 and "not a live" in _lib.last_error()
fake = (ctypes.c_uint64 * 64)(0x51AB7E45)  # even with the right magic word
assert L.aoti_torch_delete_tensor_object(ctypes.addressof(fake)) != 0
"""
        + RUN_SLIM
    )
    env = dict(os.environ, MODEL_DIR=model_dir, SLIMTENSOR_DEBUG_HANDLES="1")
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr[-4000:]


def test_blas_is_loaded_lazily_with_the_right_kernels(model_dir):
    """Note [Lazy BLAS]: no OpenBLAS (no thread pool) until a fallback needs it; AVX-512 kernels on AMD."""
    code = """
import ctypes, os
from slimtensor import aoti
from slimtensor.aoti import _lib
import numpy as np
d = os.environ["MODEL_DIR"]
z = np.load(f"{d}/pointwise.npz")
with aoti.load(f"{d}/pointwise.pt2") as m:
    m.run_numpy(z["in0_0"], z["in0_1"])
BLAS = "scipy_openblas32/lib/libscipy_openblas.so"
assert BLAS not in open("/proc/self/maps").read(), "BLAS loaded without a matrix product"
L = _lib.lib()
L.slimtensor_blas_info.restype = ctypes.c_char_p
info = L.slimtensor_blas_info().decode()
assert "OpenBLAS" in info and BLAS in open("/proc/self/maps").read(), info
assert os.environ.get("OPENBLAS_CORETYPE") is None and ctypes.CDLL(None).getenv  # not left set for others
getenv = ctypes.CDLL(None).getenv
getenv.restype = ctypes.c_char_p
assert getenv(b"OPENBLAS_CORETYPE") is None
flags = open("/proc/cpuinfo").read()
if "AuthenticAMD" in flags and " avx512bw" in flags and " avx512vl" in flags and " avx512dq" in flags:
    assert "SkylakeX" in info, info
print(info)
"""
    env = dict(os.environ, MODEL_DIR=model_dir)
    env.pop("OPENBLAS_CORETYPE", None)
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]

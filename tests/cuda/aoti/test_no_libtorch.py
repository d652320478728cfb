"""A CUDA model runs in a process that never loads libtorch (checked through /proc/self/maps), and the
model's CUDA runtime and driver names bind without the user loading anything."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.needs_cuda

CODE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import slimtensor as st
    from slimtensor import aoti
    d = np.load(sys.argv[2])
    with aoti.load(sys.argv[1], device="cuda") as m:
        out = m(st.asarray(d["in0_0"]).to("cuda"), st.asarray(d["in0_1"]).to("cuda"))
        err = float(np.abs(out.cpu().numpy() - d["out0_0"]).max())
    maps = open("/proc/self/maps").read()
    libs = sorted({l.split()[-1] for l in maps.splitlines() if ".so" in l})
    print(json.dumps({"err": err, "libs": libs, "torch": "torch" in sys.modules}))
    """
)


def test_pointwise_without_libtorch(cuda_models):
    m = cuda_models("pointwise")["pointwise"]
    npz = m.path[: -len(".pt2")] + ".npz"
    r = subprocess.run([sys.executable, "-c", CODE, m.path, npz], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["err"] <= 1e-5
    assert not got["torch"]
    torchy = [p for p in got["libs"] if any(k in p.rsplit("/", 1)[-1] for k in ("libtorch", "libc10"))]
    assert torchy == [], f"libtorch in the process: {torchy}"
    names = [p.rsplit("/", 1)[-1] for p in got["libs"]]
    assert "libslimtensor_cuda_aoti.so" in names and any(n.startswith("libcudart.so") for n in names)


GLOBAL_TORCH = textwrap.dedent(
    """
    import ctypes, json, os, sys
    import numpy as np
    import torch
    ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"), mode=os.RTLD_GLOBAL)
    import slimtensor as st
    from slimtensor import aoti
    from slimtensor.aoti import _device_support
    d = np.load(sys.argv[2])
    before = st.memory_stats("cuda").get("live_bytes", 0)
    with aoti.load(sys.argv[1], device="cuda") as m:
        weights = _device_support.device_support("cuda").model_memory()["bytes"]
        grown = st.memory_stats("cuda").get("live_bytes", 0) - before
        out = m(st.asarray(d["in0_0"]).to("cuda"))
        err = float(np.abs(out[0].cpu().numpy() - d["out0_0"]).max())
        del out
    print(json.dumps({"weights": weights, "grown": grown, "err": err}))
    """
)


def test_libtorch_in_the_global_scope_takes_nothing(cuda_models, cuda_torch):
    """With libtorch_cuda loaded RTLD_GLOBAL first, the model and the CUDA shim library still bind to
    slimtensor: the weights are slimtensor storages and the result is right."""
    m = cuda_models("const_alias")["const_alias"]
    npz = m.path[: -len(".pt2")] + ".npz"
    r = subprocess.run(
        [sys.executable, "-c", GLOBAL_TORCH, m.path, npz], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["weights"] > 0 and got["grown"] >= got["weights"], got
    assert got["err"] <= 1e-6

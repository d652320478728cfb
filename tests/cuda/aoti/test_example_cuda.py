"""examples/run_model.cpp runs a CUDA model from C++, without Python or libtorch: it loads the CUDA plugin's
libraries itself (--device cuda --cuda-plugin DIR)."""

from __future__ import annotations

import os
import subprocess
import zipfile

import numpy as np
import pytest

from tests.aoti.test_example import run_model_exe  # noqa: F401  (the fixture that builds the example with CMake)

pytestmark = pytest.mark.needs_cuda


@pytest.mark.parametrize("name", ["softmax", "view_permute"])
def test_run_model_example_on_cuda(cuda_models, run_model_exe, tmp_path, name):  # noqa: F811
    import slimtensor_cuda

    m = cuda_models(name)[name]
    x = m.inputs[0].astype(np.float32)
    (tmp_path / "in.f32").write_bytes(x.tobytes())
    with zipfile.ZipFile(m.path) as z:
        so = next(n for n in z.namelist() if n.endswith(".so"))
        (tmp_path / "model.so").write_bytes(z.read(so))
    plugin_dir = os.path.dirname(os.path.abspath(slimtensor_cuda.__file__))
    args = [
        run_model_exe,
        str(tmp_path / "model.so"),
        *map(str, x.shape),
        "--input",
        str(tmp_path / "in.f32"),
    ]
    args += ["--device", "cuda", "--cuda-plugin", plugin_dir]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    want = m.outputs[0]
    assert lines[0].startswith("output 0: dtype 6 sizes [" + ", ".join(map(str, want.shape)))
    got = np.array([float(v) for v in lines[1 : 1 + want.size]], np.float32).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert lines[-1] == "live handles after delete: 0"

"""The C++ deployment story: examples/run_model.cpp, built with CMake against the package, runs a model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from ._helpers import ROOT, build_cpp, cxx_env, load_reference

EXAMPLES = os.path.join(ROOT, "packages", "slimtensor-core", "examples")


def _prefix():
    from slimtensor.aoti import _lib

    libdir = os.path.dirname(_lib.library_path())
    return (
        libdir,
        os.path.join(libdir, "cmake", "slimtensor"),
        os.path.join(os.path.dirname(libdir), "include"),
    )


def _cmake():
    exe = shutil.which("cmake") or os.path.join(os.path.dirname(sys.executable), "cmake")
    if not os.path.exists(exe) and not shutil.which("cmake"):
        pytest.skip("cmake is not installed (pip install cmake)")
    return exe


@pytest.fixture(scope="module")
def run_model_exe(tmp_path_factory):
    build = tmp_path_factory.mktemp("examples-build")
    _, cfg, _ = _prefix()
    cmake = _cmake()
    r = subprocess.run(
        [cmake, "-S", EXAMPLES, "-B", str(build), f"-Dslimtensor_DIR={cfg}", "-DCMAKE_BUILD_TYPE=Release"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([cmake, "--build", str(build), "-j2"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return str(build / "run_model")


def _so_of(model_dir, name, tmp_path):
    import zipfile

    with zipfile.ZipFile(f"{model_dir}/{name}.pt2") as z:
        so = [n for n in z.namelist() if n.endswith(".so")][0]
        blob = [n for n in z.namelist() if n.endswith("_weights.blob")]
        (tmp_path / f"{name}.so").write_bytes(z.read(so))
        if blob:
            (tmp_path / f"{name}.blob").write_bytes(z.read(blob[0]))
    return str(tmp_path / f"{name}.so")


@pytest.mark.parametrize("name", ["linear", "mlp", "linear_blob"])
def test_run_model_example(model_dir, run_model_exe, tmp_path, name):
    inputs, expected = load_reference(model_dir, name)[0]
    x = inputs[0].astype(np.float32)
    (tmp_path / "in.f32").write_bytes(x.tobytes())
    so = _so_of(model_dir, name, tmp_path)
    args = [run_model_exe, so, *map(str, x.shape), "--input", str(tmp_path / "in.f32")]
    if name == "linear_blob":
        args += ["--weights", str(tmp_path / f"{name}.blob")]
    env = dict(os.environ)
    if not os.environ.get(
        "SLIMTENSOR_CXX_SANITIZE"
    ):  # under make test-asan the ASan runtime must stay preloaded
        env.pop("LD_PRELOAD", None)
    r = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("output 0: dtype 6 sizes [" + ", ".join(map(str, expected[0].shape)))
    values = np.array([float(v) for v in lines[1 : 1 + expected[0].size]], np.float32).reshape(
        expected[0].shape
    )
    np.testing.assert_allclose(values, expected[0], rtol=1e-5, atol=1e-5)
    assert lines[-1] == "live handles after delete: 0"
    maps_check = subprocess.run(["ldd", run_model_exe], capture_output=True, text=True)
    assert "libtorch" not in maps_check.stdout


def test_check_throws_and_codes(tmp_path):
    exe = build_cpp("check_throws.cpp", tmp_path)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, env=cxx_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ndim" in r.stdout

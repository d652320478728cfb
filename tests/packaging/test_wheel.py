"""The core wheel, installed into a fresh environment, carries everything its users need: the module,
libslimtensor, headers, the CMake package config, stubs and py.typed; and a C++ program builds against it
with find_package(slimtensor)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import venv
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORE = ROOT / "packages" / "slimtensor-core"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("dist")
    # A build folder of its own, kept between runs (incremental), apart from the editable build's.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
         "-Cbuild-dir=build/wheel-{wheel_tag}", "-w", str(out), str(CORE)],
        check=True, cwd=ROOT,
    )
    (path,) = out.glob("slimtensor_core-*.whl")
    return path


def test_wheel_contents(wheel: pathlib.Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = [
        "slimtensor/__init__.py",
        "slimtensor/py.typed",
        "slimtensor/_C.pyi",
        "slimtensor/include/slimtensor/tensor/tensor.h",
        "slimtensor/include/slimtensor/c/device_plugin.h",
        "slimtensor/lib/cmake/slimtensor/slimtensorConfig.cmake",
        "slimtensor/lib/cmake/slimtensor/slimtensorTargets.cmake",
    ]
    missing = [n for n in expected if n not in names]
    assert not missing, f"wheel lacks {missing}"
    assert any(n.startswith("slimtensor/_C.") and n.endswith(".so") for n in names)
    assert any(n.startswith("slimtensor/lib/libslimtensor.so") for n in names)


def test_fresh_environment_install_and_cmake_consumer(wheel: pathlib.Path, tmp_path: pathlib.Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], check=True)
    info = subprocess.run([str(env_dir / "bin" / "slimtensor"), "info"], check=True, capture_output=True, text=True)
    assert "cpu" in info.stdout and "slimtensor 0.1.0" in info.stdout
    prefix = subprocess.run([str(py), "-c", "import slimtensor; print(slimtensor.cmake_prefix())"],
                            check=True, capture_output=True, text=True).stdout.strip()
    assert pathlib.Path(prefix, "py.typed").exists() and pathlib.Path(prefix, "_C.pyi").exists()

    cmake = shutil.which("cmake") or str(pathlib.Path(sys.executable).parent / "cmake")
    src = tmp_path / "consumer"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(consumer CXX)\nset(CMAKE_CXX_STANDARD 17)\n"
        "find_package(slimtensor CONFIG REQUIRED)\nadd_executable(consumer main.cpp)\n"
        "target_link_libraries(consumer PRIVATE slimtensor::slimtensor)\n"
    )
    (src / "main.cpp").write_text(
        '#include <cstdio>\n#include "slimtensor/tensor/factories.h"\n#include "slimtensor/layout/views.h"\n'
        "int main() {\n  using namespace slimtensor;\n"
        "  Tensor t = empty(std::vector<int64_t>{2, 3}, ScalarType::Float32, kCPUDevice);\n"
        "  Tensor u = transpose(t, 0, 1);\n"
        '  std::printf("%lld %lld %d\\n", (long long)u.sizes()[0], (long long)u.strides()[0], (int)u.is_contiguous());\n'
        "  return 0;\n}\n"
    )
    build = tmp_path / "consumer-build"
    subprocess.run([cmake, "-S", str(src), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}"], check=True,
                   capture_output=True)
    subprocess.run([cmake, "--build", str(build)], check=True, capture_output=True)
    run = subprocess.run([str(build / "consumer")], check=True, capture_output=True, text=True)
    assert run.stdout.split() == ["3", "1", "0"]

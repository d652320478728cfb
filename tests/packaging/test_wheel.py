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
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-build-isolation",
            "--no-deps",
            "-Cbuild-dir=build/wheel-{wheel_tag}",
            "-w",
            str(out),
            str(CORE),
        ],
        check=True,
        cwd=ROOT,
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
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], check=True
    )
    info = subprocess.run(
        [str(env_dir / "bin" / "slimtensor"), "info"], check=True, capture_output=True, text=True
    )
    assert "cpu" in info.stdout and "slimtensor 0.1.0" in info.stdout
    prefix = subprocess.run(
        [str(py), "-c", "import slimtensor; print(slimtensor.cmake_prefix())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
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
    subprocess.run(
        [cmake, "-S", str(src), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}"],
        check=True,
        capture_output=True,
    )
    subprocess.run([cmake, "--build", str(build)], check=True, capture_output=True)
    run = subprocess.run([str(build / "consumer")], check=True, capture_output=True, text=True)
    assert run.stdout.split() == ["3", "1", "0"]


def test_fresh_environment_gives_plugins_the_header_only_target(
    wheel: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """A plugin finds the core through the `cmake.prefix` entry point (as scikit-build-core does) and builds
    against slimtensor::plugin_headers: the C headers only, no C++ header, nothing linked."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], check=True
    )
    # What scikit-build-core's builder does: load each cmake.prefix entry point, add files(module) to the prefix.
    prefix = subprocess.run(
        [
            str(py),
            "-c",
            "from importlib.metadata import entry_points; from importlib.resources import files\n"
            "(ep,) = [e for e in entry_points(group='cmake.prefix') if e.name == 'slimtensor']\n"
            "print(files(ep.load()))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert pathlib.Path(prefix, "lib", "cmake", "slimtensor", "slimtensorConfig.cmake").exists()

    cmake = shutil.which("cmake") or str(pathlib.Path(sys.executable).parent / "cmake")
    src = tmp_path / "plugin"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(plugin C)\n"
        "find_package(slimtensor CONFIG REQUIRED)\n"
        "add_library(plugin MODULE plugin.c)\n"
        "target_link_libraries(plugin PRIVATE slimtensor::plugin_headers)\n"
        "get_target_property(_libs slimtensor::plugin_headers INTERFACE_LINK_LIBRARIES)\n"
        'message(STATUS "plugin_headers links: ${_libs}")\n'
        "add_library(cxx_by_mistake MODULE EXCLUDE_FROM_ALL mistake.c)\n"
        "target_link_libraries(cxx_by_mistake PRIVATE slimtensor::plugin_headers)\n"
    )
    (src / "plugin.c").write_text(
        '#include "slimtensor/c/device_plugin.h"\n#include "slimtensor/c/shim.h"\n'
        "int st_plugin_init(const st_core_table* core, const st_device_table** out) {\n"
        "  (void)out; return core && core->abi_major == ST_PLUGIN_ABI_MAJOR && "
        "ST_DEVICE_TABLE_SIZE_1_1 > ST_DEVICE_TABLE_SIZE_1_0 ? 0 : 1;\n}\n"
    )
    (src / "mistake.c").write_text('#include "slimtensor/tensor/tensor.h"\n')
    build = tmp_path / "plugin-build"
    conf = subprocess.run(
        [cmake, "-S", str(src), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}"],
        capture_output=True,
        text=True,
    )
    assert conf.returncode == 0, conf.stdout + conf.stderr
    assert "plugin_headers links: _libs-NOTFOUND" in conf.stdout
    built = subprocess.run(
        [cmake, "--build", str(build), "--target", "plugin"], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (module,) = build.glob("*plugin.so")
    if shutil.which("readelf"):
        dynamic = subprocess.run(
            ["readelf", "-d", str(module)], check=True, capture_output=True, text=True
        ).stdout
        assert "libslimtensor" not in dynamic
    mistake = subprocess.run(
        [cmake, "--build", str(build), "--target", "cxx_by_mistake"], capture_output=True, text=True
    )
    assert mistake.returncode != 0 and "tensor.h" in mistake.stdout + mistake.stderr

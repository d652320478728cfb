"""The Metal plugin's platform-independent logic on Linux: the C++ unit tests against the bridge's test double
(tests/metal/cpp), the plugin registered with the real libslimtensor (tests/metal/core_cpp), and the Metal
conversion kernel (compiled as C++) against the core's CPU conversions."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PKG = os.path.join(ROOT, "packages", "slimtensor-metal")
SRC = os.path.join(PKG, "src")
CORE_INCLUDE = os.path.join(ROOT, "packages", "slimtensor-core", "include")

# Every test name main() runs (tests/metal/cpp/test_metal_plugin.cpp).
CPP_TESTS = [
    "unavailable_without_metal",
    "no_device",
    "device_table",
    "plugin_init_refuses_old_core",
    "cache_buckets_and_stats",
    "cache_limit_evicts",
    "stream_ordered_reuse",
    "refcount_and_release_paths",
    "interior_pointers",
    "copies_and_fill",
    "stride_aware_sizes",
    "strided_copy_kernel",
    "float64_goes_through_the_core_after_the_gpu",
    "events",
    "aoti_memory_shims",
    "kernel_shims_bind_views_in_place",
    "tensor_access_needs_memory_ref",
    "command_blocks",
    "two_models_destroy_only_their_own",
    "matmul_fallbacks",
    "guarded_turns_exceptions_into_errors",
]


def _embed_kernels(out_dir: str) -> str:
    """Writes metal_kernels.metal.inc (the .metal source as one raw string), as CMake does."""
    with open(os.path.join(SRC, "kernels", "metal_kernels.metal")) as f:
        text = f.read()
    assert ')stmetal"' not in text
    inc = os.path.join(out_dir, "metal_kernels.metal.inc")
    with open(inc, "w") as f:
        f.write('R"stmetal(' + text + ')stmetal"\n')
    return out_dir


@pytest.fixture(scope="session")
def plugin_tests(tmp_path_factory) -> str:
    cxx = shutil.which("g++") or shutil.which("c++")
    if not cxx:
        pytest.skip("no C++ compiler (install g++)")
    out = str(tmp_path_factory.mktemp("metal"))
    gen = _embed_kernels(out)
    sources = [
        os.path.join(HERE, "cpp", f)
        for f in sorted(os.listdir(os.path.join(HERE, "cpp")))
        if f.endswith(".cpp")
    ]
    sources += [
        os.path.join(SRC, "plugin", f)
        for f in sorted(os.listdir(os.path.join(SRC, "plugin")))
        if f.endswith(".cpp")
    ]
    sources.append(os.path.join(SRC, "kernels", "kernel_source.cpp"))
    flags = [
        "-std=c++17",
        "-O1",
        "-g",
        "-pthread",
        "-Wall",
        "-Wextra",
        "-Wno-unused-function",
        "-Wno-unused-parameter",
    ]
    cov = os.environ.get("SLIMTENSOR_METAL_COVERAGE")
    if cov:  # gcov: the executable, and so its .gcno/.gcda files, go into the coverage folder
        flags = ["-std=c++17", "-O0", "-g", "-pthread", "--coverage"]
    exe = os.path.join(cov or out, "test_metal_plugin")
    cmd = [
        cxx,
        *flags,
        f"-I{os.path.join(HERE, 'cpp')}",
        f"-I{SRC}",
        f"-I{os.path.join(SRC, 'kernels')}",
        f"-I{gen}",
        f"-I{CORE_INCLUDE}",
        *sources,
        "-o",
        exe,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cov or out)
    assert r.returncode == 0, r.stderr[-6000:]
    return exe


@pytest.fixture(scope="session")
def real_core_tests(tmp_path_factory) -> str:
    """tests/metal/core_cpp/test_metal_real_core.cpp, linked against the installed libslimtensor."""
    from slimtensor.aoti import _lib

    cxx = shutil.which("g++") or shutil.which("c++")
    if not cxx:
        pytest.skip("no C++ compiler (install g++)")
    out = str(tmp_path_factory.mktemp("metal_core"))
    gen = _embed_kernels(out)
    lib = _lib.library_path()
    libdir = os.path.dirname(lib)
    include = os.path.join(os.path.dirname(libdir), "include")  # the installed core's headers
    sources = [
        os.path.join(HERE, "core_cpp", "test_metal_real_core.cpp"),
        os.path.join(HERE, "cpp", "metal_bridge_test_double.cpp"),
    ]
    sources += [
        os.path.join(SRC, "plugin", f)
        for f in sorted(os.listdir(os.path.join(SRC, "plugin")))
        if f.endswith(".cpp")
    ]
    sources.append(os.path.join(SRC, "kernels", "kernel_source.cpp"))
    flags = [
        "-std=c++17",
        "-O1",
        "-g",
        "-pthread",
        "-Wall",
        "-Wextra",
        "-Wno-unused-function",
        "-Wno-unused-parameter",
    ]
    cov = os.environ.get("SLIMTENSOR_METAL_COVERAGE")
    if cov:
        flags = ["-std=c++17", "-O0", "-g", "-pthread", "--coverage"]
    exe = os.path.join(cov or out, "test_metal_real_core")
    cmd = [
        cxx,
        *flags,
        f"-I{os.path.join(HERE, 'cpp')}",
        f"-I{SRC}",
        f"-I{os.path.join(SRC, 'kernels')}",
        f"-I{gen}",
        f"-I{include}",
        *sources,
        lib,
        f"-Wl,-rpath,{libdir}",
        "-o",
        exe,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cov or out)
    assert r.returncode == 0, r.stderr[-6000:]
    return exe


@pytest.mark.parametrize("mode", ["unavailable", "double"])
def test_registered_with_the_real_core(real_core_tests: str, mode: str) -> None:
    """unavailable: the plugin as built on Linux registers MPS as unavailable with the reason;
    double: the real core allocates, copies and frees through the plugin (over the test double), and
    the shims read its tensors through the real core_symbol table (slimtensor_aoti_get_memory_ref),
    CPU handles included."""
    r = subprocess.run([real_core_tests, mode], capture_output=True, text=True, timeout=120)
    assert f"PASS {mode}:" in r.stdout, r.stdout + r.stderr
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", CPP_TESTS)
def test_cpp(plugin_tests: str, name: str) -> None:
    r = subprocess.run([plugin_tests, name], capture_output=True, text=True, timeout=120)
    assert f"PASS {name}" in r.stdout, r.stdout + r.stderr
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_cpp_test_is_listed(plugin_tests: str) -> None:
    r = subprocess.run([plugin_tests], capture_output=True, text=True, timeout=300)
    ran = [line.split()[1] for line in r.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert ran == CPP_TESTS, r.stdout
    assert r.returncode == 0, r.stdout + r.stderr  # includes the end-of-run leak check


# ---- the conversion kernel against the core's CPU copy_ -------------------------------------------------
# (c10 code, slimtensor dtype name, itemsize): every dtype the Metal kernel converts (float64/complex128 go to
# the core's own host conversion, tested above for the routing).
KERNEL_DTYPES = [
    (0, "uint8", 1),
    (1, "int8", 1),
    (2, "int16", 2),
    (3, "int32", 4),
    (4, "int64", 8),
    (5, "float16", 2),
    (6, "float32", 4),
    (8, "complex32", 4),
    (9, "complex64", 8),
    (11, "bool", 1),
    (15, "bfloat16", 2),
    (27, "uint16", 2),
    (28, "uint32", 4),
    (29, "uint64", 8),
]


def _patterns(itemsize: int, code: int) -> bytes:
    rng = np.random.default_rng(1234 + code)
    special32 = [
        0,
        0x80000000,
        0x3FC00000,
        0xBFC00000,
        0x7F800000,
        0xFF800000,
        0x7FC00000,
        0x7F800001,
        0xFFFFFFFF,
        0x00000001,
        0x807FFFFF,
        0x33000000,
        0x33000001,
        0x387FE000,
        0x38800000,
        0x477FEFFF,
        0x477FF000,
        0x4F000000,
        0xCF000000,
        0x4F000001,
        0x5F000000,
        0xDF000000,
        0x5F800000,
        0x43960000,
        0xC3960000,
        0x3F7FFFFF,
        0x4B800001,
        0x7F7FFFFF,
        0x3F800000,
    ]
    special16 = [
        0,
        0x8000,
        0x0001,
        0x03FF,
        0x0400,
        0x7BFF,
        0x7C00,
        0xFC00,
        0x7C01,
        0x7E00,
        0xFFFF,
        0x3C00,
        0x7F80,
        0x7FC0,
        0xFF81,
        0x0080,
        0x5BF8,
        0xD800,
    ]
    if itemsize == 1:
        return bytes(range(256))
    if itemsize == 2:
        a = np.concatenate([np.array(special16, np.uint16), rng.integers(0, 1 << 16, 4000, dtype=np.uint16)])
        return a.tobytes()
    if itemsize == 4:
        if code == 8:  # complex32: pairs of float16 patterns
            a = np.concatenate(
                [np.array(special16, np.uint16), rng.integers(0, 1 << 16, 4000, dtype=np.uint16)]
            )
            return a.tobytes()
        a = np.concatenate([np.array(special32, np.uint32), rng.integers(0, 1 << 32, 4000, dtype=np.uint32)])
        small = rng.integers(-(1 << 20), 1 << 20, 500).astype(np.float32).view(np.uint32)
        return np.concatenate([a, small]).tobytes()
    if code == 9:  # complex64: pairs of float32 patterns (an even count)
        a = np.concatenate([np.array(special32, np.uint32), rng.integers(0, 1 << 32, 4001, dtype=np.uint32)])
        return a.tobytes()
    ints = [
        0,
        1,
        (1 << 63) - 1,
        1 << 63,
        (1 << 64) - 1,
        (1 << 24) + 1,
        (1 << 53) + 1,
        0x7FFFFF8000000000,
        0xFFFFFFFFFF000001,
        16777217,
        33554435,
    ]
    a = np.concatenate(
        [
            np.array(ints, np.uint64),
            rng.integers(0, 1 << 63, 2000, dtype=np.uint64) * 3 + 1,
            rng.integers(0, 1 << 30, 2000, dtype=np.uint64),
        ]
    )
    return a.tobytes()


@pytest.mark.parametrize("src", KERNEL_DTYPES, ids=lambda d: d[1])
def test_kernel_conversions_match_the_core(plugin_tests: str, src, tmp_path) -> None:
    st = pytest.importorskip("slimtensor")
    scode, sname, ssize = src
    data = _patterns(ssize, scode)
    inp = tmp_path / "in.bin"
    inp.write_bytes(data)
    n = len(data) // ssize
    raw = st.from_numpy(np.frombuffer(data, np.uint8).copy())
    src_t = raw.view(getattr(st, sname))
    mismatches = []
    for dcode, dname, dsize in KERNEL_DTYPES:
        out = tmp_path / f"out_{dname}.bin"
        r = subprocess.run(
            [plugin_tests, "convert", str(scode), str(dcode), str(inp), str(out)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        got = np.frombuffer(out.read_bytes(), np.uint8)
        want = np.asarray(src_t.to(dtype=getattr(st, dname)).view(st.uint8).numpy()).reshape(-1)
        assert got.size == n * dsize == want.size
        if dname == "bool":  # any non-zero byte is true; compare truth
            got, want = got != 0, want != 0
        if not np.array_equal(got, want):
            bad = np.nonzero((got.reshape(n, -1) != want.reshape(n, -1)).any(axis=1))[0][:3]
            for i in bad:
                mismatches.append(
                    f"{sname}->{dname} element {i}: in {data[i * ssize : (i + 1) * ssize].hex()} "
                    f"got {got.reshape(n, -1)[i].tobytes().hex()} "
                    f"want {want.reshape(n, -1)[i].tobytes().hex()}"
                )
    assert not mismatches, "\n".join(mismatches[:40])

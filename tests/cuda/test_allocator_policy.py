"""The CUDA caching allocator's policy, one test per rule, against its host-memory test double.

Runs without a GPU (and without nvcc): the policy is plain C++ (packages/slimtensor-cuda/src/allocator),
compiled here with the host compiler together with tests/allocator_policy_test.cpp, under ASan/UBSan
where the compiler has them.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from .conftest import PACKAGE

SOURCES = [
    PACKAGE / "src" / "allocator" / "caching_allocator.cpp",
    PACKAGE / "src" / "allocator" / "alloc_config.cpp",
    PACKAGE / "tests" / "allocator_policy_test.cpp",
]


def _compiler() -> str | None:
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def policy_test(tmp_path_factory) -> str:
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) on PATH to build the allocator policy test")
    out = tmp_path_factory.mktemp("alloc") / "allocator_policy_test"
    base = [cxx, "-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-Werror", f"-I{PACKAGE / 'src'}",
            f"-I{PACKAGE / 'tests'}", *map(str, SOURCES), "-o", str(out), "-pthread"]
    sanitized = subprocess.run(base + ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"],
                               capture_output=True, text=True)
    if sanitized.returncode != 0:
        plain = subprocess.run(base, capture_output=True, text=True)
        assert plain.returncode == 0, f"building the allocator policy test failed:\n{plain.stderr}"
    return str(out)


def _names() -> list[str]:
    # The names are listed in the C++ file's table; parsing it keeps collection free of a compile step.
    text = (PACKAGE / "tests" / "allocator_policy_test.cpp").read_text()
    table = text[text.index("const Test kTests[] = {"):]
    table = table[: table.index("};")]
    return [line.split('"')[1] for line in table.splitlines() if line.strip().startswith('{"')]


@pytest.fixture(scope="module")
def policy_results(policy_test: str) -> dict[str, str]:
    """Runs every rule once (one process: the sanitizers' start-up is paid once); name -> its line."""
    res = subprocess.run([policy_test], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1"})
    lines = {}
    for line in res.stdout.splitlines():
        status, _, rest = line.partition(" ")
        lines[rest.split(":")[0]] = line
    # A sanitizer report (leak, overflow) fails the whole run: show it with every rule.
    lines["__exit__"] = f"exit status {res.returncode}\n{res.stderr[-4000:]}"
    return lines


@pytest.mark.parametrize("name", _names())
def test_policy_rule(policy_results: dict[str, str], name: str) -> None:
    line = policy_results.get(name, f"{name}: did not run")
    assert line == f"PASS {name}", line
    assert policy_results["__exit__"].startswith(("exit status 0", "exit status 1")), policy_results["__exit__"]


def test_policy_run_is_clean(policy_results: dict[str, str]) -> None:
    assert policy_results["__exit__"].startswith("exit status 0"), policy_results["__exit__"]


def test_every_rule_is_collected(policy_test: str) -> None:
    listed = subprocess.run([policy_test, "--list"], capture_output=True, text=True, check=True).stdout.split()
    assert listed == _names()


def test_unknown_test_name_is_an_error(policy_test: str) -> None:
    res = subprocess.run([policy_test, "no_such_rule"], capture_output=True, text=True)
    assert res.returncode == 2 and "no test named" in res.stderr

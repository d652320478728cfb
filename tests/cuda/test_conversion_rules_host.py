"""The CUDA kernels' element conversions (kernels/convert.cuh), compiled for the host, give slimtensor's CPU
results byte for byte for every pair of convertible dtypes (NaN payloads, subnormals, ties, out-of-range).

No GPU needed: the same functions run on the device, where the only difference is the hardware's IEEE
conversions (round to nearest even, subnormals kept: the kernels are built with -ftz=false), which the GPU
test test_gpu_copies.py::test_every_dtype_pair_bit_exact checks on the H200.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from ._dtype_cases import DTYPES, ITEMSIZE, cpu_convert, special_bytes
from .conftest import PACKAGE

st = pytest.importorskip("slimtensor")


@pytest.fixture(scope="module")
def convert_tool(tmp_path_factory) -> str:
    cxx = next((shutil.which(c) for c in (os.environ.get("CXX"), "c++", "g++", "clang++") if c and shutil.which(c)), None)
    if cxx is None:
        pytest.skip("no C++ compiler to build the conversion tool")
    out = tmp_path_factory.mktemp("conv") / "convert_tool"
    res = subprocess.run([cxx, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off",
                          f"-I{PACKAGE / 'src'}", str(PACKAGE / "tests" / "convert_tool.cpp"), "-o", str(out)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return str(out)


@pytest.mark.parametrize("src_code,src", DTYPES, ids=[d[1] for d in DTYPES])
def test_conversions_match_cpu(convert_tool: str, tmp_path, src_code: int, src: str) -> None:
    rng = np.random.default_rng(src_code)
    data = special_bytes(src_code, rng)
    n = len(data) // ITEMSIZE[src_code]
    inp = tmp_path / "in.bin"
    inp.write_bytes(data)
    bad = []
    for dst_code, dst in DTYPES:
        outp = tmp_path / f"out_{dst}.bin"
        res = subprocess.run([convert_tool, str(src_code), str(dst_code), str(n), str(inp), str(outp)],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        got, want = outp.read_bytes(), cpu_convert(st, data, src, dst)
        if got != want:
            size = ITEMSIZE[dst_code]
            idx = next(i for i in range(n) if got[i * size:(i + 1) * size] != want[i * size:(i + 1) * size])
            s = ITEMSIZE[src_code]
            bad.append(f"{src}->{dst} element {idx}: input {data[idx*s:(idx+1)*s].hex()} gave "
                       f"{got[idx*size:(idx+1)*size].hex()}, CPU {want[idx*size:(idx+1)*size].hex()}")
    assert not bad, "\n".join(bad)

"""slimtensor/c/shim.h and shim_cpu.h declare torch 2.13's shim functions: same names, same C signatures."""

from __future__ import annotations

import importlib.util
import os
import re

import pytest

from ._helpers import ROOT, needs_torch

INCLUDE = os.path.join(ROOT, "packages", "slimtensor-core", "include", "slimtensor", "c")

# c10 value types and the C types slimtensor declares in their place (ABI-identical).
EQUIVALENT = {
    "c10::Half*": "slimtensor_half*",
    "c10::BFloat16*": "slimtensor_bfloat16*",
    "c10::complex<float>*": "slimtensor_complex64*",
    "c10::complex<float>": "slimtensor_complex64",
    "c10::complex<double>": "slimtensor_complex128",
}


def _decls(text: str, export: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = {}
    for m in re.finditer(export + r"\s+([\w:\s\*]+?)\s*\b(aoti_torch_\w+)\s*\(([^;{]*?)\)\s*;", text, re.S):
        ret, name, params = m.group(1), m.group(2), m.group(3)
        types = []
        params = params.strip()
        if params and params != "void":
            for p in params.split(","):
                p = " ".join(p.split())
                m2 = re.match(r"^(.*?)(\w+)$", p)
                p = m2.group(1) if m2 and m2.group(1).strip() else p  # drop the parameter's name
                p = re.sub(r"\s*\*\s*", "*", p).strip()
                types.append(EQUIVALENT.get(p, p))
        out[name] = (" ".join(ret.split()), tuple(types))
    return out


def _torch_include():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "include")


def test_header_compiles_as_c():
    import shutil
    import subprocess
    import tempfile

    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t.c")
        with open(src, "w") as f:
            f.write(
                '#include "slimtensor/c/shim_cpu.h"\n'
                "int main(void) { return aoti_torch_dtype_float32() == 6 ? 0 : 1; }\n"
            )
        inc = os.path.dirname(os.path.dirname(INCLUDE))
        r = subprocess.run(
            [cc, "-std=c11", "-Wall", "-Werror", "-fsyntax-only", f"-I{inc}", src],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr


@needs_torch
def test_signatures_match_torch():
    inc = _torch_include()
    base = os.path.join(inc, "torch", "csrc", "inductor", "aoti_torch")
    with open(os.path.join(base, "c", "shim.h")) as f:
        torch_decls = _decls(f.read(), "AOTI_TORCH_EXPORT")
    with open(os.path.join(base, "generated", "c_shim_cpu.h")) as f:
        torch_decls.update(_decls(f.read(), "AOTI_TORCH_EXPORT"))
    ours = {}
    for h in ("shim.h", "shim_cpu.h"):
        with open(os.path.join(INCLUDE, h)) as f:
            ours.update(_decls(f.read(), "SLIMTENSOR_C_API"))
    assert len(ours) > 100
    missing = sorted(n for n in ours if n not in torch_decls)
    assert not missing, f"declared by slimtensor but not by torch 2.13: {missing}"
    wrong = {n: (ours[n], torch_decls[n]) for n in ours if ours[n] != torch_decls[n]}
    assert not wrong, wrong


@needs_torch
def test_every_tensor_shim_of_torch_is_declared_and_exported():
    """Every torch shim whose name is about tensors (not IValues, libraries, dispatcher, guards, streams)."""
    from slimtensor.aoti import _elf, _lib

    inc = _torch_include()
    with open(os.path.join(inc, "torch", "csrc", "inductor", "aoti_torch", "c", "shim.h")) as f:
        torch_names = set(_decls(f.read(), "AOTI_TORCH_EXPORT"))
    not_tensor = re.compile(
        r"ivalue|c10_value|library|dispatcher|guard|stream|record_function|proxy_executor|"
        r"print_tensor|save_tensor|fbgemm|_wrapped_|scatter|index_put|check_inf_and_nan|"
        r"_mm_plus_mm|current_device|cuda_|delete_stream|stream_id"
    )
    wanted = {n for n in torch_names if not not_tensor.search(n)}
    with open(os.path.join(INCLUDE, "shim.h")) as f:
        ours = set(_decls(f.read(), "SLIMTENSOR_C_API"))
    assert sorted(wanted - ours) == []
    exported = _elf.defined_symbols(_lib.library_path())
    assert sorted(n for n in ours if n not in exported) == []

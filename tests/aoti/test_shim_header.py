"""slimtensor/c/shim.h and shim_cpu.h declare torch 2.13's shim functions: same names, same C signatures."""

from __future__ import annotations

import importlib.util
import os
import re

import pytest
from slimtensor.aoti import _cdecl

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
    """name -> (return type, parameter types) of the aoti_torch_* functions, through the one parser."""
    return {
        n: (p.restype, tuple(EQUIVALENT.get(t, t) for t in p.types))
        for n, p in _cdecl.parse(text, export, prefix="aoti_torch_").items()
    }


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
    # the CPU fallbacks: torchgen's generated header and the hand-written c/shim_cpu.h (int4 mm, oneDNN ops)
    for h in (os.path.join("generated", "c_shim_cpu.h"), os.path.join("c", "shim_cpu.h")):
        with open(os.path.join(base, h)) as f:
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


def test_parser_reads_the_declaration_forms_the_headers_use():
    text = """
    /* a comment with SLIMTENSOR_C_API int32_t not_this(void); inside */
    #define SLIMTENSOR_C_API __attribute__((visibility("default")))
    SLIMTENSOR_C_API int32_t aoti_torch_a(void);
    SLIMTENSOR_C_API AOTITorchError aoti_torch_b(AtenTensorHandle self, const int64_t *sizes_ptr,
                                                 int64_t ** ret, bool* flag);  // trailing
    SLIMTENSOR_C_API void slimtensor_c(const char* msg, slimtensor_complex64 value, double);
    """
    p = _cdecl.parse(text)
    assert sorted(p) == ["aoti_torch_a", "aoti_torch_b", "slimtensor_c"]
    assert p["aoti_torch_a"].params == ()
    b = p["aoti_torch_b"]
    assert b.restype == "AOTITorchError"
    assert b.types == ("AtenTensorHandle", "const int64_t*", "int64_t**", "bool*")
    assert [q.name for q in b.params] == ["self", "sizes_ptr", "ret", "flag"]
    assert p["slimtensor_c"].types == ("const char*", "slimtensor_complex64", "double")
    assert p["slimtensor_c"].params[2].name == ""
    assert _cdecl.ctype("const int64_t*")._type_ is __import__("ctypes").c_int64
    with pytest.raises(_cdecl.UnknownType):
        _cdecl.ctype("struct mystery*")


def test_every_shipped_declaration_is_bound_from_the_header():
    """The headers are the one source of the prototypes (no hand-kept copy can drift): each function they
    declare maps to ctypes types and is exported, and _lib binds exactly those types."""
    from slimtensor.aoti import _elf, _lib

    protos = _lib.prototypes()
    assert {
        "aoti_torch_empty_strided",
        "aoti_torch_cpu_addmm_out",
        "slimtensor_aoti_handle_from_dlpack",
        "slimtensor_aoti_owner_adopt_output",
        "slimtensor_last_error",
    } <= set(protos)
    exported = _elf.defined_symbols(_lib.library_path())
    assert sorted(n for n in protos if n not in exported) == []
    lib = _lib.lib()
    for name, p in protos.items():
        f = getattr(lib, name)
        assert f.restype == _cdecl.ctype(p.restype), name
        assert list(f.argtypes) == [_cdecl.ctype(t) for t in p.types], name
    # what the shipped headers are: the source tree's (an installed copy of them)
    for h in _lib.HEADERS:
        with open(os.path.join(INCLUDE, h)) as src, open(os.path.join(_lib.header_dir(), h)) as shipped:
            assert src.read() == shipped.read(), (
                f"{h}: the installed header differs from the source (rebuild)"
            )

"""C function declarations, parsed from a header: the one source of the prototypes ctypes needs.

Note [One source for the C prototypes]
slimtensor's C ABI is declared once, in its headers (slimtensor/c/shim.h, shim_cpu.h, aoti_host.h, shipped in
the wheel under include/). Everything else that needs the prototypes parses them from there: slimtensor.aoti's
ctypes bindings (_lib.lib() declares every function of those headers), the C-level tests (tests/aoti), and the
comparison with torch's own shim headers (tests/aoti/test_shim_header.py parses torch's headers with the same
code). So no prototype is written twice, and a header edit reaches every user. The parser reads the subset of
C those headers use: one declaration per ``EXPORT <return type> <name>(<parameters>);`` with an export macro,
scalar and pointer types, typedef'd handles, by-value structs; comments and preprocessor lines are ignored.
It is meant also for torch's generated op-fallback headers (``AOTI_TORCH_EXPORT``), which have the same shape.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Param:
    type: str  # normalized: single spaces, '*' attached to the type ("const int64_t*")
    name: str  # "" when the declaration gives none


@dataclass(frozen=True)
class Prototype:
    name: str
    restype: str
    params: tuple[Param, ...]

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(p.type for p in self.params)


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_PREPROCESSOR = re.compile(r"^\s*#[^\n]*(?:\\\n[^\n]*)*", re.M)


def _normalize(text: str) -> str:
    text = " ".join(text.split())
    text = re.sub(r"\s*\*\s*", "*", text)
    return text.strip()


def _param(text: str) -> Param:
    text = _normalize(text)
    m = re.match(r"^(.*?[\w\*>])\s*\b([A-Za-z_]\w*)$", text)
    # "int64_t n" -> (int64_t, n); "int64_t" -> (int64_t, ""); "const char* msg" -> (const char*, msg)
    if m and m.group(1).strip() and m.group(1).strip() not in ("const", "struct", "unsigned", "signed"):
        return Param(_normalize(m.group(1)), m.group(2))
    return Param(text, "")


def parse(text: str, export: str = "SLIMTENSOR_C_API", prefix: str = "") -> dict[str, Prototype]:
    """The functions declared with the `export` macro in C source `text`, by name (names starting `prefix`)."""
    text = _PREPROCESSOR.sub("", _COMMENTS.sub("", text))
    out: dict[str, Prototype] = {}
    pattern = (
        re.escape(export) + r"\s+([\w:<>\s\*]+?)\s*\b(" + re.escape(prefix) + r"\w*)\s*\(([^;{)]*)\)\s*;"
    )
    for m in re.finditer(pattern, text):
        restype, name, params = _normalize(m.group(1)), m.group(2), m.group(3).strip()
        ps = () if params in ("", "void") else tuple(_param(p) for p in params.split(","))
        out[name] = Prototype(name, restype, ps)
    return out


def parse_files(paths: list[str], export: str = "SLIMTENSOR_C_API", prefix: str = "") -> dict[str, Prototype]:
    out: dict[str, Prototype] = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            out.update(parse(f.read(), export, prefix))
    return out


# ---- ctypes -------------------------------------------------------------------------------------------------


class Complex64(ctypes.Structure):
    _fields_ = [("real", ctypes.c_float), ("imag", ctypes.c_float)]


class Complex128(ctypes.Structure):
    _fields_ = [("real", ctypes.c_double), ("imag", ctypes.c_double)]


class MemoryRef(ctypes.Structure):
    """struct st_memory_ref of slimtensor/c/device_plugin.h."""

    _fields_ = [
        ("handle", ctypes.c_void_p),
        ("byte_offset", ctypes.c_uint64),
        ("device_index", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
    ]


_SCALARS: dict[str, Any] = {
    "int8_t": ctypes.c_int8,
    "int16_t": ctypes.c_int16,
    "int32_t": ctypes.c_int32,
    "int64_t": ctypes.c_int64,
    "uint8_t": ctypes.c_uint8,
    "uint16_t": ctypes.c_uint16,
    "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_size_t,
    "int": ctypes.c_int,
    "bool": ctypes.c_bool,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "char": ctypes.c_char,
    # slimtensor's ABI-identical stand-ins for c10's value types (slimtensor/c/shim.h)
    "slimtensor_half": ctypes.c_uint16,
    "slimtensor_bfloat16": ctypes.c_uint16,
    "slimtensor_complex64": Complex64,
    "slimtensor_complex128": Complex128,
    "AOTITorchError": ctypes.c_int32,
    "st_memory_ref": MemoryRef,
}
# Opaque handles and function pointers: passed as addresses.
_OPAQUE = {
    "AtenTensorHandle",
    "slimtensor_model_release_fn",
    "AOTInductorStreamHandle",
    "AOTIProxyExecutorHandle",
}


class UnknownType(ValueError):
    """A C type the ctypes mapping does not know (add it to _SCALARS or _OPAQUE)."""


def ctype(c_type: str) -> Any:
    """The ctypes type for a normalized C type ("const int64_t*" -> POINTER(c_int64)); None for void."""
    t = re.sub(r"\bconst\b", "", c_type).replace("struct ", "")
    t = _normalize(t)
    stars = len(t) - len(t.rstrip("*"))
    base = t.rstrip("*").strip()
    if base == "void":
        return None if stars == 0 else (ctypes.c_void_p if stars == 1 else ctypes.POINTER(ctypes.c_void_p))
    if base == "char" and stars == 1:
        return ctypes.c_char_p
    if base in _OPAQUE:
        result: Any = ctypes.c_void_p
    elif base in _SCALARS:
        result = _SCALARS[base]
    else:
        raise UnknownType(f"no ctypes mapping for the C type {c_type!r}")
    for _ in range(stars):
        result = ctypes.POINTER(result)
    return result


def declare(lib: ctypes.CDLL, prototypes: dict[str, Prototype]) -> list[str]:
    """Sets restype and argtypes of every prototype's function in lib; returns the names lib lacks."""
    missing = []
    for name, p in prototypes.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        f.restype = ctype(p.restype)
        f.argtypes = [ctype(t) for t in p.types]
    return missing

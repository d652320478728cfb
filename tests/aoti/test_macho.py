"""slimtensor.aoti._macho: reading and rebinding Mach-O models (Note [Binding a Mach-O model]), run on Linux.

The images are real Mach-O files for arm64 macOS, built here with clang and LLVM's ld64.lld (16 or newer, for
chained fixups) the way torch links a model (-undefined dynamic_lookup), and checked after the rewrite with
llvm-objdump and llvm-nm. Those tests skip, saying so, without the toolchain (apt-get install clang lld-16
llvm-16). dyld itself never runs here: whether macOS loads the rewritten file is tested on a Mac only
(tests/metal/test_mps_aoti.py). The malformed-file tests build their bytes by hand and need no toolchain.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import struct
import subprocess

import pytest
from slimtensor.aoti import _macho
from slimtensor.aoti._macho import MachOError
from slimtensor.aoti._model import AOTIError, bind_macho_model

CORE = "/opt/st/lib/libslimtensor.dylib"  # provider paths as the loader passes them (absolute, real)
METAL = "/opt/st/slimtensor_metal/_metal.cpython-312-darwin.so"


def _tool(names: list[str], probe: list[str], want: str) -> str | None:
    for name in names:
        path = shutil.which(name)
        if path is None:
            continue
        r = subprocess.run([path, *probe], capture_output=True, text=True)
        if want in r.stdout + r.stderr:
            return path
    return None


def _versions(base: str) -> list[str]:
    return [base] + [f"{base}-{v}" for v in range(21, 13, -1)]


CLANG = _tool(_versions("clang"), ["--version"], "clang")
LD64 = _tool(_versions("ld64.lld"), ["-fixup_chains", "--help"], "fixup_chains")
OBJDUMP = _tool(_versions("llvm-objdump"), ["--help"], "--dyld-info")
NM = _tool(_versions("llvm-nm"), ["--version"], "LLVM")
TOOLCHAIN = CLANG and LD64 and OBJDUMP and NM
needs_toolchain = pytest.mark.skipif(
    not TOOLCHAIN,
    reason="needs clang, ld64.lld >= 16 (chained fixups), llvm-objdump with --dyld-info and llvm-nm: "
    "apt-get install clang lld-16 llvm-16",
)

MODEL_C = r"""
typedef int AOTITorchError;
extern AOTITorchError aoti_torch_empty_strided(long n, void** out);
extern AOTITorchError aoti_torch_delete_tensor_object(void* h);
extern AOTITorchError aoti_torch_mps_malloc(void** buffer, unsigned long n);
extern float Sleef_expf_u10(float);
/* a data pointer to a shim: a bind outside the GOT, as a model's tables have */
void* const model_table[] = {(void*)&aoti_torch_delete_tensor_object, (void*)&aoti_torch_mps_malloc};
int AOTInductorModelContainerCreateWithDevice(void** out) {
  void* h = 0;
  aoti_torch_empty_strided(4, &h);
  aoti_torch_mps_malloc(out, 16);
  return aoti_torch_delete_tensor_object(h) SLEEF;
}
"""
CORE_C = r"""
int aoti_torch_empty_strided(long n, void** out) { *out = 0; return (int)n; }
int aoti_torch_delete_tensor_object(void* h) { return h != 0; }
static int not_exported(void) { return 3; }
int slimtensor_last_error_probe(void) { return not_exported(); }
"""
METAL_C = r"""
int aoti_torch_mps_malloc(void** b, unsigned long n) { *b = 0; return (int)n; }
int PyInit__metal(void) { return 0; }
"""


class Toolchain:
    def __init__(self, folder):
        self.folder = folder

    def _object(self, name: str, source: str, defines=()) -> str:
        src, obj = self.folder / f"{name}.c", self.folder / f"{name}.o"
        src.write_text(source)
        cmd = [
            CLANG,
            "-target",
            "arm64-apple-macos12",
            "-fPIC",
            "-O1",
            *defines,
            "-c",
            str(src),
            "-o",
            str(obj),
        ]
        subprocess.run(cmd, check=True, capture_output=True)
        return str(obj)

    def link(self, name: str, source: str, *flags: str, kind: str = "-dylib", defines=()) -> str:
        out = str(self.folder / name)
        obj = self._object(name.replace(".", "_"), source, defines)
        cmd = [
            LD64,
            "-arch",
            "arm64",
            "-platform_version",
            "macos",
            "12.0",
            "12.0",
            kind,
            *flags,
            "-o",
            out,
            obj,
        ]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return out

    def model(self, name: str = "model.so", *flags: str, sleef: bool = False) -> str:
        defines = ["-DSLEEF=+(int)Sleef_expf_u10(1.0f)" if sleef else "-DSLEEF="]
        if "-no_fixup_chains" not in flags:
            flags = ("-fixup_chains", *flags)  # what ld64 does for macOS 12 and later
        return self.link(
            name,
            MODEL_C,
            "-undefined",
            "dynamic_lookup",
            "-headerpad_max_install_names",
            *flags,
            defines=defines,
        )


@pytest.fixture
def tc(tmp_path):
    return Toolchain(tmp_path)


def _providers(tc) -> list[tuple[str, set[str]]]:
    core = tc.link("libslimtensor.dylib", CORE_C, "-install_name", "@rpath/libslimtensor.dylib")
    metal = tc.link("_metal.so", METAL_C, "-undefined", "dynamic_lookup", kind="-bundle")
    return [(CORE, _macho.defined_symbols(core)), (METAL, _macho.defined_symbols(metal))]


def _objdump(*args: str) -> str:
    return subprocess.run([OBJDUMP, "--macho", *args], check=True, capture_output=True, text=True).stdout


def _nm(path: str) -> dict[str, str]:
    out = subprocess.run([NM, "-m", path], check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s*\(undefined\) external _?(\w+) \((.*)\)$", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def _section(path: str, segment: str, section: str) -> bytes:
    data = open(path, "rb").read()
    m = _macho._MachO(data, path)
    (off, size) = next((o, s) for seg, sec, o, s, _ in m.sections if (seg, sec) == (segment, section))
    return data[off : off + size]


# --- reading -------------------------------------------------------------------------------------------------


@needs_toolchain
def test_the_names_an_image_imports_and_exports(tc) -> None:
    model = tc.model(sleef=True)
    assert _macho.undefined_symbols(model) == {
        "aoti_torch_empty_strided",
        "aoti_torch_delete_tensor_object",
        "aoti_torch_mps_malloc",
        "Sleef_expf_u10",
    }
    assert {"AOTInductorModelContainerCreateWithDevice", "model_table"} <= _macho.defined_symbols(model)
    core = tc.link("libslimtensor.dylib", CORE_C)
    # the export trie: what dyld finds, and nothing static
    assert _macho.defined_symbols(core) == {
        "aoti_torch_empty_strided",
        "aoti_torch_delete_tensor_object",
        "slimtensor_last_error_probe",
    }
    # as torch links it, every shim is looked up in the flat namespace, wherever it is bound from
    assert all(where == {"flat"} for where in _macho.bindings(model).values())
    assert _macho.dependent_libraries(model) == []


# --- the rewrite ---------------------------------------------------------------------------------------------


@needs_toolchain
@pytest.mark.parametrize("fixups", ["-fixup_chains", "-no_fixup_chains"])
def test_each_flat_shim_is_bound_to_the_image_that_exports_it(tc, fixups) -> None:
    model = tc.model("model.so", fixups, sleef=True)
    before = open(model, "rb").read()
    text = _section(model, "__TEXT", "__text")

    rebound = _macho.bind_flat_imports(model, _providers(tc))

    assert rebound == {
        "aoti_torch_empty_strided": CORE,
        "aoti_torch_delete_tensor_object": CORE,
        "aoti_torch_mps_malloc": METAL,
    }
    assert _macho.dependent_libraries(model) == [CORE, METAL]
    assert _macho.bindings(model) == {
        "aoti_torch_empty_strided": {CORE},
        "aoti_torch_delete_tensor_object": {CORE},
        "aoti_torch_mps_malloc": {METAL},
        "Sleef_expf_u10": {"flat"},  # no provider exports it: left as it was
        **({"dyld_stub_binder": {"flat"}} if fixups == "-no_fixup_chains" else {}),
    }
    # what LLVM's tools read from the rewritten file
    headers = _objdump("--private-headers", model)
    assert re.findall(r"cmd LC_LOAD_DYLIB\n\s+cmdsize \d+\n\s+name (\S+) \(offset 24\)", headers) == [
        CORE,
        METAL,
    ]
    binds = _objdump("--dyld-info" if fixups == "-fixup_chains" else "--bind", model)
    if fixups == "-no_fixup_chains":
        binds += _objdump("--lazy-bind", model)
    rows = [line.split() for line in binds.splitlines() if "_aoti_torch" in line or "_Sleef" in line]
    by_symbol: dict[str, set[str]] = {}
    for row in rows:
        by_symbol.setdefault(row[-1], set()).add(row[-2])
    assert by_symbol == {
        "_aoti_torch_empty_strided": {"libslimtensor"},  # objdump names a dylib by its leaf name
        "_aoti_torch_delete_tensor_object": {"libslimtensor"},
        "_aoti_torch_mps_malloc": {METAL},  # ... unless it has no .dylib suffix
        "_Sleef_expf_u10": {"flat-namespace"},
    }
    assert _nm(model) == {
        "aoti_torch_empty_strided": "from libslimtensor",
        "aoti_torch_delete_tensor_object": "from libslimtensor",
        "aoti_torch_mps_malloc": f"from {METAL}",
        "Sleef_expf_u10": "dynamically looked up",
        **({"dyld_stub_binder": "dynamically looked up"} if fixups == "-no_fixup_chains" else {}),
    }
    # no byte of code moved; the file did not grow
    after = open(model, "rb").read()
    assert _section(model, "__TEXT", "__text") == text and len(after) == len(before)


@needs_toolchain
def test_binding_again_changes_nothing(tc) -> None:
    model = tc.model()
    providers = _providers(tc)
    _macho.bind_flat_imports(model, providers)
    once = open(model, "rb").read()
    assert _macho.bind_flat_imports(model, providers) == {}  # nothing flat is left that they export
    assert open(model, "rb").read() == once


@needs_toolchain
def test_the_first_provider_that_exports_a_name_wins(tc) -> None:
    model = tc.model()
    core, metal = _providers(tc)
    both = (METAL, metal[1] | {"aoti_torch_empty_strided"})
    _macho.bind_flat_imports(model, [both, core])
    assert _macho.bindings(model)["aoti_torch_empty_strided"] == {METAL}
    assert _macho.dependent_libraries(model) == [METAL, CORE]


@needs_toolchain
def test_without_room_for_the_load_commands_nothing_is_written(tc) -> None:
    # lld places the first section right after the load commands unless asked for padding (ld64 leaves more)
    model = tc.link("tight.so", MODEL_C, "-undefined", "dynamic_lookup", defines=["-DSLEEF="])
    before = open(model, "rb").read()
    with pytest.raises(MachOError, match=r"no room for the load commands .*-headerpad_max_install_names"):
        _macho.bind_flat_imports(model, _providers(tc))
    assert open(model, "rb").read() == before


@needs_toolchain
def test_a_flat_namespace_image_is_refused(tc) -> None:
    model = tc.model("flat.so", "-flat_namespace")
    with pytest.raises(MachOError, match=r"flat-namespace image"):
        _macho.bind_flat_imports(model, _providers(tc))


def test_a_provider_must_be_an_absolute_path(tmp_path) -> None:
    path = tmp_path / "m.so"
    path.write_bytes(_image([], flags=_macho.MH_TWOLEVEL))
    with pytest.raises(MachOError, match=r"must be an absolute path, got 'libslimtensor.dylib'"):
        _macho.bind_flat_imports(str(path), [("libslimtensor.dylib", {"aoti_torch_empty_strided"})])


# --- the code signature --------------------------------------------------------------------------------------


def _code_directories(data: bytes) -> list[tuple[int, int, int, int, int, int]]:
    """(hash offset in file, slot count, hash size, page size, code limit, hash type) of each CodeDirectory,
    read with this test's own parser."""
    ncmds = struct.unpack_from("<I", data, 16)[0]
    off, sig = 32, None
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, off)
        if cmd == _macho.LC_CODE_SIGNATURE:
            sig = struct.unpack_from("<I", data, off + 8)[0]
        off += size
    assert sig is not None, "no LC_CODE_SIGNATURE"
    _, _, count = struct.unpack_from(">III", data, sig)
    out = []
    for i in range(count):
        _, blob_off = struct.unpack_from(">II", data, sig + 12 + 8 * i)
        blob = sig + blob_off
        if struct.unpack_from(">I", data, blob)[0] != 0xFADE0C02:
            continue
        hash_off, _, _, n_code, limit = struct.unpack_from(">IIIII", data, blob + 16)
        hash_size, hash_type, _, page_log2 = data[blob + 36 : blob + 40]
        out.append((blob + hash_off, n_code, hash_size, 1 << page_log2, limit, hash_type))
    return out


@needs_toolchain
def test_re_signing_reproduces_the_linkers_ad_hoc_signature(tc) -> None:
    """The page hashes zeroed, then recomputed: byte for byte what ld64.lld wrote."""
    model = tc.model()
    signed = open(model, "rb").read()
    directories = _code_directories(signed)
    assert directories and all(t == 2 for *_, t in directories)  # SHA-256, as the linker signs on arm64
    data = bytearray(signed)
    for at, n, size, *_ in directories:
        data[at : at + n * size] = bytes(n * size)
    _macho._resign(_macho._MachO(data, model), data)
    assert bytes(data) == signed


@needs_toolchain
def test_the_rewritten_image_is_signed_over_its_new_bytes(tc) -> None:
    model = tc.model()
    old = _code_directories(open(model, "rb").read())
    _macho.bind_flat_imports(model, _providers(tc))
    data = open(model, "rb").read()
    for at, n, size, page, limit, _ in _code_directories(data):
        for i in range(n):
            page_bytes = data[i * page : min((i + 1) * page, limit)]
            assert data[at + i * size : at + (i + 1) * size] == hashlib.sha256(page_bytes).digest()[:size]
    assert _code_directories(data) == old  # same slots, same places: only the hashes changed


# --- the loader's Mach-O step (all but dyld) -----------------------------------------------------------------


@needs_toolchain
def test_the_loader_refuses_a_model_that_uses_sleef_on_macos(tc) -> None:
    model = tc.model(sleef=True)
    with pytest.raises(AOTIError, match=r"SLEEF vector math \(Sleef_expf_u10.*Linux only.*cpp.simdlen=0"):
        bind_macho_model(model, "m.pt2", _providers(tc))


@needs_toolchain
def test_the_loader_refuses_a_model_linked_against_libtorch(tc) -> None:
    torch_cpu = tc.link("libtorch_cpu.dylib", CORE_C, "-install_name", "@rpath/libtorch_cpu.dylib")
    model = tc.model("linked.so", torch_cpu)  # aoti_torch_empty_strided etc. two-level to libtorch_cpu
    with pytest.raises(AOTIError, match=r"binds 2 shim\(s\) to other libraries, e.g\. .*link_libtorch=False"):
        bind_macho_model(model, "m.pt2", _providers(tc))


@needs_toolchain
def test_the_loader_binds_a_model_to_the_core_and_the_plugin(tc) -> None:
    model = tc.model()
    assert set(bind_macho_model(model, "m.pt2", _providers(tc)).values()) == {CORE, METAL}


# --- malformed files (no toolchain) --------------------------------------------------------------------------


def _image(
    commands: list[bytes], filetype: int = _macho.MH_DYLIB, flags: int = _macho.MH_TWOLEVEL, tail: bytes = b""
) -> bytes:
    body = b"".join(commands)
    header = struct.pack(
        "<IiiIIIII", _macho.MH_MAGIC_64, 0x0100000C, 0, filetype, len(commands), len(body), flags, 0
    )
    return header + body + tail


def _linkedit(cmd: int, off: int, size: int) -> bytes:
    return struct.pack("<IIII", cmd, 16, off, size)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x7fELF" + bytes(60), r"not a 64-bit little-endian Mach-O file \(bad magic 0x464c457f\)"),
        (b"\xca\xfe\xba\xbe" + bytes(60), r"universal \(fat\) Mach-O file; .*lipo -thin"),
        (b"\xcf\xfa", r"shorter than its magic number"),
        (
            struct.pack("<I", _macho.MH_MAGIC_64) + bytes(12),
            r"truncated Mach-O header \(16 bytes, 32 needed\)",
        ),
        (
            struct.pack("<IiiIIIII", _macho.MH_MAGIC_64, 0, 0, 6, 1, 4096, 0, 0),
            r"the load commands \(4096 bytes\) run past the end of the file",
        ),
        (_image([struct.pack("<II", 0x19, 0)]), r"load command 0 \(0x19\) has a bad size 0"),
        (_image([struct.pack("<II", 0x2, 12) + bytes(4)]), r"load command 0 \(0x2\) has a bad size 12"),
        (
            _image(
                [
                    struct.pack("<II", 0x19, 72)
                    + b"__DATA".ljust(16, b"\0")
                    + struct.pack("<QQQQ", 0, 0, 4096, 64)
                    + bytes(16)
                ]
            ),
            r"segment __DATA \(bytes 0x1000\.\.0x1040\) runs past the end of the file",
        ),
        (
            _image([_linkedit(_macho.LC_DYLD_CHAINED_FIXUPS, 48, 16)], tail=bytes(16)),
            r"the chained fixups header is truncated \(16 bytes, 28 needed\)",
        ),
        (
            _image([_linkedit(_macho.LC_DYLD_CHAINED_FIXUPS, 48, 64)]),
            r"the data of load command 0x80000034 \(bytes 0x30\.\.0x70\) runs past the end of the file",
        ),
    ],
    ids=[
        "elf",
        "fat",
        "short",
        "header",
        "cmds-past-end",
        "cmdsize-0",
        "cmdsize-unaligned",
        "segment",
        "fixups-header",
        "fixups-past-end",
    ],
)
def test_a_malformed_file_is_refused_with_the_reason(tmp_path, data, message) -> None:
    path = tmp_path / "bad.so"
    path.write_bytes(data)
    with pytest.raises(MachOError, match=message):
        _macho.bindings(str(path))
    with pytest.raises(MachOError, match=message):
        _macho.bind_flat_imports(str(path), [(CORE, {"aoti_torch_empty_strided"})])
    assert path.read_bytes() == data  # nothing written


def test_chained_imports_past_their_table_are_refused(tmp_path) -> None:
    # header: version 0, imports at 28, names at 32, 4 imports of format 1 (16 bytes: past the 40 given)
    fixups = struct.pack("<7I", 0, 0, 28, 32, 4, 1, 0) + bytes(12)
    path = tmp_path / "bad.so"
    path.write_bytes(_image([_linkedit(_macho.LC_DYLD_CHAINED_FIXUPS, 48, len(fixups))], tail=fixups))
    with pytest.raises(MachOError, match=r"chained-fixups imports run past"):
        _macho.bindings(str(path))


def test_an_import_name_outside_its_table_is_refused(tmp_path) -> None:
    entry = 0x7FFFFF << 9 | 0xFE  # flat, name offset far past the table
    fixups = struct.pack("<7I", 0, 0, 28, 32, 1, 1, 0) + struct.pack("<I", entry) + b"_x\0\0"
    path = tmp_path / "bad.so"
    path.write_bytes(_image([_linkedit(_macho.LC_DYLD_CHAINED_FIXUPS, 48, len(fixups))], tail=fixups))
    with pytest.raises(MachOError, match=r"chained-fixups import name starts outside its table"):
        _macho.bindings(str(path))


def test_an_export_trie_with_a_cycle_is_refused(tmp_path) -> None:
    trie = b"\x00\x01a\x00\x00"  # root: not terminal, one edge "a" back to the root
    path = tmp_path / "bad.so"
    path.write_bytes(_image([_linkedit(_macho.LC_DYLD_EXPORTS_TRIE, 48, len(trie))], tail=trie))
    with pytest.raises(MachOError, match=r"export trie has a cycle"):
        _macho.defined_symbols(str(path))


def test_an_unknown_bind_opcode_is_refused(tmp_path) -> None:
    info = struct.pack("<II10I", _macho.LC_DYLD_INFO_ONLY, 48, 0, 0, 80, 2, 0, 0, 0, 0, 0, 0)
    path = tmp_path / "bad.so"
    path.write_bytes(_image([info], tail=b"\xe0\x00"))
    with pytest.raises(MachOError, match=r"unknown bind opcode 0xe0 at 0x50"):
        _macho.bindings(str(path))


def test_a_uleb_past_its_stream_is_refused(tmp_path) -> None:
    info = struct.pack("<II10I", _macho.LC_DYLD_INFO_ONLY, 48, 0, 0, 80, 2, 0, 0, 0, 0, 0, 0)
    path = tmp_path / "bad.so"
    path.write_bytes(_image([info], tail=b"\x20\x80"))  # SET_DYLIB_ORDINAL_ULEB, continuation, end
    with pytest.raises(MachOError, match=r"ULEB128 number runs past its table"):
        _macho.bindings(str(path))


def test_an_unreadable_file_says_so(tmp_path) -> None:
    with pytest.raises(MachOError, match=r"cannot read"):
        _macho.undefined_symbols(str(tmp_path / "absent.so"))

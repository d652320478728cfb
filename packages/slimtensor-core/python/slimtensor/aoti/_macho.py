"""The Mach-O (macOS) platform module of slimtensor.aoti: reads and rebinds 64-bit little-endian Mach-O images.

What it does:
  - ``undefined_symbols(path)`` / ``defined_symbols(path)``: the names an image imports (its symbol table's
    undefined externals) and exports (its export trie, what dyld looks names up in), as C names (no leading
    underscore);
  - ``dependent_libraries(path)``: its dylib load commands, in ordinal order;
  - ``bindings(path)``: where each imported name is bound: a dependent's name, or ``"flat"`` (looked up in
    the flat namespace), ``"self"``, ``"main"``, ``"weak"``;
  - ``bind_flat_imports(path, providers)``: the rewrite (Note [Binding a Mach-O model]).

Note [Binding a Mach-O model]
torch's AOTInductor links a model on macOS with ``clang++ -shared -fPIC -undefined dynamic_lookup``
(torch/_inductor/cpp_builder.py, ``_get_shared_cflags``): an ``MH_DYLIB`` with a two-level namespace in which
every name the linker did not find (the ``aoti_torch_*`` shims, the MPS shims) is imported with the special
ordinal ``BIND_SPECIAL_DYLIB_FLAT_LOOKUP`` (-2). dyld resolves such an import by searching every loaded image
in load order, skipping the images that were dlopen'ed ``RTLD_LOCAL`` (dyld's ``Loader::resolveSymbol``; only
the image named in that dlopen is hidden, not its dependents). So loaded as torch builds it, a model binds to
whichever ``aoti_torch_*`` provider was loaded first: libtorch, when torch was imported before slimtensor.
RTLD_LOCAL on the model does not help: it hides the model's own exports, not where its imports come from.

``bind_flat_imports`` gives the image what the ELF path gets from ``DT_NEEDED`` + ``RTLD_DEEPBIND``, but
exactly: for each provider (absolute path, the names it exports), in order, it appends an ``LC_LOAD_DYLIB``
naming that path (in the zero padding between the load commands and the first section; no other byte moves)
and turns every flat import that the provider defines (first provider wins) into a two-level import of that
dylib's ordinal: in the chained-fixups import table (``LC_DYLD_CHAINED_FIXUPS``), or in the bind opcodes
(``LC_DYLD_INFO``: the lazy entries in place, one byte each; the regular stream re-encoded, its ordinal
opcodes emitted only where the ordinal changes, and refused if it outgrows its padding), and in the symbol
table's ``n_desc`` (what ``nm -m`` shows). Imports that no provider defines stay flat. dyld then finds each
import in exactly that image, whether or not it is hidden from the flat namespace, and nothing else in the
process can take it. Each provider must already be loaded: dyld matches a dependent to a loaded image by path
or by inode and mtime (``Loader::getLoader``) before it opens any file, which is also why the Metal plugin's
Python extension (an ``MH_BUNDLE``, which dyld refuses to load as a dependent) can be one.
Last, the ad-hoc code signature (``LC_CODE_SIGNATURE``, which the linker writes on arm64, where the kernel
refuses unsigned code) is brought up to date: each CodeDirectory's code-page hashes are recomputed over the
rewritten bytes; nothing else in it depends on them. An image signed with an identity (a CMS blob) is
refused: only its signer can sign it again.
Note [Out of the flat namespace]
The other half of the isolation: slimtensor's own shims must not be found by the flat lookups of other images
(a stock torch model, whose imports are flat too, would bind to whichever provider was loaded first). dyld
hides an image from flat lookups only when it creates it for a dlopen with ``RTLD_LOCAL`` that names it
directly (``hidden`` in dyld's JustInTimeLoader; ``RTLD_LOCAL only effects top level dylib``), and a later
dlopen of it without ``RTLD_LOCAL`` unhides it. Python opens extension modules with ``sys.getdlopenflags()``
(``RTLD_NOW``: global, on macOS). So ``import slimtensor`` opens libslimtensor.dylib itself, ``RTLD_LOCAL``,
before ``slimtensor._C`` loads it as a dependent (dyld matches that dependency, ``@rpath/libslimtensor.dylib``,
to the image already loaded by its install name); and ``slimtensor_metal`` imports ``_metal`` with
``RTLD_LOCAL`` added to the dlopen flags. Two-level imports (our bound models, libtorch's own calls) reach
hidden images all the same.

Anything this module does not understand (a fat file, a flat-namespace image, compressed import names,
threaded binds, no room for the load commands) raises ``MachOError`` with the reason; nothing is written then.
"""

from __future__ import annotations

import hashlib
import os
import struct

MH_MAGIC_64 = 0xFEEDFACF
FAT_MAGICS = (0xCAFEBABE, 0xBEBAFECA, 0xCAFEBABF, 0xBFBAFECA)
MH_DYLIB, MH_BUNDLE = 6, 8
MH_TWOLEVEL, MH_FORCE_FLAT = 0x80, 0x100
LC_SYMTAB, LC_SEGMENT_64, LC_LOAD_DYLIB, LC_CODE_SIGNATURE = 0x2, 0x19, 0xC, 0x1D
LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB, LC_LAZY_LOAD_DYLIB, LC_LOAD_UPWARD_DYLIB = (
    0x80000018,
    0x8000001F,
    0x20,
    0x80000023,
)
DYLIB_COMMANDS = (
    LC_LOAD_DYLIB,
    LC_LOAD_WEAK_DYLIB,
    LC_REEXPORT_DYLIB,
    LC_LAZY_LOAD_DYLIB,
    LC_LOAD_UPWARD_DYLIB,
)
LC_DYLD_INFO, LC_DYLD_INFO_ONLY = 0x22, 0x80000022
LC_DYLD_EXPORTS_TRIE, LC_DYLD_CHAINED_FIXUPS = 0x80000033, 0x80000034
ORDINAL_SELF, ORDINAL_MAIN, ORDINAL_FLAT, ORDINAL_WEAK = 0, -1, -2, -3
_SPECIAL = {ORDINAL_SELF: "self", ORDINAL_MAIN: "main", ORDINAL_FLAT: "flat", ORDINAL_WEAK: "weak"}
_ZEROFILL = (0x1, 0xC, 0x12)  # S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL: no bytes in the file

# bind opcodes (mach-o/loader.h)
BIND_DONE, BIND_DYLIB_IMM, BIND_DYLIB_ULEB, BIND_DYLIB_SPECIAL = 0x00, 0x10, 0x20, 0x30
BIND_SYMBOL, BIND_TYPE, BIND_ADDEND, BIND_SEGMENT = 0x40, 0x50, 0x60, 0x70
BIND_ADD_ADDR, BIND_DO, BIND_DO_ADD_ULEB, BIND_DO_ADD_SCALED, BIND_DO_TIMES, BIND_THREADED = (
    0x80,
    0x90,
    0xA0,
    0xB0,
    0xC0,
    0xD0,
)
_DO_BIND = (BIND_DO, BIND_DO_ADD_ULEB, BIND_DO_ADD_SCALED, BIND_DO_TIMES)

# code signing (big-endian blobs)
CSMAGIC_EMBEDDED_SIGNATURE, CSMAGIC_CODEDIRECTORY, CSMAGIC_BLOBWRAPPER = 0xFADE0CC0, 0xFADE0C02, 0xFADE0B01
CS_ADHOC = 0x2
_CS_HASHES = {1: ("sha1", 20), 2: ("sha256", 32), 3: ("sha256", 20), 4: ("sha384", 48)}


class MachOError(ValueError):
    """The file is not a Mach-O image this module can read or rebind."""


def _leb128(data, pos: int, end: int, path: str, signed: bool = False) -> tuple[int, int]:
    """The (S/U)LEB128 number at ``pos`` (before ``end``) and the position after it."""
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise MachOError(
                f"{path}: a {'S' if signed else 'U'}LEB128 number runs past its table or past 64 bits"
            )
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (value - (1 << shift) if signed and byte & 0x40 else value), pos


def _encode_ordinal(ordinal: int) -> bytes:
    if ordinal <= 0:
        return bytes([BIND_DYLIB_SPECIAL | (ordinal & 0xF)])
    if ordinal <= 0xF:
        return bytes([BIND_DYLIB_IMM | ordinal])
    out = bytearray([BIND_DYLIB_ULEB])
    while True:
        byte, ordinal = ordinal & 0x7F, ordinal >> 7
        out.append(byte | (0x80 if ordinal else 0))
        if not ordinal:
            return bytes(out)


def _c_name(raw: str) -> str:
    return raw[1:] if raw.startswith("_") else raw


class _BindOp:
    """One opcode of a bind stream: its bytes, and the state it sets or the bind it does."""

    __slots__ = ("start", "end", "opcode", "ordinal", "symbol")

    def __init__(self, start, end, opcode, ordinal=None, symbol=None):
        self.start, self.end, self.opcode, self.ordinal, self.symbol = start, end, opcode, ordinal, symbol


class _MachO:
    def __init__(self, data: bytes | bytearray, path: str):
        self.data, self.path = data, path
        if len(data) < 4:
            raise MachOError(f"{path}: not a Mach-O file (shorter than its magic number)")
        (magic,) = struct.unpack_from("<I", data, 0)
        if magic in FAT_MAGICS or struct.unpack_from(">I", data, 0)[0] in FAT_MAGICS:
            raise MachOError(
                f"{path}: a universal (fat) Mach-O file; extract the slice of this machine first "
                "(lipo -thin arm64 -output thin.so model.so)"
            )
        if magic != MH_MAGIC_64:
            raise MachOError(f"{path}: not a 64-bit little-endian Mach-O file (bad magic {magic:#010x})")
        if len(data) < 32:
            raise MachOError(f"{path}: truncated Mach-O header ({len(data)} bytes, 32 needed)")
        (_, self.cputype, _, self.filetype, self.ncmds, self.sizeofcmds, self.flags, _) = struct.unpack_from(
            "<IiiIIIII", data, 0
        )
        self.cmds_end = 32 + self.sizeofcmds
        if self.cmds_end > len(data):
            raise MachOError(
                f"{path}: the load commands ({self.sizeofcmds} bytes) run past the end of the file ({len(data)} bytes)"
            )
        self.commands: list[tuple[int, int, int]] = []  # (cmd, offset, cmdsize)
        off = 32
        for i in range(self.ncmds):
            if off + 8 > self.cmds_end:
                raise MachOError(f"{path}: load command {i} of {self.ncmds} starts past sizeofcmds")
            cmd, size = struct.unpack_from("<II", data, off)
            if size < 8 or size % 8 or off + size > self.cmds_end:
                raise MachOError(f"{path}: load command {i} ({cmd:#x}) has a bad size {size}")
            self.commands.append((cmd, off, size))
            off += size
        self.sections: list[
            tuple[str, str, int, int, int]
        ] = []  # (segment, section, file offset, size, flags)
        self.segments: list[tuple[str, int, int, int]] = []  # (name, vmaddr, fileoff, filesize)
        for cmd, off, size in self.commands:
            if cmd != LC_SEGMENT_64:
                continue
            self._need(off, 72, size, "LC_SEGMENT_64")
            name = data[off + 8 : off + 24].split(b"\0")[0].decode("ascii", "replace")
            vmaddr, _, fileoff, filesize = struct.unpack_from("<QQQQ", data, off + 24)
            (nsects,) = struct.unpack_from("<I", data, off + 64)
            self._need(off, 72 + 80 * nsects, size, f"segment {name}")
            self._within(fileoff, filesize, f"segment {name}")
            self.segments.append((name, vmaddr, fileoff, filesize))
            for s in range(nsects):
                soff = off + 72 + 80 * s
                sect = data[soff : soff + 16].split(b"\0")[0].decode("ascii", "replace")
                (ssize,) = struct.unpack_from("<Q", data, soff + 40)
                (sfile,) = struct.unpack_from("<I", data, soff + 48)
                (sflags,) = struct.unpack_from("<I", data, soff + 64)
                if sflags & 0xFF not in _ZEROFILL:
                    self._within(sfile, ssize, f"section {name},{sect}")
                self.sections.append((name, sect, sfile, ssize, sflags))

    # ---- validation helpers ---------------------------------------------------------------------------
    def _need(self, off: int, need: int, size: int, what: str) -> None:
        if need > size:
            raise MachOError(f"{self.path}: {what} load command at {off:#x} is {size} bytes, {need} needed")

    def _within(self, off: int, size: int, what: str) -> None:
        if off < 0 or size < 0 or off + size > len(self.data):
            raise MachOError(
                f"{self.path}: {what} (bytes {off:#x}..{off + size:#x}) runs past the end of the file "
                f"({len(self.data):#x} bytes)"
            )

    def _cstr(self, off: int, end: int, what: str) -> str:
        if not 0 <= off < end:
            raise MachOError(f"{self.path}: {what} starts outside its table")
        stop = self.data.find(b"\0", off, end)
        if stop < 0:
            raise MachOError(f"{self.path}: {what} is not NUL-terminated inside its table")
        return bytes(self.data[off:stop]).decode("utf-8", "replace")

    def command(self, kind: int | tuple[int, ...]):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        found = [c for c in self.commands if c[0] in kinds]
        if len(found) > 1:
            raise MachOError(f"{self.path}: more than one load command {kinds[0]:#x}")
        return found[0] if found else None

    def linkedit(self, kind: int) -> tuple[int, int] | None:
        c = self.command(kind)
        if c is None:
            return None
        _, off, size = c
        self._need(off, 16, size, f"{kind:#x}")
        dataoff, datasize = struct.unpack_from("<II", self.data, off + 8)
        self._within(dataoff, datasize, f"the data of load command {kind:#x}")
        return dataoff, datasize

    # ---- what the image says --------------------------------------------------------------------------
    def dylibs(self) -> list[str]:
        out = []
        for cmd, off, size in self.commands:
            if cmd in DYLIB_COMMANDS:
                self._need(off, 24, size, "dylib")
                (name_off,) = struct.unpack_from("<I", self.data, off + 8)
                out.append(self._cstr(off + name_off, off + size, "a dylib name"))
        return out

    def symtab(self) -> list[tuple[int, str, int, int]]:
        """(nlist offset, raw name, n_type, n_desc) of each symbol."""
        c = self.command(LC_SYMTAB)
        if c is None:
            return []
        _, off, size = c
        self._need(off, 24, size, "LC_SYMTAB")
        symoff, nsyms, stroff, strsize = struct.unpack_from("<IIII", self.data, off + 8)
        self._within(symoff, 16 * nsyms, "the symbol table")
        self._within(stroff, strsize, "the string table")
        out = []
        for i in range(nsyms):
            n_strx, n_type, _, n_desc = struct.unpack_from("<IBBH", self.data, symoff + 16 * i)
            out.append(
                (
                    symoff + 16 * i,
                    self._cstr(stroff + n_strx, stroff + strsize, "a symbol name"),
                    n_type,
                    n_desc,
                )
            )
        return out

    def undefined(self) -> set[str]:
        return {name for _, name, t, _ in self.symtab() if not t & 0xE0 and t & 0x1 and not t & 0xE}

    def exports(self) -> set[str]:
        trie = self.linkedit(LC_DYLD_EXPORTS_TRIE)
        if trie is None:
            info = self.dyld_info()
            trie = (info[8], info[9]) if info is not None else None
        if trie is None or trie[1] == 0:
            return set()
        start, size = trie
        end = start + size
        names, stack, seen = set(), [(0, "")], set()
        while stack:
            node, prefix = stack.pop()
            if node in seen:
                raise MachOError(f"{self.path}: the export trie has a cycle")
            seen.add(node)
            terminal, pos = _leb128(self.data, start + node, end, self.path)
            if terminal:
                names.add(prefix)
                pos += terminal
            if pos >= end:
                raise MachOError(f"{self.path}: an export trie node runs past the trie")
            count = self.data[pos]
            pos += 1
            for _ in range(count):
                edge = self._cstr(pos, end, "an export trie edge")
                pos += len(edge.encode()) + 1
                child, pos = _leb128(self.data, pos, end, self.path)
                if child >= size:
                    raise MachOError(f"{self.path}: an export trie edge points past the trie")
                stack.append((child, prefix + edge))
        return names

    def dyld_info(self) -> tuple[int, ...] | None:
        c = self.command((LC_DYLD_INFO, LC_DYLD_INFO_ONLY))
        if c is None:
            return None
        _, off, size = c
        self._need(off, 48, size, "LC_DYLD_INFO")
        fields = struct.unpack_from("<10I", self.data, off + 8)
        for i, what in enumerate(("rebase", "bind", "weak bind", "lazy bind", "export")):
            self._within(fields[2 * i], fields[2 * i + 1], f"the {what} info")
        return fields

    def chained_imports(self) -> list[tuple[int, int, int, str]]:
        """(entry offset, entry format, ordinal, raw name) of each chained-fixups import."""
        where = self.linkedit(LC_DYLD_CHAINED_FIXUPS)
        if where is None:
            return []
        start, size = where
        if size < 28:
            raise MachOError(f"{self.path}: the chained fixups header is truncated ({size} bytes, 28 needed)")
        version, _, imports_off, symbols_off, count, fmt, symbols_fmt = struct.unpack_from(
            "<7I", self.data, start
        )
        if version != 0:
            raise MachOError(f"{self.path}: chained fixups version {version} is not known (0 is)")
        if symbols_fmt != 0:
            raise MachOError(f"{self.path}: compressed chained-fixups import names are not supported")
        width = {1: 4, 2: 8, 3: 16}.get(fmt)
        if width is None:
            raise MachOError(f"{self.path}: chained-fixups import format {fmt} is not known (1, 2, 3 are)")
        if imports_off + width * count > size or symbols_off > size:
            raise MachOError(f"{self.path}: the chained-fixups imports run past their load command's data")
        out = []
        for i in range(count):
            entry = start + imports_off + width * i
            if fmt == 3:
                (raw,) = struct.unpack_from("<Q", self.data, entry)
                ordinal, name_off = raw & 0xFFFF, raw >> 32
                ordinal = ordinal - 0x10000 if ordinal > 0xFFF0 else ordinal
            else:
                (raw,) = struct.unpack_from("<I", self.data, entry)
                ordinal, name_off = raw & 0xFF, raw >> 9
                ordinal = ordinal - 0x100 if ordinal > 0xF0 else ordinal
            name = self._cstr(start + symbols_off + name_off, start + size, "a chained-fixups import name")
            out.append((entry, fmt, ordinal, name))
        return out

    def bind_ops(self, start: int, size: int, lazy: bool) -> list[_BindOp]:
        """The opcodes of a bind stream; a regular stream ends at its first DONE, a lazy one at its end."""
        end, pos, ops = start + size, start, []
        while pos < end:
            byte, op_start = self.data[pos], pos
            opcode, imm = byte & 0xF0, byte & 0x0F
            pos += 1
            if opcode == BIND_DONE:
                ops.append(_BindOp(op_start, pos, opcode))
                if not lazy:
                    break
                continue
            if opcode == BIND_DYLIB_IMM:
                ops.append(_BindOp(op_start, pos, opcode, ordinal=imm))
            elif opcode == BIND_DYLIB_ULEB:
                value, pos = _leb128(self.data, pos, end, self.path)
                ops.append(_BindOp(op_start, pos, opcode, ordinal=value))
            elif opcode == BIND_DYLIB_SPECIAL:
                ops.append(_BindOp(op_start, pos, opcode, ordinal=(imm | ~0xF) if imm else 0))
            elif opcode == BIND_SYMBOL:
                name = self._cstr(pos, end, "a bind symbol name")
                pos += len(name.encode()) + 1
                ops.append(_BindOp(op_start, pos, opcode, symbol=name))
            elif opcode in (BIND_TYPE, BIND_DO, BIND_DO_ADD_SCALED):
                ops.append(_BindOp(op_start, pos, opcode))
            elif opcode in (BIND_ADDEND,):
                _, pos = _leb128(self.data, pos, end, self.path, signed=True)
                ops.append(_BindOp(op_start, pos, opcode))
            elif opcode in (BIND_SEGMENT, BIND_ADD_ADDR, BIND_DO_ADD_ULEB):
                _, pos = _leb128(self.data, pos, end, self.path)
                ops.append(_BindOp(op_start, pos, opcode))
            elif opcode == BIND_DO_TIMES:
                _, pos = _leb128(self.data, pos, end, self.path)
                _, pos = _leb128(self.data, pos, end, self.path)
                ops.append(_BindOp(op_start, pos, opcode))
            elif opcode == BIND_THREADED:
                raise MachOError(f"{self.path}: threaded bind opcodes (arm64e) are not supported")
            else:
                raise MachOError(f"{self.path}: unknown bind opcode {byte:#04x} at {op_start:#x}")
        return ops

    def opcode_binds(self) -> list[tuple[str, int]]:
        """(raw name, ordinal) of each bind the regular and lazy opcode streams perform."""
        info = self.dyld_info()
        if info is None:
            return []
        out = []
        for start, size, lazy in ((info[2], info[3], False), (info[6], info[7], True)):
            ordinal, symbol = 0, None
            for op in self.bind_ops(start, size, lazy):
                if op.ordinal is not None:
                    ordinal = op.ordinal
                elif op.symbol is not None:
                    symbol = op.symbol
                elif op.opcode in _DO_BIND:
                    if symbol is None:
                        raise MachOError(f"{self.path}: a bind at {op.start:#x} has no symbol")
                    out.append((symbol, ordinal))
        return out

    def header_room(self) -> int:
        """Zero bytes after the load commands, before the first byte any section or segment holds."""
        firsts = [
            off for _, _, off, size, flags in self.sections if size and off and flags & 0xFF not in _ZEROFILL
        ]
        firsts += [off for _, _, off, size in self.segments if size and off]
        limit = min(firsts, default=len(self.data))
        if limit < self.cmds_end:
            raise MachOError(f"{self.path}: a section starts inside the load commands")
        room = self.data[self.cmds_end : limit]
        return len(room) - len(room.lstrip(b"\0"))


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise MachOError(f"{path}: cannot read ({e.strerror})") from e


def is_macho(path: str) -> bool:
    """True when the file starts with a Mach-O (thin or fat) magic number."""
    head = _read(path)[:4]
    if len(head) < 4:
        return False
    le, be = struct.unpack("<I", head)[0], struct.unpack(">I", head)[0]
    return le in (MH_MAGIC_64, 0xFEEDFACE) or le in FAT_MAGICS or be in FAT_MAGICS


def undefined_symbols(path: str) -> set[str]:
    return {_c_name(n) for n in _MachO(_read(path), path).undefined()}


def defined_symbols(path: str) -> set[str]:
    return {_c_name(n) for n in _MachO(_read(path), path).exports()}


def dependent_libraries(path: str) -> list[str]:
    return _MachO(_read(path), path).dylibs()


def bindings(path: str) -> dict[str, set[str]]:
    """For each imported C name, where its binds go: dependent names or "flat", "self", "main", "weak"."""
    m = _MachO(_read(path), path)
    libs = m.dylibs()

    def where(ordinal: int) -> str:
        if ordinal in _SPECIAL:
            return _SPECIAL[ordinal]
        if 1 <= ordinal <= len(libs):
            return libs[ordinal - 1]
        raise MachOError(f"{path}: library ordinal {ordinal} is past the {len(libs)} dependent libraries")

    out: dict[str, set[str]] = {}
    for _, _, ordinal, name in m.chained_imports():
        out.setdefault(_c_name(name), set()).add(where(ordinal))
    for name, ordinal in m.opcode_binds():
        out.setdefault(_c_name(name), set()).add(where(ordinal))
    return out


def bind_flat_imports(path: str, providers: list[tuple[str, set[str]]]) -> dict[str, str]:
    """Rewrites the image at ``path`` in place so that each flat import a provider defines is bound to that
    provider (Note [Binding a Mach-O model]). ``providers``: (absolute path of a loaded image, the C names it
    exports), first match wins. Returns {C name: provider path} of what was rebound."""
    data = bytearray(_read(path))
    m = _MachO(data, path)
    if m.filetype not in (MH_DYLIB, MH_BUNDLE):
        raise MachOError(f"{path}: Mach-O file type {m.filetype} is not a dylib (6) or a bundle (8)")
    if not m.flags & MH_TWOLEVEL or m.flags & MH_FORCE_FLAT:
        raise MachOError(
            f"{path}: a flat-namespace image (linked with -flat_namespace): dyld looks every import of it up in "
            "the flat namespace, so it cannot be bound to one library"
        )
    for lib, _ in providers:
        if not os.path.isabs(lib) or "\0" in lib:
            raise MachOError(f"bind_flat_imports(): a provider must be an absolute path, got {lib!r}")

    # 1. the ordinal of each provider: an existing dependent of that name, or a new LC_LOAD_DYLIB
    libs = m.dylibs()
    ordinals, new_cmds, n_new = {}, bytearray(), 0
    for lib, _ in providers:
        if lib in libs:
            ordinals[lib] = libs.index(lib) + 1
            continue
        name = lib.encode() + b"\0"
        size = (24 + len(name) + 7) & ~7
        # dylib_command: name offset 24, timestamp, current and compatibility version 0 (no version check)
        new_cmds += (
            struct.pack("<IIIIII", LC_LOAD_DYLIB, size, 24, 0, 0, 0) + name + bytes(size - 24 - len(name))
        )
        libs.append(lib)
        ordinals[lib] = len(libs)
        n_new += 1

    def target(raw: str) -> str | None:
        c = _c_name(raw)
        return next((lib for lib, names in providers if c in names), None)

    rebound: dict[str, str] = {}

    # 2. chained-fixups imports: the ordinal field of each entry, in place
    for entry, fmt, ordinal, name in m.chained_imports():
        lib = target(name) if ordinal == ORDINAL_FLAT else None
        if lib is None:
            continue
        k = ordinals[lib]
        if fmt == 3:
            (raw,) = struct.unpack_from("<Q", data, entry)
            struct.pack_into("<Q", data, entry, (raw & ~0xFFFF) | k)
        else:
            if k > 0xF0:
                raise MachOError(f"{path}: library ordinal {k} does not fit an 8-bit chained import")
            (raw,) = struct.unpack_from("<I", data, entry)
            struct.pack_into("<I", data, entry, (raw & ~0xFF) | k)
        rebound[_c_name(name)] = lib

    # 3. bind opcodes
    info = m.dyld_info()
    if info is not None:
        _rebind_regular(m, data, info[2], info[3], target, ordinals, rebound)
        _rebind_lazy(m, data, info[6], info[7], target, ordinals, rebound)

    # 4. the symbol table's record of the same (GET_LIBRARY_ORDINAL(n_desc))
    for off, name, n_type, n_desc in m.symtab():
        if not n_type & 0xE0 and n_type & 0x1 and not n_type & 0xE and _c_name(name) in rebound:
            if (n_desc >> 8) == 0xFE:  # DYNAMIC_LOOKUP_ORDINAL
                struct.pack_into(
                    "<H", data, off + 6, (n_desc & 0xFF) | (ordinals[rebound[_c_name(name)]] << 8)
                )

    # 5. the load commands, in the padding after the existing ones
    if new_cmds:
        room = m.header_room()
        if len(new_cmds) > room:
            raise MachOError(
                f"{path}: no room for the load commands naming {[lib for lib, _ in providers]} "
                f"({len(new_cmds)} bytes needed, {room} free after the load commands); the image must be linked "
                "with more header padding (-Wl,-headerpad_max_install_names)"
            )
        data[m.cmds_end : m.cmds_end + len(new_cmds)] = new_cmds
        struct.pack_into("<II", data, 16, m.ncmds + n_new, m.sizeofcmds + len(new_cmds))

    # 6. the code signature over the rewritten bytes
    _resign(m, data)
    tmp = path + ".binding"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o700)
    os.replace(tmp, path)  # a new file (inode): the kernel caches signatures per file
    return rebound


def _rebind_regular(m, data, start, size, target, ordinals, rebound) -> None:
    """Re-encodes the regular bind stream: the original opcodes, except that the ordinal opcodes are emitted
    only before a bind whose ordinal differs from the last one emitted."""
    if not size:
        return
    ops = m.bind_ops(start, size, lazy=False)
    out, state, emitted, symbol = bytearray(), 0, None, None
    for op in ops:
        if op.ordinal is not None:
            state = op.ordinal
            continue
        if op.symbol is not None:
            symbol = op.symbol
        if op.opcode in _DO_BIND:
            lib = target(symbol) if state == ORDINAL_FLAT and symbol is not None else None
            want = ordinals[lib] if lib is not None else state
            if lib is not None:
                rebound[_c_name(symbol)] = lib
            if want != emitted:
                out += _encode_ordinal(want)
                emitted = want
        out += data[op.start : op.end]
    if len(out) > size:
        raise MachOError(
            f"{m.path}: the rebound bind opcodes need {len(out)} bytes and the stream holds {size}; this image's "
            "bind info cannot be rewritten in place"
        )
    data[start : start + size] = out + bytes(size - len(out))


def _rebind_lazy(m, data, start, size, target, ordinals, rebound) -> None:
    """Rewrites the lazy entries' ordinal opcodes in place (each entry sets its own; their offsets are kept)."""
    if not size:
        return
    entry_ordinal_op, symbol = None, None
    for op in m.bind_ops(start, size, lazy=True):
        if op.opcode == BIND_DONE:
            entry_ordinal_op, symbol = None, None
        elif op.ordinal is not None:
            entry_ordinal_op = op
        elif op.symbol is not None:
            symbol = op.symbol
        elif op.opcode in _DO_BIND:
            if entry_ordinal_op is None or entry_ordinal_op.ordinal != ORDINAL_FLAT or symbol is None:
                continue
            lib = target(symbol)
            if lib is None:
                continue
            k = ordinals[lib]
            if k > 0xF or entry_ordinal_op.end - entry_ordinal_op.start != 1:
                raise MachOError(f"{m.path}: a lazy bind of {symbol!r} cannot take ordinal {k} in place")
            data[entry_ordinal_op.start] = BIND_DYLIB_IMM | k
            rebound[_c_name(symbol)] = lib


def _resign(m, data) -> None:
    """Recomputes the code-page hashes of every CodeDirectory of an ad-hoc signature over ``data``."""
    where = m.linkedit(LC_CODE_SIGNATURE)
    if where is None:
        return
    sig, sig_size = where
    if sig_size < 12 or struct.unpack_from(">I", data, sig)[0] != CSMAGIC_EMBEDDED_SIGNATURE:
        raise MachOError(f"{m.path}: the code signature is not an embedded signature SuperBlob")
    _, length, count = struct.unpack_from(">III", data, sig)
    if length > sig_size or 12 + 8 * count > length:
        raise MachOError(f"{m.path}: the code signature SuperBlob runs past its load command's data")
    directories = 0
    for i in range(count):
        slot, off = struct.unpack_from(">II", data, sig + 12 + 8 * i)
        if off + 8 > length:
            raise MachOError(f"{m.path}: code signature blob {i} lies outside the SuperBlob")
        blob = sig + off
        magic, blob_len = struct.unpack_from(">II", data, blob)
        if off + blob_len > length:
            raise MachOError(f"{m.path}: code signature blob {i} runs past the SuperBlob")
        if magic == CSMAGIC_BLOBWRAPPER and blob_len > 8:
            raise MachOError(
                f"{m.path}: signed with an identity (a CMS signature); after rebinding only its signer can sign it "
                "again (codesign --force --sign IDENTITY)"
            )
        if magic != CSMAGIC_CODEDIRECTORY:
            continue
        if blob_len < 44:
            raise MachOError(f"{m.path}: a CodeDirectory is truncated")
        version, flags, hash_off, _, _, n_code, code_limit = struct.unpack_from(">IIIIIII", data, blob + 8)
        hash_size, hash_type, _, page_log2 = struct.unpack_from(">BBBB", data, blob + 36)
        if not flags & CS_ADHOC:
            raise MachOError(f"{m.path}: the code signature is not ad hoc; re-sign it with its identity")
        if version >= 0x20100 and blob_len >= 52 and struct.unpack_from(">I", data, blob + 48)[0]:
            raise MachOError(f"{m.path}: a CodeDirectory with a scatter vector is not supported")
        if version >= 0x20300 and blob_len >= 64 and struct.unpack_from(">Q", data, blob + 56)[0]:
            raise MachOError(f"{m.path}: a CodeDirectory with a 64-bit code limit is not supported")
        algo = _CS_HASHES.get(hash_type)
        if algo is None or algo[1] != hash_size:
            raise MachOError(
                f"{m.path}: code signature hash type {hash_type} (size {hash_size}) is not known"
            )
        page = 1 << page_log2 if page_log2 else code_limit
        if code_limit > sig or (code_limit + page - 1) // max(page, 1) != n_code:
            raise MachOError(f"{m.path}: the CodeDirectory does not cover the file up to its signature")
        if hash_off + n_code * hash_size > blob_len:
            raise MachOError(f"{m.path}: the CodeDirectory's hash slots run past it")
        for slot_index in range(n_code):
            lo = slot_index * page
            digest = hashlib.new(algo[0], bytes(data[lo : min(lo + page, code_limit)])).digest()[:hash_size]
            at = blob + hash_off + slot_index * hash_size
            data[at : at + hash_size] = digest
        directories += 1
    if not directories:
        raise MachOError(f"{m.path}: the code signature has no CodeDirectory")

"""The one platform module of slimtensor.aoti: reads and patches ELF shared libraries (Linux, ELF64 LE).

What it does:
  - ``undefined_symbols(path)`` / ``defined_symbols(path)``: names in the dynamic symbol table, to list the
    ``aoti_torch_*`` and ``Sleef_*`` names a model needs before it is loaded;
  - ``soname(path)``;
  - ``add_needed(path, name)``: gives a model a ``DT_NEEDED`` entry on ``name`` in place, so that the model,
    opened with ``RTLD_LOCAL | RTLD_DEEPBIND``, binds its ``aoti_torch_*`` calls to that library (which is
    found by its soname, because it is already loaded) rather than to anything in the global scope (a
    libtorch loaded ``RTLD_GLOBAL``);
  - ``write_needed_library(path, needed, like, soname)``: writes a shared library that defines nothing and
    only lists ``needed`` as its ``DT_NEEDED`` entries (Note [A library of DT_NEEDED entries]).

Note [Adding DT_NEEDED]
The dynamic section has no spare slot and ``.dynstr`` no spare byte, so ``add_needed``
  1. writes the name into the zero padding after the end of a loadable segment that lies after
     ``DT_STRTAB`` and has no ``.bss`` (``p_filesz == p_memsz``), inside the last page that segment already
     maps, and grows that segment's sizes to cover it (``d_val`` of ``DT_NEEDED`` is an offset from
     ``DT_STRTAB``; the loader does not bound it by ``DT_STRSZ``);
  2. makes room for one entry in ``.dynamic`` by dropping a spare ``DT_NULL`` if there is one, else
     ``DT_RELACOUNT`` (a hint: without it the loader processes relative relocations the ordinary way),
     and inserts the new ``DT_NEEDED`` before the other ``DT_NEEDED`` entries.
Any layout that does not allow this raises ``ElfError`` with the reason; nothing is written then.

Note [A library of DT_NEEDED entries]
``add_needed`` finds room for one entry (the models torch links have one spare slot at most), but a model
compiled for a device needs several libraries: the core and the device plugin's shim library at least
(Note [Device support for AOTI models] in ``_device_support.py``: the model's one ``DT_NEEDED`` names a
library whose own dependencies bring the rest). A plugin whose shims live in a library that does not
depend on the core (the Metal plugin's Python extension, which must not link it) writes such a library at
run time with ``write_needed_library``, lists the core and its shim library in it, loads it and reports its
``soname``. The loader's local scope of an object opened ``RTLD_DEEPBIND`` is the object and its
dependencies, breadth first, so the model's undefined names are looked up in each listed library (in
order) before the global scope. The written file
holds an ELF header, a read-write ``PT_LOAD`` over the whole file, a ``PT_DYNAMIC``, a string table, one
null symbol, a one-bucket ``DT_HASH`` and the dynamic section; its class and machine are those of ``like``.
Libraries already loaded are matched by soname (``libslimtensor.so.0``) or by the absolute path they were
opened with (a plugin's Python extension), so the listed libraries are the very copies the process runs,
with their state, not second instances.
"""

from __future__ import annotations

import os
import struct

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT, DT_SONAME = 0, 1, 5, 6, 10, 11, 14
DT_GNU_HASH, DT_HASH, DT_RELACOUNT = 0x6FFFFEF5, 4, 0x6FFFFFF9
SHN_UNDEF = 0


class ElfError(ValueError):
    """The file is not an ELF shared library this module can read or patch."""


class _Elf:
    def __init__(self, data: bytes | bytearray, path: str):
        self.data, self.path = data, path
        if len(data) < 64 or data[:4] != b"\x7fELF":
            raise ElfError(f"{path}: not an ELF file (bad magic); expected a shared library (.so)")
        if data[4] != 2 or data[5] != 1:
            raise ElfError(
                f"{path}: only 64-bit little-endian ELF is supported (class {data[4]}, data {data[5]})"
            )
        (self.e_type, self.e_machine, _, _, self.e_phoff, _, _, _, self.e_phentsize, self.e_phnum) = (
            struct.unpack_from("<HHIQQQIHHH", data, 16)
        )
        if self.e_type != 3:
            raise ElfError(f"{path}: ELF type {self.e_type} is not a shared object (3)")
        if self.e_phoff + self.e_phnum * self.e_phentsize > len(data) or self.e_phentsize < 56:
            raise ElfError(f"{path}: truncated or damaged program headers")
        self.phdrs = []
        for i in range(self.e_phnum):
            off = self.e_phoff + i * self.e_phentsize
            p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align = struct.unpack_from(
                "<IIQQQQQQ", data, off
            )
            self.phdrs.append(
                dict(
                    index=i,
                    off=off,
                    type=p_type,
                    flags=p_flags,
                    offset=p_offset,
                    vaddr=p_vaddr,
                    filesz=p_filesz,
                    memsz=p_memsz,
                    align=p_align,
                )
            )
        dyn = [p for p in self.phdrs if p["type"] == PT_DYNAMIC]
        if not dyn:
            raise ElfError(f"{path}: no dynamic section (a static object?)")
        self.dyn_off, self.dyn_size = dyn[0]["offset"], dyn[0]["filesz"]
        if self.dyn_off + self.dyn_size > len(data):
            raise ElfError(f"{path}: truncated dynamic section")
        self.dynamic = [
            struct.unpack_from("<qQ", data, self.dyn_off + 16 * i) for i in range(self.dyn_size // 16)
        ]
        tags = {}
        for tag, val in self.dynamic:
            if tag == DT_NULL:
                break
            tags.setdefault(tag, val)
        self.tags = tags
        if DT_STRTAB not in tags:
            raise ElfError(f"{path}: no DT_STRTAB")

    def vaddr_to_offset(self, vaddr: int) -> int:
        for p in self.phdrs:
            if p["type"] == PT_LOAD and p["vaddr"] <= vaddr < p["vaddr"] + p["filesz"]:
                return p["offset"] + vaddr - p["vaddr"]
        raise ElfError(f"{self.path}: address {vaddr:#x} is not in any loaded segment")

    def cstr(self, off: int) -> str:
        end = self.data.find(b"\0", off)
        if end < 0:
            raise ElfError(f"{self.path}: unterminated string")
        return bytes(self.data[off:end]).decode("utf-8", "replace")

    def symbols(self):
        """(name, defined) for every dynamic symbol."""
        strtab = self.vaddr_to_offset(self.tags[DT_STRTAB])
        symtab = self.vaddr_to_offset(self.tags[DT_SYMTAB])
        count = self._symbol_count()
        out = []
        for i in range(1, count):
            off = symtab + 24 * i
            if off + 24 > len(self.data):
                raise ElfError(f"{self.path}: truncated symbol table")
            st_name, st_info, st_other, st_shndx, st_value, st_size = struct.unpack_from(
                "<IBBHQQ", self.data, off
            )
            out.append((self.cstr(strtab + st_name), st_shndx != SHN_UNDEF))
        return out

    def _symbol_count(self) -> int:
        if DT_HASH in self.tags:
            return struct.unpack_from("<II", self.data, self.vaddr_to_offset(self.tags[DT_HASH]))[1]
        if DT_GNU_HASH not in self.tags:
            raise ElfError(f"{self.path}: no symbol hash table")
        off = self.vaddr_to_offset(self.tags[DT_GNU_HASH])
        nbuckets, symoffset, bloom_size, _ = struct.unpack_from("<IIII", self.data, off)
        buckets_off = off + 16 + 8 * bloom_size
        chains_off = buckets_off + 4 * nbuckets
        last = 0
        for b in range(nbuckets):
            last = max(last, struct.unpack_from("<I", self.data, buckets_off + 4 * b)[0])
        if last < symoffset:
            return symoffset
        while True:
            h = struct.unpack_from("<I", self.data, chains_off + 4 * (last - symoffset))[0]
            if h & 1:
                return last + 1
            last += 1

    def needed(self) -> list[str]:
        strtab = self.vaddr_to_offset(self.tags[DT_STRTAB])
        out = []
        for tag, val in self.dynamic:
            if tag == DT_NULL:
                break
            if tag == DT_NEEDED:
                out.append(self.cstr(strtab + val))
        return out


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ElfError(f"{path}: cannot read ({e.strerror})") from e


def undefined_symbols(path: str) -> set[str]:
    return {n for n, d in _Elf(_read(path), path).symbols() if not d and n}


def defined_symbols(path: str) -> set[str]:
    return {n for n, d in _Elf(_read(path), path).symbols() if d and n}


def needed(path: str) -> list[str]:
    return _Elf(_read(path), path).needed()


def soname(path: str) -> str | None:
    e = _Elf(_read(path), path)
    if DT_SONAME not in e.tags:
        return None
    return e.cstr(e.vaddr_to_offset(e.tags[DT_STRTAB]) + e.tags[DT_SONAME])


def add_needed(path: str, name: str) -> None:
    """Adds DT_NEEDED ``name`` to the shared library at ``path`` (in place). See Note [Adding DT_NEEDED]."""
    data = bytearray(_read(path))
    e = _Elf(data, path)
    if name in e.needed():
        return
    raw = name.encode() + b"\0"
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    strtab_vaddr = e.tags[DT_STRTAB]
    loads = sorted((p for p in e.phdrs if p["type"] == PT_LOAD), key=lambda p: p["offset"])
    spot = None
    for p in loads:
        if p["filesz"] != p["memsz"] or p["vaddr"] < strtab_vaddr and p["vaddr"] + p["filesz"] < strtab_vaddr:
            continue
        end = p["offset"] + p["filesz"]
        start = (end + 7) & ~7
        page_end = (end + page - 1) // page * page
        next_start = min([q["offset"] for q in loads if q["offset"] >= end] + [len(data)])
        if start + len(raw) <= min(page_end, next_start) and not any(data[end : start + len(raw)]):
            if p["vaddr"] + (start - p["offset"]) < strtab_vaddr:
                continue
            spot = (p, start)
            break
    if spot is None:
        raise ElfError(
            f"{path}: no room for the name {name!r} after any loadable segment; "
            "this model's layout cannot be patched (was it linked by GNU ld?)"
        )
    p, start = spot
    entries = list(e.dynamic)
    try:
        null_at = next(i for i, (t, _) in enumerate(entries) if t == DT_NULL)
    except StopIteration:
        raise ElfError(f"{path}: the dynamic section has no DT_NULL terminator") from None
    used = entries[:null_at]
    spare_nulls = len(entries) - null_at - 1
    if spare_nulls < 1:
        relacount = [i for i, (t, _) in enumerate(used) if t == DT_RELACOUNT]
        if not relacount:
            raise ElfError(f"{path}: the dynamic section has no spare slot for DT_NEEDED {name!r}")
        del used[relacount[0]]
    first_needed = next((i for i, (t, _) in enumerate(used) if t == DT_NEEDED), 0)
    str_vaddr = p["vaddr"] + (start - p["offset"])
    used.insert(first_needed, (DT_NEEDED, str_vaddr - strtab_vaddr))
    new = used + [(DT_NULL, 0)] * (len(entries) - len(used))
    # write: the string, the grown segment, the dynamic section
    data[start : start + len(raw)] = raw
    grow = start + len(raw) - (p["offset"] + p["filesz"])
    struct.pack_into("<QQ", data, p["off"] + 32, p["filesz"] + grow, p["memsz"] + grow)
    for i, (t, v) in enumerate(new):
        struct.pack_into("<qQ", data, e.dyn_off + 16 * i, t, v)
    tmp = path + ".patching"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o700)
    os.replace(tmp, path)


def write_needed_library(path: str, needed: list[str], like: str, soname: str | None = None) -> None:
    """Writes a shared library that only lists ``needed`` as ``DT_NEEDED`` (and has ``soname`` as its
    ``DT_SONAME``), for the machine of the ELF file ``like`` (Note [A library of DT_NEEDED entries])."""
    machine = _Elf(_read(like), like).e_machine
    strtab = bytearray(b"\0")
    offsets = []
    for name in [*needed, *([soname] if soname is not None else [])]:
        if not name or "\0" in name:
            raise ElfError(f"{path}: a library name must be a non-empty string without NUL, got {name!r}")
        offsets.append(len(strtab))
        strtab += name.encode() + b"\0"
    ehdr, phdr = 64, 56
    str_off = ehdr + 2 * phdr
    sym_off = (str_off + len(strtab) + 7) & ~7
    hash_off = sym_off + 24  # one symbol: the null symbol every symbol table starts with
    dyn_off = hash_off + 16  # nbucket = nchain = 1, bucket[0] = chain[0] = 0
    dynamic = [(DT_NEEDED, o) for o in offsets[: len(needed)]]
    dynamic += [(DT_SONAME, o) for o in offsets[len(needed) :]]
    dynamic += [(DT_HASH, hash_off), (DT_STRTAB, str_off), (DT_SYMTAB, sym_off), (DT_STRSZ, len(strtab))]
    dynamic += [(DT_SYMENT, 24), (DT_NULL, 0)]
    size = dyn_off + 16 * len(dynamic)
    out = bytearray(size)
    out[:16] = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)  # 64-bit, little-endian, version 1, System V
    struct.pack_into("<HHIQQQIHHHHHH", out, 16, 3, machine, 1, 0, ehdr, 0, 0, ehdr, phdr, 2, 64, 0, 0)
    rw = 4 | 2  # PF_R | PF_W: glibc may relocate the dynamic section's addresses in place
    struct.pack_into("<IIQQQQQQ", out, ehdr, PT_LOAD, rw, 0, 0, 0, size, size, 0x1000)
    dyn_size = 16 * len(dynamic)
    struct.pack_into(
        "<IIQQQQQQ", out, ehdr + phdr, PT_DYNAMIC, rw, dyn_off, dyn_off, dyn_off, dyn_size, dyn_size, 8
    )
    out[str_off : str_off + len(strtab)] = strtab
    struct.pack_into("<IIII", out, hash_off, 1, 1, 0, 0)
    for i, (tag, value) in enumerate(dynamic):
        struct.pack_into("<qQ", out, dyn_off + 16 * i, tag, value)
    tmp = path + ".writing"  # replaced, never truncated: a loaded library of that name stays intact
    with open(tmp, "wb") as f:
        f.write(out)
    os.chmod(tmp, 0o700)
    os.replace(tmp, path)

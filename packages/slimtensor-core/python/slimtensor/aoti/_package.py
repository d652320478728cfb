"""Opens what ``st.aoti.load`` is given (a ``.pt2`` package or a bare model ``.so``); checks it can run here.

Note [Safe extraction]
Nothing is extracted under a name taken from the archive: the one model ``.so``, its weights blob and its
metadata are copied, by streaming, to fixed names (``model.so``, ``weights.blob``, ``metadata.json``) in a
private directory made by ``tempfile.mkdtemp`` (mode 0700). Entry names are only matched against
``<root>/data/aotinductor/<model>/<file>``, so ``..`` or absolute names cannot reach anything.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import zipfile
from dataclasses import dataclass, field

from .._platform import cpu_flags

_SO = re.compile(r"^[^/]+/data/aotinductor/([^/]+)/[^/]+\.so$")
_MAX_ENTRY = 1 << 36  # 64 GiB: anything larger is a damaged directory entry

# AOTI_CPU_ISA words -> /proc/cpuinfo flags the code needs.
_ISA_FLAGS = {
    "INVALID_VEC_ISA": set(),
    "AVX2": {"avx2", "fma"},
    "AVX512": {"avx512f", "avx512bw", "avx512vl", "avx512dq"},
    "AVX512_VNNI": {"avx512_vnni"},
    "AVX512_BF16": {"avx512_bf16"},
    "AMX": {"amx_tile"},
    "AMX_FP16": {"amx_fp16"},
    "AMX_BF16": {"amx_bf16"},
    "NEON": set(),
    "SVE": {"sve"},
    "SVE256": {"sve"},
}


@dataclass
class ModelFiles:
    so_path: str
    weights_path: str | None = None
    metadata: dict = field(default_factory=dict)
    source: str = ""
    is_package: bool = False


def _copy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: str) -> None:
    if info.file_size > _MAX_ENTRY:
        raise ValueError(f"{info.filename}: entry claims {info.file_size} bytes; the package looks damaged")
    with zf.open(info) as src, open(dest, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    os.chmod(dest, 0o700)


def _parse_metadata(raw: bytes, name: str) -> dict:
    """The package's wrapper metadata: a JSON object of strings (AOTI_DEVICE_KEY, AOTI_CPU_ISA, ...)."""
    try:
        md = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{name} is not valid JSON ({e})") from e
    if not isinstance(md, dict):
        raise ValueError(
            f"{name} must be a JSON object of strings (as aoti_compile_and_package writes) but is a "
            f"{type(md).__name__}"
        )
    bad = sorted(k for k, v in md.items() if not isinstance(v, str))
    if bad:
        raise ValueError(f"{name}: the values of {bad} must be strings")
    return md


def open_model_files(path: str, workdir: str, model_name: str | None = None) -> ModelFiles:
    """Copies the model's files into ``workdir``; raises ValueError for a damaged or foreign file."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"slimtensor.aoti.load(): {path!r} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(
            f"slimtensor.aoti.load(): {path!r} is a directory; pass the .pt2 file that aoti_compile_and_package "
            "wrote (or a model .so), not the folder holding it"
        )
    with open(path, "rb") as f:
        magic = f.read(4)
    so_dest = os.path.join(workdir, "model.so")
    if magic == b"\x7fELF":
        shutil.copyfile(path, so_dest)
        os.chmod(so_dest, 0o700)
        return ModelFiles(so_path=so_dest, source=path)
    if magic[:2] != b"PK":
        raise ValueError(
            f"slimtensor.aoti.load(): {path!r} is neither a .pt2 package (zip) nor a model .so "
            f"(ELF); it starts with {magic!r}. Pass the file aoti_compile_and_package wrote."
        )
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as e:
        raise ValueError(
            f"slimtensor.aoti.load(): {path!r} is a damaged zip file ({e}); recompile or re-download it"
        ) from e
    with zf:
        models: dict[str, list[zipfile.ZipInfo]] = {}
        for info in zf.infolist():
            m = _SO.match(info.filename)
            if m:
                models.setdefault(m.group(1), []).append(info)
        if not models:
            raise ValueError(
                f"slimtensor.aoti.load(): {path!r} is a zip but not an AOTInductor package: it has "
                "no <root>/data/aotinductor/<model>/*.so (a package_cpp_only package must be compiled first)"
            )
        if model_name is None:
            model_name = "model" if "model" in models else sorted(models)[0]
            if len(models) > 1 and "model" not in models:
                raise ValueError(
                    f"slimtensor.aoti.load(): {path!r} holds several models {sorted(models)}; "
                    "pass model_name="
                )
        if model_name not in models:
            raise ValueError(
                f"slimtensor.aoti.load(): no model {model_name!r} in {path!r}; it has {sorted(models)}"
            )
        if len(models[model_name]) != 1:
            raise ValueError(
                f"slimtensor.aoti.load(): model {model_name!r} has {len(models[model_name])} .so files"
            )
        roots = {i.filename.split("/", 1)[0] for i in zf.infolist() if i.filename.endswith("/archive_format")}
        for root in roots:
            fmt = zf.read(f"{root}/archive_format").decode("utf-8", "replace").strip()
            if fmt != "pt2":
                raise ValueError(f"slimtensor.aoti.load(): {path!r} has archive_format {fmt!r}, not 'pt2'")
        so_info = models[model_name][0]
        folder = so_info.filename.rsplit("/", 1)[0] + "/"
        try:
            _copy_member(zf, so_info, so_dest)
            files = ModelFiles(so_path=so_dest, source=path, is_package=True)
            for info in zf.infolist():
                name = info.filename
                if not name.startswith(folder) or "/" in name[len(folder) :]:
                    continue
                if name.endswith("_weights.blob"):
                    files.weights_path = os.path.join(workdir, "weights.blob")
                    _copy_member(zf, info, files.weights_path)
                elif name.endswith("wrapper_metadata.json"):
                    files.metadata = _parse_metadata(zf.read(info), name)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
            raise ValueError(
                f"slimtensor.aoti.load(): cannot read {path!r}: {e}; the package is damaged"
            ) from e
    return files


# AOTI dtype codes -> bytes per element (torch/csrc/inductor/aoti_torch/c/shim.h's numbering).
_ITEMSIZE = {
    0: 1,
    1: 1,
    2: 2,
    3: 4,
    4: 8,
    5: 2,
    6: 4,
    7: 8,
    8: 4,
    9: 8,
    10: 16,
    11: 1,
    15: 2,
    23: 1,
    24: 1,
    25: 1,
    26: 1,
    27: 2,
    28: 4,
    29: 8,
}


def check_weights_blob(path: str, blob_size: int, constants: list[tuple[str, int, int, bool]]) -> None:
    """Refuses a weights blob that does not fit the model's constants (name, nbytes, dtype code, folded).

    AOTInductorModelUpdateConstantsFromBlob reads the constants that are not folded one after the other,
    ``nbytes`` each, with no header or bounds: a blob emptied, cut short, grown or taken from another model
    would be read past its end or give wrong weights. Its size must be exactly the sum, and each size a
    multiple of its dtype's itemsize (the layout the model's code assumes). The model copies each constant
    into its own 64-byte aligned buffer, so the blob itself needs no alignment. A blob replaced by another
    of the same size cannot be told apart: packages record no checksum.
    """
    need = 0
    for name, nbytes, dtype, folded in constants:
        if folded:
            continue
        item = _ITEMSIZE.get(dtype)
        if item is None or nbytes % item:
            raise ValueError(
                f"slimtensor.aoti.load(): {path!r}: constant {name!r} has {nbytes} bytes of dtype code {dtype}, "
                "which is not a whole number of elements; the model library is damaged: re-export it"
            )
        need += nbytes
    if blob_size != need:
        names = ", ".join(f"{n} ({b} bytes)" for n, b, _, f in constants if not f)
        raise ValueError(
            f"slimtensor.aoti.load(): the weights blob of {path!r} has {blob_size} bytes but the model's "
            f"constants need exactly {need} ({names or 'none'}); the blob was emptied, cut short or replaced: "
            "use the .pt2 that aoti_compile_and_package wrote, unmodified"
        )


def check_metadata(files: ModelFiles, device: str) -> None:
    """Device key and CPU ISA of a package (a bare .so has no metadata: nothing can be checked)."""
    md = files.metadata
    if not md:
        return
    key = md.get("AOTI_DEVICE_KEY")
    if key and key.split(":")[0] != device.split(":")[0]:
        raise ValueError(
            f"slimtensor.aoti.load(): the package was compiled for {key!r} but device={device!r}; "
            f"pass device={key!r}"
        )
    isa = md.get("AOTI_CPU_ISA", "")
    if key == "cpu" and isa:
        have = cpu_flags()
        if not have:
            return
        missing = set()
        for word in isa.split():
            missing |= _ISA_FLAGS.get(word, set()) - have
        if missing:
            raise RuntimeError(
                f"slimtensor.aoti.load(): the model was compiled for {isa!r} but this CPU lacks "
                f"{sorted(missing)}; recompile it with inductor_configs "
                "{'cpp.march': 'x86-64-v3', 'cpp.simdlen': 256} (AVX2) or for this machine"
            )

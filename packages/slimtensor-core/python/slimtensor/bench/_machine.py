"""What a benchmark result needs to be read later: machine, CPU features, versions, environment."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys

from .._platform import cpu_info

# The CPU flags that decide which copy kernels can run (Note [Copy ISA dispatch] in src/kernels/copy_isa.h).
_INTERESTING_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512dq",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "erms",
    "fsrm",
)


def copy_isa() -> str:
    """The copy-kernel instruction set the core picked (SLIMTENSOR_ISA if set, else the best the CPU has)."""
    from slimtensor import _C

    return str(_C._copy_isa())


def _caches() -> dict:
    out = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in sorted(os.listdir(base)):
            if not entry.startswith("index"):
                continue
            path = os.path.join(base, entry)

            def read(name: str, path: str = path) -> str:
                with open(os.path.join(path, name)) as f:
                    return f.read().strip()

            level, kind = read("level"), read("type")
            name = f"L{level}" + {"Data": "d", "Instruction": "i"}.get(kind, "")
            out[name] = read("size")
    except OSError:
        pass
    return out


def _memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _git_commit() -> str | None:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5
        )
        if out.returncode == 0:
            dirty = subprocess.run(
                ["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
            return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def machine() -> dict:
    model, flags = cpu_info()
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu": model,
        "cpu_flags": sorted(f for f in _INTERESTING_FLAGS if f in flags),
        "copy_isa": copy_isa(),
        "logical_cpus": os.cpu_count(),
        "affinity": affinity,
        "caches": _caches(),
        "memory_bytes": _memory_bytes(),
        "system": f"{platform.system()} {platform.release()} {platform.machine()}",
        "node": platform.node(),
        "env": {
            k: os.environ.get(k)
            for k in ("OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "SLIMTENSOR_ISA", "MKL_NUM_THREADS")
        },
    }


def versions(torch_module) -> dict:
    import numpy

    import slimtensor

    return {
        "python": platform.python_version(),
        "slimtensor": slimtensor.__version__,
        "slimtensor_git": _git_commit(),
        "numpy": numpy.__version__,
        "torch": getattr(torch_module, "__version__", None),
        "compiler": platform.python_compiler(),
    }


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def command_line(argv: list[str]) -> str:
    return " ".join([os.path.basename(sys.executable), "-m", "slimtensor.bench", *argv])

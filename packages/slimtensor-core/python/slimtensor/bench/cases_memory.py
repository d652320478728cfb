"""Memory cases: resident bytes per tensor and per view, import time, installed size (against numpy and torch)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

from ._case import Case, Libs
from ._timing import Settings, summarize

_COUNT = 100_000  # objects per resident-memory sample: RSS moves in pages, so measure many


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _bytes_per_object(make, samples: int) -> dict:
    """Resident bytes one more live object costs (RSS delta over _COUNT objects, median of samples)."""
    values = []
    for _ in range(samples):
        gc.collect()
        before = _rss_bytes()
        keep = [make(i) for i in range(_COUNT)]
        after = _rss_bytes()
        values.append((after - before) / _COUNT)
        del keep
        gc.collect()
    return summarize(values)


def _makers(libs: Libs, what: str) -> dict:
    np, st, torch = libs.np, libs.st, libs.torch
    if what == "tensor":  # a new owning 2x3 float32 tensor (object + storage + its 24 data bytes)
        makers = {"slimtensor": lambda i: st.empty((2, 3)), "numpy": lambda i: np.empty((2, 3), np.float32)}
        if torch is not None:
            makers["torch"] = lambda i: torch.empty((2, 3))
        return makers
    base_st, base_np = st.empty((4, 8)), np.empty((4, 8), np.float32)  # a view of a shared base
    makers = {"slimtensor": lambda i: base_st[1:], "numpy": lambda i: base_np[1:]}
    if torch is not None:
        base_t = torch.empty((4, 8))
        makers["torch"] = lambda i: base_t[1:]
    return makers


def _import_seconds(module: str, samples: int) -> dict:
    """Wall time of `import module` in a fresh interpreter (the interpreter's own start excluded)."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    values = []
    for _ in range(samples):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise RuntimeError(f"import {module} failed: {out.stderr.strip()[-300:]}")
        values.append(float(out.stdout.strip().splitlines()[-1]))
    return summarize(values)


def _tree_bytes(paths: list[str]) -> int:
    total, seen = 0, set()
    for top in paths:
        for root, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                path = os.path.join(root, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_size
    return total


def installed_paths(module) -> list[str]:
    """The folders a package occupies: its own, its compiled module's (editable installs), its .libs folder."""
    paths = {os.path.dirname(os.path.abspath(module.__file__))}
    compiled = getattr(module, "_C", None)
    if compiled is not None and getattr(compiled, "__file__", None):
        paths.add(os.path.dirname(os.path.abspath(compiled.__file__)))
    libs_dir = os.path.join(os.path.dirname(next(iter(paths))), f"{module.__name__}.libs")
    if os.path.isdir(libs_dir):
        paths.add(libs_dir)
    # drop folders inside another one
    return sorted(p for p in paths if not any(p != q and p.startswith(q + os.sep) for q in paths))


def cases(libs: Libs, quick: bool) -> list[Case]:
    linux = os.path.exists("/proc/self/statm")
    no_proc = None if linux else "resident memory is read from /proc/self/statm (Linux only)"
    out = []
    for what, title in (
        ("tensor", "resident bytes per owning 2x3 float32 tensor (object, storage, data)"),
        ("view", "resident bytes per view t[1:] of a shared tensor"),
    ):

        def run(settings: Settings, what: str = what) -> dict:
            samples = max(3, min(settings.repeats, 5))
            return {lib: _bytes_per_object(make, samples) for lib, make in _makers(libs, what).items()} | (
                {} if libs.torch is not None else {"torch": {"skipped": libs.torch_reason}}
            )

        out.append(
            Case(
                id=f"memory/bytes_per_{what}",
                group="memory",
                title=title,
                params={"count": _COUNT},
                metric="bytes",
                run=run,
                skipped=no_proc,
            )
        )

    def run_import(settings: Settings) -> dict:
        samples = 3 if quick else 5
        res = {
            "slimtensor": _import_seconds("slimtensor", samples),
            "numpy": _import_seconds("numpy", samples),
        }
        res["torch"] = (
            _import_seconds("torch", samples) if libs.torch is not None else {"skipped": libs.torch_reason}
        )
        return res

    out.append(
        Case(
            id="memory/import_time",
            group="memory",
            title="import time in a fresh interpreter (slimtensor imports numpy)",
            params={},
            metric="seconds",
            run=run_import,
        )
    )

    def run_size(settings: Settings) -> dict:
        res = {}
        for lib, mod in (("slimtensor", libs.st), ("numpy", libs.np), ("torch", libs.torch)):
            if mod is None:
                res[lib] = {"skipped": libs.torch_reason}
                continue
            paths = installed_paths(mod)
            res[lib] = summarize([float(_tree_bytes(paths))]) | {"paths": paths}
        return res

    out.append(
        Case(
            id="memory/installed_size",
            group="memory",
            title="installed size on disk (package folders, no __pycache__)",
            params={},
            metric="bytes",
            run=run_size,
        )
    )
    return out

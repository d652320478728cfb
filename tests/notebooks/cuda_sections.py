"""Runs the CUDA sections of the notebooks as plain Python (on a GPU machine, without Jupyter), saving their figures.

    python tests/notebooks/cuda_sections.py OUT_DIR notebooks/02_memory_lifetimes.py ...

A notebook's CUDA section is the run of cells from a markdown heading (``## ...``) that names CUDA to the
next heading; the notebook's first code cell (its imports) runs before it. Each section saves its figures
into ``$SLIMTENSOR_NOTEBOOK_FIGURES`` when that is set (this script sets it to OUT_DIR), so pictures made
on the GPU can be looked at elsewhere. ``display`` prints what it is given instead of showing it.
Exit status: the number of notebooks whose CUDA section raised.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from pathlib import Path

HEADING = re.compile(r"^# #{1,3} ", re.MULTILINE)


def cells(path: Path) -> list[tuple[str, str]]:
    """(kind, source) of every cell of a jupytext percent file: kind "markdown" or "code"."""
    out: list[tuple[str, str]] = []
    kind, lines = None, []
    for line in path.read_text().splitlines():
        if line.startswith("# %%"):
            if kind is not None:
                out.append((kind, "\n".join(lines)))
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        elif kind is not None:
            lines.append(line)
    if kind is not None:
        out.append((kind, "\n".join(lines)))
    return out


def cuda_section(path: Path) -> str:
    """The first code cell and every code cell of the sections whose heading names CUDA, as one program."""
    chosen, inside, first = [], False, True
    for kind, src in cells(path):
        headings = [line for line in src.splitlines() if HEADING.match(line)] if kind == "markdown" else []
        if headings:
            inside = any("CUDA" in line for line in headings)
        elif kind == "code" and (inside or first):
            chosen.append(src)
            first = False
    if len(chosen) < 2:
        raise ValueError(f"{path.name}: no section whose heading names CUDA")
    return "\n\n".join(chosen)


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ["SLIMTENSOR_NOTEBOOK_FIGURES"] = str(out_dir)
    os.environ.setdefault("MPLBACKEND", "Agg")
    failed = 0
    for name in argv[1:]:
        path = Path(name)
        print(f"=== {path.name}: CUDA section", flush=True)
        namespace = {"__name__": "__main__", "display": lambda *objs, **_: print(*objs)}
        try:
            exec(compile(cuda_section(path), str(path), "exec"), namespace)  # noqa: S102 (our own notebooks)
        except Exception:  # noqa: BLE001  (report every notebook, then fail)
            traceback.print_exc()
            failed += 1
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

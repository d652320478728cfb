"""Line coverage (gcov) of the Metal plugin's platform-independent files by tests/metal/test_metal_plugin.py.

    .venv-test/bin/python tests/metal/coverage_report.py [coverage-folder]

Builds both C++ test executables with --coverage into the folder (SLIMTENSOR_METAL_COVERAGE), runs the tests,
and prints, per file under src/plugin and src/kernels, the executable lines run by either executable.
"""

from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SRC = os.path.join(ROOT, "packages", "slimtensor-metal", "src")


def main() -> int:
    folder = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="metal-cov-"))
    os.makedirs(folder, exist_ok=True)
    for f in glob.glob(os.path.join(folder, "*.gcda")):
        os.remove(f)  # counts from an earlier run would add up
    env = dict(os.environ, SLIMTENSOR_METAL_COVERAGE=folder)
    test = os.path.join(HERE, "test_metal_plugin.py")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test], env=env, cwd=ROOT
    )
    if r.returncode != 0:
        print("the tests failed: no coverage report")
        return 1
    out = os.path.join(folder, "json")
    os.makedirs(out, exist_ok=True)
    for gcda in glob.glob(os.path.join(folder, "*.gcda")):
        subprocess.run(["gcov", "-j", "-o", folder, gcda], cwd=out, capture_output=True, check=True)
    lines, run = collections.defaultdict(set), collections.defaultdict(set)
    for f in glob.glob(os.path.join(out, "*.gcov.json.gz")):
        for entry in json.load(gzip.open(f))["files"]:
            path = os.path.abspath(os.path.join(ROOT, entry["file"]))
            if not path.startswith(os.path.join(SRC, "plugin")) and not path.startswith(
                os.path.join(SRC, "kernels")
            ):
                continue
            for ln in entry["lines"]:
                lines[path].add(ln["line_number"])
                if ln["count"] > 0:
                    run[path].add(ln["line_number"])
    total = hit = 0
    for path in sorted(lines):
        n, h = len(lines[path]), len(run[path])
        total, hit = total + n, hit + h
        print(f"{os.path.relpath(path, SRC):34s} {h:5d} / {n:5d}  {100 * h / n:5.1f}%")
    print(f"{'total':34s} {hit:5d} / {total:5d}  {100 * hit / total:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())

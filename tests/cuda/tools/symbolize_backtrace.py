"""Names the frames of a segv_backtrace.c stack: python3 symbolize_backtrace.py LOG [WORD ...].

Each `file(+0xoffset)` frame whose file contains one of the WORDs (default: slimtensor, hostdev) is passed to
`addr2line -f -C -e file offset` (function and, where debug info exists, file:line); other frames are
printed as they are.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

FRAME = re.compile(r"^(?P<file>/[^(\s]+)\((?P<sym>[^)+]*)\+(?P<off>0x[0-9a-f]+)\)")


def main(argv: list[str]) -> int:
    words = argv[1:] or ["slimtensor", "hostdev"]
    addr2line = shutil.which("addr2line")
    with open(argv[0], errors="replace") as f:
        lines = f.read().splitlines()
    start = next((i for i, line in enumerate(lines) if "segv_backtrace: native stack" in line), None)
    if start is None:
        print("no native stack in", argv[0])
        return 1
    for line in lines[start + 1 :]:
        m = FRAME.match(line)
        if not m:
            if line.strip() and not line.startswith("/"):
                break
            continue
        name = line
        if addr2line and not m["sym"] and any(w in m["file"] for w in words):
            out = subprocess.run(
                [addr2line, "-f", "-C", "-e", m["file"], m["off"]], capture_output=True, text=True, timeout=20
            ).stdout.split("\n")
            name = f"{m['file'].rsplit('/', 1)[-1]}+{m['off']}: {out[0]} ({out[1] if len(out) > 1 else '?'})"
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

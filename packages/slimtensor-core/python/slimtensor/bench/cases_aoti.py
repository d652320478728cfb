"""AOTI cases: C shim per-call cost and model latency, slimtensor's shims against libtorch's."""

from __future__ import annotations

import importlib.util

from ._case import Case, Libs


def _aoti_missing() -> str | None:
    """Why the AOTI cases cannot run with this slimtensor build, or None when they can."""
    if importlib.util.find_spec("slimtensor.aoti") is None:
        return ("slimtensor.aoti is not part of this build (the AOTI shims and runner are developed on branch "
                "'aoti'; these cases run once they are merged)")
    return None


def cases(libs: Libs, quick: bool) -> list[Case]:
    reason = _aoti_missing()
    if reason is None:
        reason = ("slimtensor.aoti is present, but this suite's AOTI harness wrapper (benchmarks/aoti_shim_bench.cpp "
                  "and benchmarks/aoti_bench.py from branch 'aoti') is not wired in yet")
    return [
        Case(id="aoti/shim_calls", group="aoti", title="per-call cost of the aoti_torch_* shims, slimtensor vs "
             "libtorch_cpu, through one dlsym harness", params={}, metric="time", skipped=reason),
        Case(id="aoti/model_latency", group="aoti", title="latency of the same AOTInductor model .so on slimtensor "
             "and on libtorch (pointwise, linear, MLP)", params={}, metric="time", skipped=reason),
    ]

"""Facts about the machine that only Linux's /proc can tell (Note: the one place that reads it)."""

from __future__ import annotations

import functools
import platform


@functools.lru_cache(maxsize=1)
def cpu_info() -> tuple[str, frozenset[str]]:
    """The CPU's model name and its feature flags (empty where /proc/cpuinfo does not exist)."""
    model = platform.processor() or platform.machine()
    flags: frozenset[str] = frozenset()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model in ("", platform.machine(), platform.processor()):
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = frozenset(value.split())
    except OSError:
        pass
    return model, flags


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags ("avx2", "avx512f", ...)."""
    return cpu_info()[1]

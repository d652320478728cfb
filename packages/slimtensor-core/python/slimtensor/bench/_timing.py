"""Timing primitives of the benchmark suite: calibrated timeit loops, medians, quartiles and spread."""

from __future__ import annotations

import gc
import statistics
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Settings:
    """How long and how often each measurement runs (quick mode shortens both)."""

    repeats: int = 9  # samples per library and case
    min_sample_s: float = 0.02  # each sample runs the call enough times to last at least this long
    warmup: int = 1  # calls before the first sample (faults pages in, fills caches, loads code)


def calibrate(timer: timeit.Timer, min_sample_s: float) -> int:
    """Calls per sample so that one sample lasts at least min_sample_s (a slow call gets 1)."""
    number = 1
    while True:
        t = timer.timeit(number)
        if t >= min_sample_s * 0.2 or number >= 10_000_000:
            break
        number *= 10
    per_call = max(t / number, 1e-10)
    return max(1, min(50_000_000, int(min_sample_s / per_call) + 1))


def measure(stmt: str | Callable[[], Any], settings: Settings, globals_: dict | None = None) -> dict:
    """Seconds per call: one sample per repeat, gc off during each, after a warm-up and calibration.

    ``stmt`` is a timeit statement string (its loop costs about 5-7 ns a call, which is not subtracted) or
    a callable (about 30-50 ns more, used only for calls that last microseconds or longer).
    """
    timer = timeit.Timer(stmt, globals=globals_ or {})
    for _ in range(settings.warmup):
        timer.timeit(1)
    number = calibrate(timer, settings.min_sample_s)
    samples = []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(settings.repeats):
            samples.append(timer.timeit(number) / number)
    finally:
        if gc_was:
            gc.enable()
    return summarize(samples, number=number)


def summarize(samples: list[float], number: int = 1) -> dict:
    """The statistics the JSON schema stores for one library in one case (docs/benchmarks.md)."""
    s = sorted(samples)
    med = statistics.median(s)
    if len(s) >= 4:
        q = statistics.quantiles(s, n=4, method="inclusive")
        q1, q3 = q[0], q[2]
    else:
        q1, q3 = s[0], s[-1]
    return {
        "samples": samples,
        "number": number,
        "median": med,
        "min": s[0],
        "max": s[-1],
        "q1": q1,
        "q3": q3,
        "spread": (q3 - q1) / med if med else 0.0,
    }

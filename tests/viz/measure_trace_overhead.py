"""Measure what tracing costs per view creation, with and without an active trace (a measurement, not a test).

Run: .venv-test/bin/python tests/viz/measure_trace_overhead.py
Prints medians of several repeats, all measured in the same run; docs/visualisation.md records the result.
"""

from __future__ import annotations

import gc
import platform
import statistics
import time

import slimtensor as st

REPEATS = 7
N = 100_000


def per_view_ns(t) -> float:
    """Median wall time of creating (and dropping) one view, in ns, over REPEATS runs of N views."""
    samples = []
    for _ in range(REPEATS):
        gc.collect()
        start = time.perf_counter_ns()
        for _ in range(N):
            t.permute(1, 0)
        samples.append((time.perf_counter_ns() - start) / N)
    return statistics.median(samples)


def per_loop_ns() -> float:
    """The bare Python loop, to subtract nothing but show the scale."""
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter_ns()
        for _ in range(N):
            pass
        samples.append((time.perf_counter_ns() - start) / N)
    return statistics.median(samples)


def main() -> None:
    t = st.empty((64, 64), dtype=st.float32)
    per_view_ns(t)  # warm up
    off_before = per_view_ns(t)
    with st.trace() as tr:
        on = per_view_ns(t)
    events = len(tr.events)
    del tr
    off_after = per_view_ns(t)
    off = statistics.median([off_before, off_after])
    print(f"machine: {platform.machine()} {platform.processor() or ''} python {platform.python_version()}")
    print(f"empty Python loop:             {per_loop_ns():7.1f} ns per iteration")
    print(f"t.permute(1, 0), no trace:     {off:7.1f} ns per view (before {off_before:.1f}, after "
          f"{off_after:.1f})")
    print(f"t.permute(1, 0), trace active: {on:7.1f} ns per view ({events} events recorded, "
          f"{events / (REPEATS * N):.1f} per view)")
    print(f"recording costs {on - off:+.1f} ns per view ({(on - off) / off * 100:+.0f}%)")


if __name__ == "__main__":
    main()

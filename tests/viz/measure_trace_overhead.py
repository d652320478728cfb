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


def one_sample(t) -> float:
    """Wall time of creating (and dropping) one view, in ns, averaged over N views."""
    gc.collect()
    start = time.perf_counter_ns()
    for _ in range(N):
        t.permute(1, 0)
    return (time.perf_counter_ns() - start) / N


def per_loop_ns() -> float:
    """The bare Python loop, to show the scale."""
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter_ns()
        for _ in range(N):
            pass
        samples.append((time.perf_counter_ns() - start) / N)
    return statistics.median(samples)


def main() -> None:
    t = st.empty((64, 64), dtype=st.float32)
    one_sample(t)  # warm up
    off, on, events = [], [], 0
    for _ in range(REPEATS):  # interleaved, so drift affects both alike
        off.append(one_sample(t))
        with st.trace() as tr:
            on.append(one_sample(t))
        events += len(tr.events)
        del tr
    off_ns, on_ns = statistics.median(off), statistics.median(on)
    print(f"machine: {platform.machine()} {platform.processor() or ''} python {platform.python_version()}")
    print(f"empty Python loop:             {per_loop_ns():7.1f} ns per iteration")
    print(
        f"t.permute(1, 0), no trace:     {off_ns:7.1f} ns per view (median of {REPEATS} x {N}; "
        f"range {min(off):.1f}-{max(off):.1f})"
    )
    print(
        f"t.permute(1, 0), trace active: {on_ns:7.1f} ns per view (range {min(on):.1f}-{max(on):.1f}; "
        f"{events / (REPEATS * N):.1f} events per view)"
    )
    print(f"recording costs {on_ns - off_ns:+.1f} ns per view ({(on_ns - off_ns) / off_ns * 100:+.0f}%)")


if __name__ == "__main__":
    main()

"""Where st.empty(1024, device="cuda") spends its time: per-call microseconds of the steps around it.

Usage: python empty_cost.py. Each number is the best of 5 loops of 20000 calls (time.perf_counter), the
tensor dropped at once (so the figure includes the free back to the cache).
"""

from __future__ import annotations

import time

import slimtensor as st
import slimtensor_cuda as stc


def per_call(fn, k=20000) -> float:
    for _ in range(1000):
        fn()
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        best.append((time.perf_counter() - t0) / k * 1e6)
    return min(best)


def main() -> None:
    stc.register()
    dev = st.Device("cuda")
    keep = st.empty(1024, device="cuda")
    cases = {
        "python no-op call (lambda: None)": lambda: None,
        "st.empty(1024) cpu": lambda: st.empty(1024),
        "st.empty(1024, device='cuda')": lambda: st.empty(1024, device="cuda"),
        "st.empty(1024, device=Device)": lambda: st.empty(1024, device=dev),
        "st.empty(1024, device='cuda:0') (no current-device call)": lambda: st.empty(1024, device="cuda:0"),
        "st.empty(0, device='cuda') (no allocator call)": lambda: st.empty(0, device="cuda"),
        "st.empty(1024, dtype=float32, device='cuda')": lambda: st.empty(
            1024, dtype=st.float32, device="cuda"
        ),
        "st.Device('cuda')": lambda: st.Device("cuda"),
        "keep.shape (a bound attribute)": lambda: keep.shape,
        "stc.current_device()": lambda: stc.current_device(),
        "stc.current_stream()": lambda: stc.current_stream(),
    }
    for name, fn in cases.items():
        print(f"{name:58s} {per_call(fn):7.3f} us")


if __name__ == "__main__":
    main()

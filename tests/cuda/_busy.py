"""Keeping a CUDA stream busy for milliseconds, so that ordering tests see work that has not run yet."""

from __future__ import annotations

import slimtensor as st

BUSY_BYTES = 256 << 20  # one fill of 256 MiB takes ~0.1 ms on an H200; 100 of them ~10 ms


def keep_busy(stream, fills: int = 100, value: float = 1.0):
    """Queues `fills` fills of a 256 MiB tensor on `stream` (made there) and returns the tensor; the last
    fill writes `value`. The host does not wait: stream.query() is False right after."""
    import slimtensor_cuda as stc

    with stc.stream(stream):
        x = st.empty(BUSY_BYTES // 4, dtype=st.float32, device="cuda")
        for k in range(fills):
            x.fill_(float(k) if k < fills - 1 else value)
    return x

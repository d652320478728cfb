# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (slimtensor)
#     language: python
#     name: slimtensor
# ---

# %% [markdown]
# # 06 · CUDA streams and events
#
# A GPU runs work in **streams**: queues whose items run in order, while items of different streams may
# overlap. The host only *queues* the work (`copy_(..., non_blocking=True)`, a kernel) and goes on;
# **events** mark a point in a stream, so that another stream can wait for it (`s2.wait_event(e)`), the
# host can wait for it (`e.synchronize()`), and two events give the time between them
# (`start.elapsed_time(end)`, measured by the GPU).
#
# The allocator follows the streams too: a block freed on one stream is handed out again at once on that
# stream (its next work runs after the free anyway), but not to another stream before the work queued so
# far is done; a tensor used on a second stream says so with `t.record_stream(s2)`.
#
# This notebook needs an NVIDIA GPU and slimtensor-cuda; elsewhere each cell says so and does nothing.

# %%
import gc
import os
from pathlib import Path

import slimtensor as st

cuda_info = next((d for d in st.devices() if d.name == "cuda"), None)
HAVE_CUDA = cuda_info is not None and cuda_info.available
if not HAVE_CUDA:
    why = "slimtensor-cuda is not installed" if cuda_info is None else cuda_info.reason
    print(f"skipped: no usable CUDA device here ({why}); the cells below print this note and do nothing")
FIGURES = os.environ.get("SLIMTENSOR_NOTEBOOK_FIGURES")  # GPU runs without Jupyter save the pictures here

# %% [markdown]
# ## 1. CUDA streams: two of them, a timeline
#
# Two streams each take a 64 MiB tensor from pinned host memory to the GPU, work on it there and bring the
# result back: stream A transposes its matrix, stream B converts its values to bfloat16. Every step is
# bracketed by two timing events on its own stream; all times are measured by the GPU from one reference
# event. Stream B's last copy reads A's result too, so B first waits for the event A recorded after its
# transpose: the picture shows that wait.

# %%
class Recorder:
    """Times each step with two CUDA events on the step's stream, from one reference event."""

    def __init__(self):
        self.ref = st.cuda.Event(enable_timing=True)
        self.ref.record()
        self.steps = []

    def run(self, name, stream, label, fn):
        start, end = st.cuda.Event(enable_timing=True), st.cuda.Event(enable_timing=True)
        with st.cuda.stream(stream):
            start.record()
            out = fn()
            end.record()
        self.steps.append((name, label, start, end))
        return out

    def spans(self):
        return [(n, label, self.ref.elapsed_time(a), self.ref.elapsed_time(b)) for n, label, a, b in self.steps]


if HAVE_CUDA:
    n = 4096  # 4096 x 4096 float32: 64 MiB
    # Page-locked ("pinned") host memory of the CUDA driver: only from it do copies run asynchronously.
    a_host = st.full((n, n), 1.0).pin_memory(device="cuda")
    b_host = st.full((n, n), 2.0).pin_memory(device="cuda")
    a_back = st.empty((n, n)).pin_memory(device="cuda")
    b_back = st.empty((n, n), dtype=st.bfloat16).pin_memory(device="cuda")
    sa, sb = st.cuda.Stream(), st.cuda.Stream()
    st.cuda.synchronize()
    with st.trace() as tr:
        rec = Recorder()
        with st.cuda.stream(sa):
            a_dev = st.empty((n, n), device="cuda")   # allocated on stream A
        with st.cuda.stream(sb):
            b_dev = st.empty((n, n), device="cuda")   # allocated on stream B
        rec.run("stream A", sa, "upload A", lambda: a_dev.copy_(a_host, non_blocking=True))
        rec.run("stream B", sb, "upload B", lambda: b_dev.copy_(b_host, non_blocking=True))
        with st.cuda.stream(sa):
            a_t = st.empty((n, n), device="cuda")
        rec.run("stream A", sa, "transpose", lambda: a_t.copy_(a_dev.T))
        a_done = sa.record_event()                    # the point B will wait for
        with st.cuda.stream(sb):
            b_bf = st.empty((n, n), dtype=st.bfloat16, device="cuda")
        rec.run("stream B", sb, "to bfloat16", lambda: b_bf.copy_(b_dev))
        sb.wait_event(a_done)                         # B's next work starts after A's transpose
        rec.run("stream B", sb, "A's result → B's buffer", lambda: b_dev.copy_(a_t))
        a_t.record_stream(sb)                         # a_t was used on B: its block waits for B
        rec.run("stream A", sa, "download A", lambda: a_back.copy_(a_dev, non_blocking=True))
        rec.run("stream B", sb, "download B", lambda: b_back.copy_(b_bf, non_blocking=True))
        del a_t                                       # freed on A, but B still uses it: deferred
        gc.collect()
        st.cuda.synchronize()
    spans = rec.spans()
    for name, label, t0, t1 in spans:
        print(f"{name}  {label:26s} {t0:7.3f} ms → {t1:7.3f} ms  ({t1 - t0:.3f} ms)")
    print("a_back holds ones:", a_back[0, :3].tolist(), " b_back holds twos (bfloat16):", b_back[0, :3].tolist())

# %% [markdown]
# The events' times, drawn: one row per stream. B's upload overlaps A's work, and the copy of A's result
# onto B starts only once A's transpose has finished, the wait on `a_done`.

# %%
fig = None
if HAVE_CUDA:
    transpose_end = next(t1 for name, label, t0, t1 in spans if label == "transpose")
    marks = [("stream B", "waits for a_done", transpose_end)]
    fig = st.viz.timeline(spans, marks, title="two CUDA streams: copies and kernels, timed by CUDA events")
    if FIGURES:
        fig.savefig(Path(FIGURES) / "06_cuda_streams.png", dpi=110, bbox_inches="tight")
else:
    print("skipped: no usable CUDA device here")
fig

# %% [markdown]
# ## 2. CUDA allocations on two streams, in the trace
#
# The same run, seen by the allocator: the trace records each allocation with the stream it was made on
# (`cudaMalloc` for a new segment, a cache hit for a block reused), and each free, including the one that
# had to wait for stream B (`free_deferred`): `a_t` was freed on stream A while B still read it.

# %%
if HAVE_CUDA:
    names = {sa.cuda_stream: "stream A", sb.cuda_stream: "stream B"}
    for e in tr.events:
        if e.kind == "device_event":
            print(f"{(e.time_ns - tr.start_ns) / 1e3:9.1f} µs  {e.op:14s} {e.bytes:>10d} B  "
                  f"{names.get(e.stream, 'stream ' + hex(e.stream or 0))}")
    fig2 = st.viz.lifetimes(tr)
    if FIGURES:
        fig2.savefig(Path(FIGURES) / "06_cuda_lifetimes.png", dpi=110, bbox_inches="tight")
    display(fig2)  # noqa: F821 - IPython's display
else:
    print("skipped: no usable CUDA device here")

# %% [markdown]
# ## 3. CUDA events: ordering and timing
#
# An event that has not completed answers `query()` with False; `synchronize()` waits on the host. Waiting
# on an event orders streams without stopping the host: the work of `s2` below reads what `s1` wrote.

# %%
if HAVE_CUDA:
    s1, s2 = st.cuda.Stream(), st.cuda.Stream()
    x = st.zeros((1 << 24,), device="cuda")
    start, done = st.cuda.Event(enable_timing=True), st.cuda.Event(enable_timing=True)
    with st.cuda.stream(s1):
        start.record()
        for _ in range(20):
            x.fill_(3.0)   # queued: the host does not wait
        done.record()
    print("done right after queueing:", done.query())
    s2.wait_event(done)
    with st.cuda.stream(s2):
        y = x[:4].clone()  # runs after s1's fills
    s2.synchronize()
    print("s2 read", y.tolist(), f"after s1's fills took {start.elapsed_time(done):.3f} ms on the GPU")
    del x, y
    gc.collect()
    print(st.cuda.memory_summary())
else:
    print("skipped: no usable CUDA device here")

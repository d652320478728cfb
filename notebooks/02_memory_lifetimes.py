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
# # 02 · Memory lifetimes
#
# Who allocates a buffer, who keeps it alive, and when is it freed? slimtensor's C++ core can tell you:
# inside `with st.trace() as tr:` it records every **storage** allocated and freed, every **tensor or
# view** created and destroyed (with the operation that made it), every **copy**, and every **AOTI
# handle** (the tensors compiled models hold). `st.viz.lifetimes(tr)` draws the result as a timeline.
#
# Outside a trace the hooks cost one relaxed atomic load each (see `docs/visualisation.md` for the
# measured figure), so tracing is always available and never in the way.

# %%
import ctypes
import gc
from pathlib import Path

import numpy as np
import slimtensor as st

# %% [markdown]
# ## 1. Allocate, view, free
#
# A storage is freed when the **last** tensor that uses it goes away. Here `b` is a view of `a`'s
# storage, and `c` is a copy into a new one.

# %%
with st.trace() as tr:
    a = st.empty((4, 6), dtype=st.float32)
    b = a.permute(1, 0)          # a view: no allocation
    c = b.contiguous()           # a copy: a new storage, and a copy event
    del a                        # the storage survives: b still uses it
    gc.collect()
    del b                        # now it is freed
    gc.collect()

for e in tr.events:
    print(f"{(e.time_ns - tr.start_ns) / 1e3:8.1f} µs  {e.describe()}")

# %%
print(tr.summary())

# %%
st.viz.lifetimes(tr)

# %% [markdown]
# Read the timeline top to bottom: the first storage (thick bar) lives exactly as long as the longest
# of the tensors on it (thin bars under it): `empty` made `a`, `permute` made `b`. The copy arrow
# goes from that storage to the one `contiguous` allocated, which is still alive when the trace stops
# (its bar ends hatched: it outlived the trace).

# %% [markdown]
# ## 2. A view keeps the whole storage alive
#
# A tiny slice of a large tensor pins all of it. This is the most common "why is my memory not freed?".

# %%
with st.trace() as tr:
    big = st.zeros((1000,), dtype=st.float32)
    tail = big[-2:]              # 8 bytes of interest ...
    del big
    gc.collect()
print(tr.summary())
print("tail's storage holds", tail.storage().nbytes, "bytes")

# %% [markdown]
# `clone()` copies only what the view reaches into a storage of its own, and lets the big one go:

# %%
with st.trace() as tr:
    tail = tail.clone()
    gc.collect()
print([e.describe() for e in tr.events if e.kind.startswith("storage")])
st.viz.lifetimes(tr)

# %% [markdown]
# ## 3. Borrowed memory and its owner
#
# `st.from_numpy(a)` does not copy: the storage **borrows** NumPy's buffer and keeps the array alive
# (`storage().owner`). Deleting the array's name is safe; the memory goes back to NumPy only when the
# last tensor using it is gone.

# %%
with st.trace() as tr:
    arr = np.arange(6, dtype=np.float32)
    t = st.from_numpy(arr)
    s = t.storage()
    print("owning:", s.is_owning, " owner:", type(s.owner).__name__, " same memory:",
          t.data_ptr() == arr.ctypes.data)
    del arr, s                   # t still reads valid memory
    gc.collect()
    print(t.numpy())
    del t
    gc.collect()
for e in tr.events:
    print(e.describe())

# %% [markdown]
# ## 4. Exchange with NumPy and DLPack
#
# Going the other way, `t.numpy()` and `np.from_dlpack(t)` hand NumPy a view of slimtensor's storage,
# and the NumPy array keeps that storage alive, even after `t` itself is gone.

# %%
with st.trace() as tr:
    t = st.arange(4, dtype=st.float32)
    shared = np.from_dlpack(t)
    del t
    gc.collect()
    shared[0] = 42.0
    print("numpy still holds the storage:", shared)
    del shared
    gc.collect()
print(tr.kinds())
st.viz.lifetimes(tr)

# %% [markdown]
# ## 5. The AOTI handle lifecycle
#
# Compiled AOTInductor models do not see Python tensors: they call the C functions of the AOTI shim
# (`aoti_torch_empty_strided`, `aoti_torch_delete_tensor_object`, ...) and hold **handles**. A handle
# keeps its storage alive like a tensor does; deleting it releases it. We call the shim directly with
# `ctypes`, exactly as generated code would. (Notebook 05 runs a real compiled model.)

# %%
def find_libslimtensor():
    """The libslimtensor that slimtensor._C already uses: loading another copy would start a second core."""
    try:
        with open("/proc/self/maps") as maps:  # Linux: the file actually mapped into this process
            for line in maps:
                if "libslimtensor" in line:
                    return Path(line.split()[-1])
    except OSError:
        pass
    found = sorted(Path(st.__file__).parent.rglob("libslimtensor*.dylib"))  # macOS
    return found[0] if found else None


lib_path = find_libslimtensor()
lib = ctypes.CDLL(str(lib_path)) if lib_path is not None else None
if lib is None:
    print("skipped: libslimtensor was not found next to the slimtensor package, so the AOTI shim "
          "cannot be called from here")
elif not hasattr(lib, "aoti_torch_empty_strided"):
    print(f"skipped: {lib_path.name} does not export the AOTI shim (aoti_torch_empty_strided) in this "
          "build")
    lib = None
else:
    lib.aoti_torch_empty_strided.restype = ctypes.c_int32
    lib.aoti_torch_empty_strided.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                                             ctypes.POINTER(ctypes.c_int64), ctypes.c_int32,
                                             ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
    lib.aoti_torch_delete_tensor_object.restype = ctypes.c_int32
    lib.aoti_torch_delete_tensor_object.argtypes = [ctypes.c_void_p]
    sizes, strides = (ctypes.c_int64 * 2)(2, 3), (ctypes.c_int64 * 2)(3, 1)
    handle = ctypes.c_void_p()
    with st.trace() as tr:
        # dtype 6 = float32, device type 0 = cpu (the c10 codes)
        err = lib.aoti_torch_empty_strided(2, sizes, strides, st.float32.code, 0, 0, ctypes.byref(handle))
        assert err == 0, f"aoti_torch_empty_strided returned {err}"
        err = lib.aoti_torch_delete_tensor_object(handle)
        assert err == 0, f"aoti_torch_delete_tensor_object returned {err}"
    for e in tr.events:
        print(e.describe())

# %%
if lib is not None:
    display(st.viz.lifetimes(tr))  # noqa: F821 - IPython's display

# %% [markdown]
# ## 6. Counters that must come back
#
# Besides traces, the core keeps running totals per device. After everything above is gone, the live
# counts return to where they started: nothing leaked.

# %%
gc.collect()
before = st.memory_stats("cpu")
x = [st.empty((1024,)) for _ in range(8)]
during = st.memory_stats("cpu")
del x
gc.collect()
after = st.memory_stats("cpu")
live = [k for k in before if k.startswith("live")]
for k in live:
    print(f"{k:18s} before {before[k]:6d}   during {during[k]:6d}   after {after[k]:6d}")
print("back to the baseline:", all(after[k] == before[k] for k in live))

# %% [markdown]
# ## 7. Device memory on CUDA
#
# On a GPU the same trace shows the device's storages in a lane of their own, beside the host's, and the
# CUDA plugin adds its caching allocator's own events on a row at the top of that lane: a `cudaMalloc` of a
# new segment (▲), a block handed out again from the cache (●), a block given back to the cache (▼), and a
# `cudaFree` when `st.cuda.empty_cache()` returns whole segments (×). Copies between host and device are
# red arrows like any other copy. Without a usable CUDA device this section says why and does nothing.

# %%
import os

cuda_info = next((d for d in st.devices() if d.name == "cuda"), None)
if cuda_info is None or not cuda_info.available:
    why = "slimtensor-cuda is not installed" if cuda_info is None else cuda_info.reason
    print(f"skipped: no usable CUDA device here ({why})")
    fig = None
else:
    st.cuda.empty_cache()
    with st.trace() as tr:
        host = st.arange(1 << 16, dtype=st.float32).reshape(256, 256)
        dev = host.to("cuda")            # a cudaMalloc (first use) and a host -> device copy
        t = dev.T.contiguous()           # a transpose kernel into a second block of the same segment
        del dev
        gc.collect()                     # dev's block goes back to the cache ...
        again = st.empty((256, 256), device="cuda")  # ... and is handed out again: a cache hit
        back = t.cpu()                   # device -> host
        del t, again
        gc.collect()
        st.cuda.empty_cache()            # whole free segments go back to CUDA
    for e in tr.events:
        if e.kind in ("device_event", "copy", "storage_alloc", "storage_free"):
            print(e.describe())
    print(tr.summary())
    fig = st.viz.lifetimes(tr)
    if os.environ.get("SLIMTENSOR_NOTEBOOK_FIGURES"):  # GPU runs without Jupyter save the picture
        fig.savefig(Path(os.environ["SLIMTENSOR_NOTEBOOK_FIGURES"]) / "02_cuda_lifetimes.png", dpi=110, bbox_inches="tight")
    print(st.cuda.memory_summary())
fig

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
# # 01 · Strides and views
#
# A tensor is not its numbers. It is **a storage** (one flat block of memory) plus four small pieces of
# metadata that say how to read it: a **shape**, **strides** (how many elements to step in storage for
# one step along each dimension), a **storage offset** (where element `[0, 0, ...]` lives) and a
# **dtype**. Changing the metadata without touching the memory gives a *view*.
#
# We write a layout the way CuTe does, `shape:strides @ offset`, e.g. `(3, 4):(4, 1) @ 0`.
# Every tensor below displays itself as a picture: the **logical grid** on top (each cell labelled with
# the storage element it reads, and coloured by it) and the **storage strip** underneath (the elements
# this view reaches in the same colours; the ones it never reaches are hatched).

# %%
import os

import numpy as np
import slimtensor as st

QUICK = os.environ.get("SLIMTENSOR_QUICK") == "1"  # set by the tests: smaller examples, same story

# %% [markdown]
# ## 1. A contiguous tensor
#
# `arange(12)` fills a storage of 12 elements; `reshape(3, 4)` reads it as 3 rows of 4. To go one row
# down you skip 4 elements, to go one column right you skip 1: strides `(4, 1)`.

# %%
t = st.arange(12, dtype=st.float32).reshape(3, 4)
t

# %%
print("shape", t.shape, " strides", t.stride(), " offset", t.storage_offset())
print("storage:", t.storage().nbytes, "bytes, id", t.storage().id, " contiguous:", t.is_contiguous())

# %% [markdown]
# The rule behind every picture in this notebook:
#
# $$\text{element}(i, j) = \text{offset} + i \cdot \text{stride}_0 + j \cdot \text{stride}_1$$
#
# Here it is as a loop (CuTe's `print2D`), so you can check the labels in the grid above.

# %%
def print2d(x):
    s0, s1 = x.stride()
    for i in range(x.shape[0]):
        print("  ".join(f"{x.storage_offset() + i * s0 + j * s1:3d}" for j in range(x.shape[1])))


print2d(t)

# %% [markdown]
# ## 2. Transpose: same memory, swapped strides
#
# `t.T` does not move a single byte. It swaps the shape *and the strides*: `(4, 3):(1, 4)`. Reading it row
# by row now jumps through storage by 4, so it is **not contiguous**, yet it reaches every element once.

# %%
t.T

# %%
print("same storage:", t.T.storage().id == t.storage().id, " contiguous:", t.T.is_contiguous())
st.viz.views(t, t.T, names=["t", "t.T"])

# %% [markdown]
# In the picture above, each tensor has a lane over the shared storage; the red **overlap** row counts
# how many of the tensors read each element. Writing through one view is visible through the other:

# %%
t.T[0, 1] = 100.0
print(t.numpy())
t.T[0, 1] = 4.0

# %% [markdown]
# ## 3. Slicing with a step leaves gaps
#
# `t[:, ::2]` keeps every other column: the column stride doubles to 2. The skipped elements are still
# in the storage (the view keeps all of it alive), they are just never read: hatched.

# %%
every_other = t[:, ::2]
every_other

# %% [markdown]
# ## 4. The storage offset
#
# `t[1:, 1:]` starts at element 5 (row 1 → 4, column 1 → +1). The offset is the only thing that changes.

# %%
corner = t[1:, 1:]
print(corner.shape, corner.stride(), corner.storage_offset())
corner

# %% [markdown]
# ## 5. `expand`: one element, many cells
#
# `expand` makes a dimension of size 1 appear larger by giving it **stride 0**: every step along it
# stays on the same element. No memory is allocated. The storage strip marks each element reached more
# than once in red, with how many times. This *self-overlap* is why such a tensor cannot be written to:

# %%
row = st.arange(3, dtype=st.float32)
tiled = row.expand(4, 3)
tiled

# %%
try:
    tiled.copy_(st.ones((4, 3)))
except (RuntimeError, ValueError) as e:
    print(type(e).__name__ + ":", e)

# %% [markdown]
# ## 6. `reshape` views when it can, copies when it must
#
# A view exists only if some strides describe the new shape over the *same* storage. `t.reshape(2, 6)`
# can; `t.T.reshape(12)` cannot (the elements of `t.T` are not in storage order), so `reshape` copies into
# a new storage, while `view` refuses.

# %%
r = t.reshape(2, 6)
print("t.reshape(2, 6) is a view:", r.storage().id == t.storage().id, r.stride())
flat = t.T.reshape(12)
print("t.T.reshape(12) is a view:", flat.storage().id == t.storage().id,
      f"(a copy; contiguous: {flat.is_contiguous()})")
try:
    t.T.view(12)
except (RuntimeError, ValueError) as e:
    print(type(e).__name__ + ":", e)
flat

# %% [markdown]
# `contiguous()` does the same copy explicitly, and returns the tensor itself when it already is one:

# %%
print("t.contiguous() is t:", t.contiguous() is t)
t.T.contiguous()

# %% [markdown]
# ## 7. `as_strided`: any layout you like, bounds checked
#
# `as_strided` sets shape, strides and offset by hand. Overlapping sliding windows of width 3, stepping
# by 1, over 6 elements: a `(4, 3):(1, 1)` view. Windows share elements, which the strip shows in red.

# %%
signal = st.arange(6, dtype=st.float32)
windows = signal.as_strided((4, 3), (1, 1))
windows

# %% [markdown]
# NumPy's `as_strided` trusts you ("use with extreme care"). slimtensor checks every view against its
# storage and says what went wrong:

# %%
try:
    signal.as_strided((4, 3), (2, 1))
except (RuntimeError, ValueError, IndexError) as e:
    print(type(e).__name__ + ":", e)

# %% [markdown]
# ## 8. Higher ranks: small multiples
#
# A rank-3 tensor is drawn as one grid per leading index. `permute(2, 0, 1)` moves the fastest
# dimension to the front, so each small multiple now walks storage with strides 12 and 4.

# %%
cube = st.arange(24, dtype=st.float32).reshape(2, 3, 4)
cube

# %%
cube.permute(2, 0, 1)

# %% [markdown]
# ## 9. NumPy counts strides in bytes, slimtensor (like torch) in elements
#
# The same memory, shared without a copy: `from_numpy` borrows the array's buffer.

# %%
a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
b = st.from_numpy(a)
print("numpy strides (bytes):   ", a.strides)
print("slimtensor strides (elements):", b.stride(), "× itemsize", b.itemsize)
b

# %% [markdown]
# ## 10. Large tensors are summarised
#
# Beyond a few hundred cells the picture shows the corners of the grid and the storage as one bar with
# the view's span marked on it (call `st.viz.layout(t, max_cells=...)` to choose). Above the display
# limit a tensor shows as text only; `st.set_display("text")` turns the pictures off altogether.

# %%
n = 64 if QUICK else 1024
big = st.zeros((n, n), dtype=st.float32)[::2, 8:]
st.viz.layout(big)

# %%
previous = st.set_display("text")
display(t)  # noqa: F821 - IPython's display
_ = st.set_display(previous.mode)

# %% [markdown]
# **What to remember:** a view is new metadata over old memory; strides say where each step goes;
# contiguity means "strides are what a fresh row-major tensor of this shape would have"; stride 0
# repeats; gaps and overlaps are visible in the storage strip. Notebook 02 follows the memory itself:
# who allocates it, who keeps it alive, and when it is freed.

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
# # 03 · Devices and plugins
#
# slimtensor's core knows one device by itself: the **CPU**. Every other device (CUDA, Metal, your own
# accelerator) comes from a **plugin**: a separate Python package, installed with pip, that hands the
# core a table of C functions (allocate, free, copy host↔device, strided copy, fill, synchronize, ...).
# The core never depends on a plugin; a plugin depends only on the core's *C* ABI, never on its C++.
#
# ```
#  pip install slimtensor-cuda
#        │  entry point  [project.entry-points."slimtensor.devices"]  cuda = "slimtensor_cuda:register"
#        ▼
#  import slimtensor ──(lazy discovery)──► slimtensor_cuda.register() ──► device table (C structs)
#                                                                          ABI major must match,
#                                                                          plugin minor ≤ core minor
# ```
#
# A plugin whose hardware is absent still registers, as **unavailable, with the reason**; a plugin that
# fails to load warns with its own traceback and never breaks `import slimtensor`.
# `SLIMTENSOR_DEVICE_AUTOLOAD=0` turns discovery off.

# %%
import gc
from importlib import metadata

import slimtensor as st

# %% [markdown]
# ## 1. Which devices are here?

# %%
devices = st.devices()
for d in devices:
    print(d)

# %% [markdown]
# And which packages declare themselves as slimtensor device plugins (the entry-point group
# `slimtensor.devices`)?

# %%
plugins = metadata.entry_points(group="slimtensor.devices")
if not plugins:
    print("no device plugin is installed: only the CPU (built into the core) is available")
for ep in plugins:
    dist = ep.dist.name if ep.dist else "?"
    print(f"{ep.name:10s} -> {ep.value:30s} from {dist}")

# %% [markdown]
# ## 2. A tensor on every available device
#
# The same code runs on each device: create on the CPU, copy over with `.to(device)`, copy back, and
# trace it. In the timeline each device gets its own lane, and copies are arrows between lanes.
# Devices that are registered but absent are skipped, with the reason.

# %%
def name_of(d):
    return str(getattr(d, "name", d))


def is_available(d):
    return bool(getattr(d, "available", True))


targets = [d for d in devices if name_of(d) != "cpu" and not name_of(d).startswith("cpu")]
for d in targets:
    if not is_available(d):
        print(f"skipped: {name_of(d)} is not available here: {getattr(d, 'reason', 'no reason given')}")

with st.trace() as tr:
    x = st.arange(12, dtype=st.float32).reshape(3, 4)
    round_trips = {}
    for d in targets:
        if is_available(d):
            on_device = x.to(device=name_of(d))
            round_trips[name_of(d)] = on_device.cpu().numpy()
            del on_device
            gc.collect()
for name, values in round_trips.items():
    print(name, "round trip equal:", (values == x.numpy()).all())
if not targets:
    print("skipped: no device other than the CPU is registered; install a plugin such as slimtensor-cuda "
          "to see a second lane")
st.viz.lifetimes(tr)

# %% [markdown]
# A layout picture does not depend on where the memory is: strides are strides on every device.

# %%
x.T

# %% [markdown]
# ## 3. Writing a plugin
#
# A plugin is a small Python package with a compiled module. Its `pyproject.toml` declares the entry
# point and pins the core's minor version:
#
# ```toml
# [project]
# name = "slimtensor-mydev"
# dependencies = ["slimtensor-core==0.1.*"]
#
# [project.entry-points."slimtensor.devices"]
# mydev = "slimtensor_mydev:register"
# ```
#
# `register()` is a cheap Python function: it imports the compiled module and hands the core a
# PyCapsule named `"slimtensor.device_plugin"` that holds the plugin's one exported C function,
# `st_plugin_init`. The core calls it with a table of core functions the plugin may use, and gets back
# the plugin's device table. Both tables are versioned C structs starting with
# `{struct_size, abi_major, abi_minor}`, declared in `slimtensor/c/device_plugin.h` (installed with the
# core), so a plugin built against an older core keeps working, and a plugin that needs a newer core is
# refused with a message that says what to install — never a crash. The plugin never links against
# libslimtensor, and no C++ type crosses between the two wheels.
#
# The header is the contract; here are its first lines, read from the installed core:

# %%
from pathlib import Path  # noqa: E402

header = Path(st.include_dir()) / "slimtensor" / "c" / "device_plugin.h"  # also in an editable install
print(f"{header}:\n")
print("".join(header.read_text().splitlines(keepends=True)[:40]))

# %% [markdown]
# ## 4. The CUDA device
#
# `pip install slimtensor-cuda` adds the device `cuda` (an NVIDIA GPU, through the CUDA runtime that torch
# loads too). `st.cuda` is that plugin's module: the GPU's properties, streams and events, and its caching
# allocator, with the names `torch.cuda` uses. Every GPU has an index (`cuda:0`, `cuda:1`, ...); an index the
# machine does not have is a clear error, and copies between two GPUs go directly when the GPUs allow peer
# access, else through a staging buffer on the destination. Without a usable GPU this section says why.

# %%
import os  # noqa: E402
from pathlib import Path  # noqa: E402

cuda_info = next((d for d in st.devices() if d.name == "cuda"), None)
if cuda_info is None or not cuda_info.available:
    why = "slimtensor-cuda is not installed" if cuda_info is None else cuda_info.reason
    print(f"skipped: no usable CUDA device here ({why})")
else:
    props = st.cuda.get_device_properties(0)
    print(f"{st.cuda.device_count()} GPU(s); cuda:0 is {props.name}, compute capability {props.major}.{props.minor}, "
          f"{props.total_memory / 2**30:.0f} GiB, {props.multi_processor_count} SMs")
    g = st.arange(12, dtype=st.float32).reshape(3, 4).to("cuda")
    view = g.T[1:]                               # a view on the GPU: same storage, new strides
    print(view.device, view.shape, view.stride(), "storage shared:", view.storage().id == g.storage().id)
    print("copied back:", view.contiguous().cpu().tolist())
    with st.cuda.device(0):                      # the current device inside the block
        print("current device:", st.cuda.current_device())
    try:
        g.to(f"cuda:{st.cuda.device_count()}")   # one past the last GPU
    except (RuntimeError, ValueError) as e:
        print(f"{type(e).__name__}: {e}")
    fig = st.viz.layout(view)
    if os.environ.get("SLIMTENSOR_NOTEBOOK_FIGURES"):  # GPU runs without Jupyter save the picture
        fig.savefig(Path(os.environ["SLIMTENSOR_NOTEBOOK_FIGURES"]) / "03_cuda_layout.png", dpi=110, bbox_inches="tight")
    display(fig)  # noqa: F821 - IPython's display

# %% [markdown]
# **What to remember:** the CPU is built in, every other device is a pip-installable plugin found
# through an entry point, absent devices say why, and the layout and lifetime tools work the same on
# all of them.

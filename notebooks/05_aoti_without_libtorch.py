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
# # 05 · Running an AOTInductor model without libtorch
#
# PyTorch's **AOTInductor** compiles a model ahead of time into a shared library. The generated code does
# not call PyTorch's C++ directly: it calls a small C ABI, the **AOTI shim** (`aoti_torch_empty_strided`,
# `aoti_torch_get_data_ptr`, `aoti_torch_delete_tensor_object`, ...). Compiled with
# `aot_inductor.link_libtorch=False`, the model does not even link against libtorch. slimtensor
# implements that shim, so the model runs in a process where **torch is not imported at all**.
#
# The plan:
# 1. compile a small model with torch, in a **separate process** (torch is only needed at build time);
# 2. load it here with `st.aoti.load` and run it on slimtensor tensors;
# 3. trace its memory: every buffer the model allocates, every AOTI handle it creates and deletes.

# %%
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import slimtensor as st


def compile_python() -> str | None:
    """The interpreter that has torch: $SLIMTENSOR_COMPILE_PYTHON, the .venv-compile that `make lab` sets up,
    or this kernel's own interpreter when torch is installed next to it (the test environment)."""
    if os.environ.get("SLIMTENSOR_COMPILE_PYTHON"):
        return os.environ["SLIMTENSOR_COMPILE_PYTHON"]
    for folder in [Path.cwd(), *Path.cwd().parents]:
        candidate = folder / ".venv-compile" / "bin" / "python"
        if candidate.exists():
            return str(candidate)
    import importlib.util

    return sys.executable if importlib.util.find_spec("torch") is not None else None  # finds, never imports


def libtorch_mapped() -> list[str]:
    """The libtorch libraries mapped into this very process (Linux: /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as maps:
            return sorted({line.split()[-1] for line in maps if "libtorch" in line})
    except OSError:
        return ["(cannot read /proc/self/maps on this system)"]


COMPILER = compile_python()
print("torch for compiling:", COMPILER or "none found")
print("libtorch mapped into this kernel:", libtorch_mapped() or "none")
if COMPILER is None:
    print("skipped: no Python with torch was found to compile the model: run `make lab` (it sets up "
          ".venv-compile with a CPU build of torch 2.13.0) or set SLIMTENSOR_COMPILE_PYTHON. Running an "
          "already compiled .pt2 needs only slimtensor.")
READY = COMPILER is not None

# %% [markdown]
# ## 1. Compile in a subprocess
#
# The script below is an ordinary torch program: define a model, `torch.export` it, and package it with
# `aoti_compile_and_package`. It also saves an input and torch's own output, to check our result
# against. It runs in its own interpreter (the compile environment, `.venv-compile`, that `make lab` sets up
# with a CPU build of torch), so this kernel never loads libtorch.

# %%
COMPILE = textwrap.dedent('''
    import sys
    import numpy as np
    import torch

    class TinyNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(8, 16)
            self.fc2 = torch.nn.Linear(16, 4)

        def forward(self, x):
            return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)

    out = sys.argv[1]
    torch.manual_seed(0)
    model = TinyNet().eval()
    x = torch.randn(2, 8)
    program = torch.export.export(model, (x,))
    torch._inductor.aoti_compile_and_package(
        program, package_path=out + "/tiny.pt2",
        inductor_configs={"aot_inductor.link_libtorch": False})
    np.save(out + "/x.npy", x.numpy())
    np.save(out + "/expected.npy", model(x).detach().numpy())
''')

workdir = Path(tempfile.mkdtemp(prefix="slimtensor-aoti-"))
if READY:
    version = subprocess.run([COMPILER, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                             text=True, timeout=300).stdout.strip()
    print(f"compiling TinyNet (Linear 8->16, ReLU, Linear 16->4, softmax) with torch {version} "
          f"({COMPILER}) into {workdir}; this takes a minute or two ...", flush=True)
    started = time.monotonic()
    run = subprocess.run([COMPILER, "-c", COMPILE, str(workdir)], capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        print(run.stderr[-3000:])
        raise RuntimeError("compiling the model failed (see above)")
    print(f"compiled in {time.monotonic() - started:.0f} s:", sorted(p.name for p in workdir.iterdir()))
    print("torch imported in this kernel:", "torch" in sys.modules)

# %% [markdown]
# ## 2. Load and run it on slimtensor

# %%
if READY:
    model = st.aoti.load(str(workdir / "tiny.pt2"), device="cpu")
    x = st.from_numpy(np.load(workdir / "x.npy"))
    outputs = model(x)
    y = outputs[0] if isinstance(outputs, (list, tuple)) else outputs
    expected = np.load(workdir / "expected.npy")
    print("output", y.shape, y.dtype.name, "matches torch:", np.allclose(y.numpy(), expected, atol=1e-5))
    print(y.numpy())

# %% [markdown]
# ## 3. What the model does with memory
#
# Tracing a second run shows the model's working set: intermediate buffers it allocates through
# `aoti_torch_empty_strided`, the AOTI handles it creates and deletes, and which storages are still
# alive when it returns (the outputs: each output's handle is taken back into a plain tensor, so no handle
# outlives the run).

# %%
if READY:
    with st.trace() as tr:
        outputs = model(x)
    print(tr.summary())
    kinds = tr.kinds()
    created, deleted = kinds.count("handle_create"), kinds.count("handle_delete")
    print("handles created / deleted:", created, "/", deleted)
    # The model deletes every handle it made for intermediates; slimtensor takes each output's handle back
    # into its tensor (the handle is deleted, the storage lives on in the tensor).
    n_outputs = len(outputs) if isinstance(outputs, (list, tuple)) else 1
    print("handles left after the run:", created - deleted, "with", n_outputs, "outputs alive")

# %%
if READY:
    display(st.viz.lifetimes(tr))  # noqa: F821 - IPython's display

# %% [markdown]
# The output is a slimtensor tensor like any other: its layout picture, its storage, its owner.

# %%
if READY:
    display(y)  # noqa: F821 - IPython's display
    print("torch imported in this kernel:", "torch" in sys.modules)
    print("libtorch mapped into this kernel:", libtorch_mapped() or "none")
    shutil.rmtree(workdir, ignore_errors=True)

# %% [markdown]
# ## 4. The same on a GPU: one CUDA model's device memory over one run
#
# With the CUDA plugin (`slimtensor-cuda`) and an NVIDIA GPU, `st.aoti.load(..., device="cuda")` runs
# models compiled for CUDA (`aot_inductor.embed_kernel_binary=True` puts the Triton kernels inside the
# `.so`). Their weights, their intermediates and their outputs are slimtensor storages on `cuda:0`, so a
# trace sees all of it: below, the load (the weights the model copies in), one run, and the close. This
# section needs a GPU and a CUDA build of torch to compile with; elsewhere it says why and does nothing.

# %%
def cuda_reason() -> str | None:
    """None when a CUDA model can be compiled and run here, else why not (in plain words)."""
    cuda = [d for d in st.devices() if d.name == "cuda"]
    if not cuda:
        return "the CUDA plugin (slimtensor-cuda) is not installed"
    if not cuda[0].available:
        return f"no usable CUDA GPU here ({cuda[0].reason})"
    if COMPILER is None:
        return "no Python with torch to compile the model"
    probe = subprocess.run([COMPILER, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=300)
    if probe.stdout.strip() != "True":
        return "the torch that compiles models here has no CUDA (a CPU build)"
    return None


WHY_NOT_CUDA = cuda_reason()
print("CUDA section:", "runs" if WHY_NOT_CUDA is None else f"skipped: {WHY_NOT_CUDA}")

# %%
if WHY_NOT_CUDA is None:
    cuda_dir = Path(tempfile.mkdtemp(prefix="slimtensor-aoti-cuda-"))
    cuda_compile = COMPILE.replace("model = TinyNet().eval()", "model = TinyNet().eval().cuda()").replace(
        "x = torch.randn(2, 8)", "x = torch.randn(2, 8).cuda()").replace(
        '"aot_inductor.link_libtorch": False', '"aot_inductor.link_libtorch": False, '
        '"aot_inductor.embed_kernel_binary": True').replace(
        "x.numpy()", "x.cpu().numpy()").replace("model(x).detach().numpy()", "model(x).detach().cpu().numpy()")
    run = subprocess.run([COMPILER, "-c", cuda_compile, str(cuda_dir)], capture_output=True, text=True,
                         timeout=900)
    if run.returncode != 0:
        print(run.stderr[-3000:])
        raise RuntimeError("compiling the CUDA model failed (see above)")
    xc = st.from_numpy(np.load(cuda_dir / "x.npy")).to("cuda")
    with st.trace() as cuda_trace:
        with st.aoti.load(str(cuda_dir / "tiny.pt2"), device="cuda") as cuda_model:
            yc = cuda_model(xc)
            yc = yc[0] if isinstance(yc, (list, tuple)) else yc
            got = yc.cpu().numpy()
            del yc
    print("matches torch on the GPU:", np.allclose(got, np.load(cuda_dir / "expected.npy"), atol=1e-4))
    cuda_events = [e for e in cuda_trace.events if e.device.startswith("cuda")]
    print(f"{len(cuda_events)} events on cuda:0; weights the model allocated:",
          sum(e.bytes for e in cuda_trace.events if e.op == "aoti_model_malloc"), "bytes")
    display(st.viz.lifetimes(cuda_trace))  # noqa: F821 - IPython's display
    shutil.rmtree(cuda_dir, ignore_errors=True)

# %% [markdown]
# **What to remember:** torch is a *build-time* tool here. The `.pt2` package carries a shared library
# that speaks the AOTI shim ABI, and slimtensor supplies that ABI, so deploying the model needs
# slimtensor and nothing else.

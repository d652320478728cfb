"""Compiles the test models of model_zoo.py with AOTInductor into a cache folder (run in a subprocess).

Usage: python compile_models.py [--zoo MODULE] [--device cuda] [--jobs N] OUT_DIR NAME [NAME ...]
MODULE (default model_zoo) is the file of tests/aoti that defines models() and EXTRA_OPTIONS.
For each NAME writes NAME.pt2 (libtorch-free, AVX2 code) and NAME.npz (inputs and eager outputs of every
input set, bfloat16 stored as its uint16 bits) plus NAME.json (dtypes). Existing outputs are kept.
With --device cuda the module and its inputs are moved to the GPU and compiled with CUDA_OPTIONS (Triton
kernels embedded in the .so); the eager outputs are the GPU's. --jobs N compiles N models at once, each in
its own process (torch compiles one model on one core for most of its time).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

COMMON_OPTIONS = {
    "aot_inductor.link_libtorch": False,
    "cpp.march": "x86-64-v3",
    "cpp.simdlen": 256,
}
# CUDA models: no libtorch, and the kernels' cubins inside the .so (no cubin directory to ship).
CUDA_OPTIONS = {
    "aot_inductor.link_libtorch": False,
    "aot_inductor.embed_kernel_binary": True,
}


def _to_numpy(t):
    import torch

    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view("uint16")
    return t.numpy()


def compile_one(out_dir: str, name: str, zoo: str = "model_zoo", device: str = "cpu") -> None:
    import importlib

    import numpy as np
    import torch

    zoo_module = importlib.import_module(zoo)
    EXTRA_OPTIONS, models = zoo_module.EXTRA_OPTIONS, zoo_module.models
    factory, example, dynamic, extra = models()[name]
    torch.manual_seed(0)
    module = factory().eval()
    options = dict(COMMON_OPTIONS if device == "cpu" else CUDA_OPTIONS)
    options.update(EXTRA_OPTIONS.get(name, {}) if device == "cpu" else {})
    if device != "cpu":
        module = module.to(device)
        example = tuple(t.to(device) for t in example)
        extra = tuple(t.to(device) for t in extra) if extra else extra
    # not an inductor option: torch.use_deterministic_algorithms while compiling (it makes inductor keep
    # some ops as fallbacks, e.g. scatter)
    deterministic = options.pop("deterministic_algorithms", False)
    torch.use_deterministic_algorithms(deterministic)
    # not an inductor option either: oneDNN off while exporting (nn.LSTM then decomposes into matmuls
    # instead of calling mkldnn_rnn_layer)
    mkldnn = options.pop("mkldnn_enabled", True)
    with torch.no_grad(), torch.backends.mkldnn.flags(enabled=mkldnn):
        ep = torch.export.export(module, example, dynamic_shapes=dynamic)
        tmp = os.path.join(out_dir, f"{name}.{os.getpid()}.tmp.pt2")
        torch._inductor.aoti_compile_and_package(ep, package_path=tmp, inductor_configs=options)
        arrays, meta = {}, {"inputs": [], "outputs": []}
        for s, inputs in enumerate([example] + ([extra] if extra else [])):
            outs = module(*inputs)
            outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
            for i, t in enumerate(inputs):
                arrays[f"in{s}_{i}"] = _to_numpy(t)
            for i, t in enumerate(outs):
                arrays[f"out{s}_{i}"] = _to_numpy(t)
            meta["inputs"].append([str(t.dtype).removeprefix("torch.") for t in inputs])
            meta["outputs"].append([str(t.dtype).removeprefix("torch.") for t in outs])
    np.savez(os.path.join(out_dir, f"{name}.npz"), **arrays)
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump(meta, f)
    os.replace(tmp, os.path.join(out_dir, f"{name}.pt2"))


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    args = sys.argv[1:]
    zoo, device, jobs = "model_zoo", "cpu", 1
    while args[:1] and args[0].startswith("--"):
        flag, value, args = args[0], args[1], args[2:]
        if flag == "--zoo":
            zoo = value
        elif flag == "--device":
            device = value
        elif flag == "--jobs":
            jobs = max(1, int(value))
        else:
            raise SystemExit(f"compile_models.py: unknown option {flag}")
    out_dir, names = args[0], args[1:]
    os.makedirs(out_dir, exist_ok=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    todo = [n for n in names if not os.path.exists(os.path.join(out_dir, f"{n}.pt2"))]
    if jobs > 1 and len(todo) > 1:
        _compile_parallel(out_dir, todo, zoo, device, jobs)
        return
    for name in todo:
        t0, cpu0 = time.time(), _cpu_seconds()
        print(f"compiling {name} ...", flush=True)
        compile_one(out_dir, name, zoo, device)
        # CPU seconds (this process and the compilers it ran) say what a model costs on a loaded machine
        print(f"compiled {name} in {time.time() - t0:.1f}s ({_cpu_seconds() - cpu0:.1f} CPU s)", flush=True)


def _compile_parallel(out_dir: str, names: list[str], zoo: str, device: str, jobs: int) -> None:
    """One process per model, at most ``jobs`` at once; fails (after all finished) if any failed."""
    import subprocess

    running: list[tuple[str, subprocess.Popen]] = []
    failed = []

    def reap(block: bool) -> None:
        for item in list(running):
            name, p = item
            if block or p.poll() is not None:
                if p.wait() != 0:
                    failed.append(name)
                running.remove(item)
                if not block:
                    return

    for name in names:
        while len(running) >= jobs:
            reap(block=False)
            time.sleep(0.2)
        cmd = [sys.executable, os.path.abspath(__file__), "--zoo", zoo, "--device", device, out_dir, name]
        running.append((name, subprocess.Popen(cmd)))
    while running:
        reap(block=True)
    if failed:
        raise SystemExit(f"compile_models.py: compiling {failed} failed (output above)")


if __name__ == "__main__":
    main()

"""Compiles the test models of model_zoo.py with AOTInductor into a cache folder (run in a subprocess).

Usage: python compile_models.py [--zoo MODULE] OUT_DIR NAME [NAME ...]
MODULE (default model_zoo) is the file of tests/aoti that defines models() and EXTRA_OPTIONS.
For each NAME writes NAME.pt2 (libtorch-free, AVX2 code) and NAME.npz (inputs and eager outputs of every
input set, bfloat16 stored as its uint16 bits) plus NAME.json (dtypes). Existing outputs are kept.
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


def _to_numpy(t):
    import torch

    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view("uint16")
    return t.numpy()


def compile_one(out_dir: str, name: str, zoo: str = "model_zoo") -> None:
    import importlib

    import numpy as np
    import torch

    zoo_module = importlib.import_module(zoo)
    EXTRA_OPTIONS, models = zoo_module.EXTRA_OPTIONS, zoo_module.models
    factory, example, dynamic, extra = models()[name]
    torch.manual_seed(0)
    module = factory().eval()
    options = dict(COMMON_OPTIONS)
    options.update(EXTRA_OPTIONS.get(name, {}))
    # not an inductor option: torch.use_deterministic_algorithms while compiling (it makes inductor keep
    # some ops as fallbacks, e.g. scatter)
    deterministic = options.pop("deterministic_algorithms", False)
    torch.use_deterministic_algorithms(deterministic)
    with torch.no_grad():
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
    zoo = "model_zoo"
    if args[:1] == ["--zoo"]:
        zoo, args = args[1], args[2:]
    out_dir, names = args[0], args[1:]
    os.makedirs(out_dir, exist_ok=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    for name in names:
        if os.path.exists(os.path.join(out_dir, f"{name}.pt2")):
            continue
        t0, cpu0 = time.time(), _cpu_seconds()
        print(f"compiling {name} ...", flush=True)
        compile_one(out_dir, name, zoo)
        # CPU seconds (this process and the compilers it ran) say what a model costs on a loaded machine
        print(f"compiled {name} in {time.time() - t0:.1f}s ({_cpu_seconds() - cpu0:.1f} CPU s)", flush=True)


if __name__ == "__main__":
    main()

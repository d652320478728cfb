"""End-to-end latency of the same AOTInductor model .so on slimtensor's shims and on libtorch's, plus addmm.

    python -m slimtensor.bench.aoti_models MODEL_DIR [--threads 1] [--models a,b] [--repeats 21] [--rounds 3]
                                                     [--no-addmm] [--json out.json]

MODEL_DIR holds NAME.pt2/.npz/.json as written by tests/aoti/compile_models.py (the test models, or the
architecture zoo's folder with --models ZOO). Each side runs in its own subprocess: "slim" loads the model with
slimtensor.aoti; "torch" loads libtorch_cpu RTLD_GLOBAL (so the very same libtorch-free .so binds to libtorch's
shims) and dlopens the model. Both then time the same loop through ctypes: make the input handles with that
library's create_tensor_from_blob_v2, Run, delete the outputs. The sides alternate --rounds times; each round
takes --repeats samples (each the mean of a loop of about 50 ms) per case, and a case's samples are all its
rounds' (63 by default). Printed: min and median microseconds per run, and the ratio of the medians (slim/torch).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

MODELS = [
    "pointwise",
    "linear",
    "mlp",
    "conv1d",
    "conv2d_groups",
    "small_cnn",
    "softmax",
    "layer_norm",
    "sdpa",
    "transformer_block",
    "view_permute",
    "two_outputs",
]
# The transformers models of the architecture zoo (tests/aoti/arch_zoo.py; CNNs and RNNs are timed with
# the oneDNN work's cases). --models ZOO selects them.
ZOO_MODELS = [
    "gpt2_mask",
    "gpt2_ids",
    "llama_mask",
    "llama_ids",
    "llama_bf16",
    "qwen2_mask",
    "qwen2_ids",
    "mistral_mask",
    "mistral_ids",
    "bert",
    "bert_dynamic",
    "roberta",
    "t5_encoder",
    "vit",
    "whisper_encoder",
]
ADDMM = [(64, 256, 256), (256, 1024, 1024), (512, 512, 2048)]
REPEATS = 21  # samples per case and round: medians of at least 20

CHILD = r"""
import ctypes, os, sys, time, json, zipfile, tempfile
import numpy as np
side, d, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
names, addmm, repeats = [n for n in sys.argv[4].split(",") if n], json.loads(sys.argv[5]), int(sys.argv[6])
os.environ["OMP_NUM_THREADS"] = str(threads)
H = ctypes.c_void_p
P64 = ctypes.POINTER(ctypes.c_int64)
if side == "torch":
    import torch
    torch.set_num_threads(threads)
    libtorch = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    lib = ctypes.CDLL(libtorch, mode=os.RTLD_GLOBAL)
    def open_model(path):
        tmp = tempfile.mkdtemp()
        with zipfile.ZipFile(path) as z:
            so = [n for n in z.namelist() if n.endswith(".so")][0]
            open(os.path.join(tmp, "m.so"), "wb").write(z.read(so))
        return ctypes.CDLL(os.path.join(tmp, "m.so"), mode=os.RTLD_LOCAL | os.RTLD_NOW)
else:
    from slimtensor import aoti
    from slimtensor.aoti import _lib
    aoti.set_num_threads(threads)
    lib = _lib.lib()
    models = []
    def open_model(path):
        m = aoti.load(path, check_inputs=False)
        models.append(m)
        return m._dll
blob = lib.aoti_torch_create_tensor_from_blob_v2
I32, I64, VP = ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p
blob.restype, blob.argtypes = I32, [VP, I64, P64, P64, I64, I32, I32, I32, VP, I32,
                                               ctypes.c_void_p, ctypes.c_int64]
delete = lib.aoti_torch_delete_tensor_object
delete.restype, delete.argtypes = ctypes.c_int32, [H]
CODES = {"float32": 6, "float64": 7, "int64": 4, "int32": 3, "bool": 11, "bfloat16": 15, "float16": 5,
         "uint8": 0, "int8": 1}
def bench(fn):
    fn(); fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.05:
        fn(); n += 1
    res = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        res.append((time.perf_counter() - t0) / n * 1e6)
    return res
out = {}
for name in names:
    dll = open_model(f"{d}/{name}.pt2")
    c = H()
    create = dll.AOTInductorModelContainerCreateWithDevice
    create.argtypes = [ctypes.POINTER(H), ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p]
    if side == "torch":
        assert create(ctypes.byref(c), 1, b"cpu", None) == 0
    else:
        c = models[-1]._container
    run = dll.AOTInductorModelContainerRun
    run.argtypes = [H, ctypes.POINTER(H), ctypes.c_size_t, ctypes.POINTER(H), ctypes.c_size_t, H, H]
    nout = ctypes.c_size_t()
    dll.AOTInductorModelContainerGetNumOutputs.argtypes = [H, ctypes.POINTER(ctypes.c_size_t)]
    dll.AOTInductorModelContainerGetNumOutputs(c, ctypes.byref(nout))
    z = np.load(f"{d}/{name}.npz")
    dtypes = json.load(open(f"{d}/{name}.json"))["inputs"][0]  # bfloat16 is stored as its uint16 bits
    ins = [np.ascontiguousarray(z[f"in0_{i}"]) for i in range(len(dtypes))]
    def dims(v):
        return (ctypes.c_int64 * max(1, len(v)))(*v)
    meta = [(dims(a.shape), dims([s // a.itemsize for s in a.strides]), CODES[dt]) for a, dt in zip(ins, dtypes)]
    n_in, n_out = len(ins), nout.value
    hin, hout = (H * n_in)(), (H * n_out)()
    base_in = ctypes.addressof(hin)
    def once():
        for i, a in enumerate(ins):
            sz, st, code = meta[i]
            blob(a.ctypes.data, a.ndim, sz, st, 0, code, 0, 0, base_in + 8 * i, 0, None, 0)
        if run(c, hin, n_in, hout, n_out, None, None) != 0:
            raise RuntimeError("run failed")
        for i in range(n_out):
            delete(hout[i])
    out[name] = bench(once)
addmm_fn = lib.aoti_torch_cpu_addmm_out
addmm_fn.restype, addmm_fn.argtypes = ctypes.c_int32, [H, H, H, H, ctypes.c_double, ctypes.c_double]
def handle(a):
    h = H()
    sz = (ctypes.c_int64 * a.ndim)(*a.shape)
    st = (ctypes.c_int64 * a.ndim)(*[s // 4 for s in a.strides])
    blob(a.ctypes.data, a.ndim, sz, st, 0, 6, 0, 0, ctypes.byref(h), 0, None, 0)
    return h
for m, k, n in addmm:
    rng = np.random.default_rng(0)
    A, B, bias, O = (rng.standard_normal(s).astype(np.float32) for s in [(m, k), (k, n), (n,), (m, n)])
    hs = [handle(x) for x in (O, bias, A, B)]
    out[f"addmm {m}x{k}@{k}x{n}"] = bench(lambda: addmm_fn(hs[0], hs[1], hs[2], hs[3], 1.0, 1.0))
print(json.dumps(out))
"""


def run_side(side, model_dir, threads, names, addmm=ADDMM, repeats=REPEATS):
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            side,
            model_dir,
            str(threads),
            ",".join(names),
            json.dumps(addmm),
            str(repeats),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if r.returncode != 0:
        raise SystemExit(f"{side} side failed:\n{r.stderr[-4000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    model_dir = sys.argv[1]
    threads = int(_arg("--threads", "1"))
    wanted = _arg("--models", ",".join(MODELS))
    wanted = ",".join(ZOO_MODELS) if wanted == "ZOO" else wanted
    names = [n for n in wanted.split(",") if os.path.exists(f"{model_dir}/{n}.pt2")]
    rounds, repeats = int(_arg("--rounds", "3")), int(_arg("--repeats", str(REPEATS)))
    addmm = [] if "--no-addmm" in sys.argv else ADDMM
    # The sides alternate, `rounds` times each, so that load from other jobs on the machine hits both sides
    # alike; a case's samples are all its rounds'.
    slim, torch_ = {}, {}
    for _ in range(rounds):
        for side, acc in (("slim", slim), ("torch", torch_)):
            for key, val in run_side(side, model_dir, threads, names, addmm, repeats).items():
                acc.setdefault(key, []).extend(val)
    rows = []
    print(f"{threads} thread(s), {rounds} x {repeats} samples per case and side")
    print(f"{'case':32s} {'slim us (min/med)':>20s} {'torch us (min/med)':>20s} {'ratio (median)':>14s}")
    for key in slim:
        s, t = sorted(slim[key]), sorted(torch_[key])
        ms, mt = statistics.median(s), statistics.median(t)
        rows.append({"case": key, "slim_us": slim[key], "torch_us": torch_[key], "ratio": ms / mt})
        print(f"{key:32s} {s[0]:9.2f}/{ms:9.2f} {t[0]:9.2f}/{mt:9.2f} {ms / mt:14.2f}")
    if "--json" in sys.argv:
        with open(_arg("--json", ""), "w") as f:
            json.dump({"threads": threads, "time": time.time(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

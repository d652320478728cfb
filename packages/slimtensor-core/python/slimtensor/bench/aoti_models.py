"""End-to-end latency of the same AOTInductor model .so on slimtensor's shims and on libtorch's, plus addmm.

    python -m slimtensor.bench.aoti_models MODEL_DIR[:MODEL_DIR...] [--threads 1] [--repeats 7] [--rounds 3]
        [--models a,b,...] [--only models,addmm,conv] [--json out.json]

Each MODEL_DIR holds NAME.pt2/.npz as written by tests/aoti/compile_models.py (the first folder holding a
model is used). Each side runs in its own
subprocess: "slim" loads the model with slimtensor.aoti; "torch" loads libtorch_cpu RTLD_GLOBAL (so the
very same libtorch-free .so binds to libtorch's shims) and dlopens the model. Both then time the same
loop through ctypes: make the input handles with that library's create_tensor_from_blob_v2, Run, delete
the outputs. Printed: min and median microseconds per run over --repeats repeats (the best of --rounds
alternating rounds, 3 by default), and slim/torch ratios. Besides the models (MODELS, or --models), two
fallbacks alone on both libraries: aoti_torch_cpu_addmm_out (ADDMM) and aoti_torch_cpu_convolution
(CONV: float32, contiguous NCHW input, bias).
"""

from __future__ import annotations

import json
import os
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
    # tests/aoti/op_model_zoo.py's oneDNN block: convolution and LSTM models at real sizes
    "onednn_bench_resnet_block",
    "onednn_bench_mobile_block",
    "onednn_bench_lstm",
    "onednn_bench_gru",
]
ADDMM = [(64, 256, 256), (256, 1024, 1024), (512, 512, 2048)]
# name: (N, C, OC, H, W, kernel, stride, padding, groups); issue 12's shapes: a ResNet 3x3 and an
# EfficientNet-style depthwise 5x5 stride 2.
CONV = {
    "conv 3x3 64->64 56x56": (1, 64, 64, 56, 56, 3, 1, 1, 1),
    "conv dw5x5/2 144 56x56": (1, 144, 144, 56, 56, 5, 2, 2, 144),
}

CHILD = r"""
import ctypes, os, sys, time, json, zipfile, tempfile
import numpy as np
side, d, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
names, addmm = [n for n in sys.argv[4].split(",") if n], json.loads(sys.argv[5])
convs, repeats = json.loads(sys.argv[6]), int(sys.argv[7])
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
CODES = {np.dtype(np.float32): 6, np.dtype(np.int64): 4, np.dtype(np.bool_): 11, np.dtype(np.float64): 7}
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
    res.sort()
    return res[0], res[len(res) // 2]
out = {}
for stem in names:  # each a model's path without ".pt2"
    name = os.path.basename(stem)
    dll = open_model(f"{stem}.pt2")
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
    z = np.load(f"{stem}.npz")
    ins = [np.ascontiguousarray(z[k]) for k in sorted(k for k in z.files if k.startswith("in0_"))]
    def dims(v):
        return (ctypes.c_int64 * max(1, len(v)))(*v)
    meta = [(dims(a.shape), dims([s // a.itemsize for s in a.strides]), CODES[a.dtype]) for a in ins]
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
conv_fn = lib.aoti_torch_cpu_convolution
conv_fn.restype = ctypes.c_int32
conv_fn.argtypes = [H, H, ctypes.POINTER(H), P64, I64, P64, I64, P64, I64, I32, P64, I64, I64, ctypes.POINTER(H)]
def ints(*v):
    return (ctypes.c_int64 * len(v))(*v)
for key, (n, c, oc, hh, ww, k, stride, pad, groups) in convs.items():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, c, hh, ww)).astype(np.float32)
    W = rng.standard_normal((oc, c // groups, k, k)).astype(np.float32)
    B = rng.standard_normal(oc).astype(np.float32)
    hx, hw, hb = handle(X), handle(W), handle(B)
    ret = H()
    args = (hx, hw, ctypes.byref(hb), ints(stride, stride), 2, ints(pad, pad), 2, ints(1, 1), 2, 0, ints(0, 0), 2, groups,
            ctypes.byref(ret))
    def conv_once():
        if conv_fn(*args) != 0:
            raise RuntimeError("convolution failed")
        delete(ret)
    out[key] = bench(conv_once)
print(json.dumps(out))
"""


def run_side(side, model_dir, threads, names, addmm, convs, repeats):
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
            json.dumps(convs),
            str(repeats),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if r.returncode != 0:
        raise SystemExit(f"{side} side failed:\n{r.stderr[-4000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _option(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    model_dirs = sys.argv[1].split(os.pathsep)
    threads = int(_option("--threads", "1"))
    repeats = int(_option("--repeats", "7"))
    wanted = _option("--models", None)
    wanted = [n for n in wanted.split(",") if n] if wanted is not None else MODELS
    names = []
    for n in wanted:
        found = [f"{d}/{n}" for d in model_dirs if os.path.exists(f"{d}/{n}.pt2")]
        names += found[:1]
    rounds = int(_option("--rounds", "3"))
    # --only narrows what is timed: the models, the addmm calls, the convolution calls
    only = _option("--only", "models,addmm,conv").split(",")
    addmm = ADDMM if "addmm" in only else []
    convs = CONV if "conv" in only else {}
    names = names if "models" in only else []
    # The sides alternate, `rounds` times each; a case keeps its best (min) round: load from other jobs on
    # the machine then hits both sides alike instead of whichever ran at a busy moment.
    slim, torch_ = {}, {}
    for _ in range(rounds):
        for side, acc in (("slim", slim), ("torch", torch_)):
            for key, val in run_side(side, model_dirs[0], threads, names, addmm, convs, repeats).items():
                acc[key] = min(acc.get(key, val), val)
    rows = []
    print(f"{'case':32s} {'slim us (min/med)':>20s} {'torch us (min/med)':>20s} {'ratio (min)':>11s}")
    for key in slim:
        s, t = slim[key], torch_[key]
        rows.append({"case": key, "slim_us": s, "torch_us": t, "ratio": s[0] / t[0]})
        print(f"{key:32s} {s[0]:9.2f}/{s[1]:9.2f} {t[0]:9.2f}/{t[1]:9.2f} {s[0] / t[0]:11.2f}")
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump({"threads": threads, "time": time.time(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

"""End-to-end latency of the same AOTInductor model .so on slimtensor's shims and on libtorch's, plus two
fallbacks alone (addmm, convolution), the two runtimes interleaved sample by sample.

    python -m slimtensor.bench.aoti_models MODEL_DIR[:MODEL_DIR...] [--threads 1] [--repeats 21]
        [--sample-ms 40] [--models a,b,...] [--only models,addmm,conv] [--json out.json]

Each MODEL_DIR holds NAME.pt2/.npz/.json as written by tests/aoti/compile_models.py: the test models
(model_zoo.py), the oneDNN block of op_model_zoo.py (make bench-models) and the architecture zoo (arch_zoo.py);
the first folder holding a model is used. The cases: MODELS (or --models), ADDMM
(aoti_torch_cpu_addmm_out) and CONV (aoti_torch_cpu_convolution: float32, contiguous NCHW input, bias).

Note [Interleaved model samples]
Each library runs in a process of its own, started once per thread count and kept: "slim" loads the models
with slimtensor.aoti; "torch" loads libtorch_cpu RTLD_GLOBAL (so the very same libtorch-free .so binds to
libtorch's shims) and dlopens them. Both time the same loop through ctypes: make the input handles with that
library's create_tensor_from_blob_v2, Run, delete the outputs. This process asks them for one sample at a
time (a loop of about --sample-ms, timed by the worker), alternating which library goes first, so a case's
samples on the two libraries are taken minutes apart at most, seconds apart at least: load from other jobs
on the machine (the 2-core development machine is shared) then falls on both alike, and the ratio of the
medians compares like with like. While one worker times, the other waits on its pipe (its OpenMP threads
stop spinning within milliseconds). Printed per case: the medians, the spread ((q3 - q1) / median) of each,
and the ratio of the medians (slim/torch); the JSON keeps every sample and the load average before and after.
Each sample is also timed in CPU seconds of its process (all threads): on a loaded machine wall-clock samples
include the time other jobs held the cores, CPU time does not (at 1 thread it is the work done; at 2 it also
counts OpenMP threads spinning at barriers), so the two together say what load did to the medians.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

TEST_MODELS = [
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
# tests/aoti/op_model_zoo.py's oneDNN block: convolution and LSTM models at real sizes (make bench-models)
ONEDNN_MODELS = [
    "onednn_bench_resnet_block",
    "onednn_bench_mobile_block",
    "onednn_bench_lstm",
    "onednn_bench_gru",
]
# tests/aoti/arch_zoo.py, every model (make bench-models compiles the whole zoo)
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
    "mobile_block",
    "conv_decoder",
    "moe_routing",
]
MODELS = TEST_MODELS + ONEDNN_MODELS + ZOO_MODELS
ADDMM = [(64, 256, 256), (256, 1024, 1024), (512, 512, 2048)]
# name: (N, C, OC, H, W, kernel, stride, padding, groups); issue 12's shapes: a ResNet 3x3 and an
# EfficientNet-style depthwise 5x5 stride 2.
CONV = {
    "conv 3x3 64->64 56x56": (1, 64, 64, 56, 56, 3, 1, 1, 1),
    "conv dw5x5/2 144 56x56": (1, 144, 144, 56, 56, 5, 2, 2, 144),
}
REPEATS = 21  # samples per case and library: medians of at least 20
SAMPLE_MS = 40.0

# The worker: argv = side, threads, spec JSON; prints "ready {keys, skipped}", then answers one line per
# request: "warm KEY MS" -> calls per sample of about MS ms; "time KEY N" -> microseconds per call over N calls,
# wall-clock and CPU (the process's, all its threads).
WORKER = r"""
import ctypes, os, sys, time, json, zipfile, tempfile
import numpy as np
side, threads, spec = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
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
        dll = ctypes.CDLL(os.path.join(tmp, "m.so"), mode=os.RTLD_LOCAL | os.RTLD_NOW)
        c = H()
        create = dll.AOTInductorModelContainerCreateWithDevice
        create.argtypes = [ctypes.POINTER(H), ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p]
        if create(ctypes.byref(c), 1, b"cpu", None) != 0:
            raise RuntimeError("AOTInductorModelContainerCreateWithDevice failed")
        return dll, c
else:
    from slimtensor import aoti
    from slimtensor.aoti import _lib
    aoti.set_num_threads(threads)
    lib = _lib.lib()
    models = []
    def open_model(path):
        m = aoti.load(path, check_inputs=False)
        models.append(m)
        return m._dll, m._container
blob = lib.aoti_torch_create_tensor_from_blob_v2
I32, I64, VP = ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p
blob.restype, blob.argtypes = I32, [VP, I64, P64, P64, I64, I32, I32, I32, VP, I32, ctypes.c_void_p, ctypes.c_int64]
delete = lib.aoti_torch_delete_tensor_object
delete.restype, delete.argtypes = ctypes.c_int32, [H]
CODES = {"float32": 6, "float64": 7, "int64": 4, "int32": 3, "bool": 11, "bfloat16": 15, "float16": 5,
         "uint8": 0, "int8": 1}
def dims(v):
    return (ctypes.c_int64 * max(1, len(v)))(*v)
calls, skipped = {}, {}
def model_call(stem):
    dll, c = open_model(f"{stem}.pt2")
    run = dll.AOTInductorModelContainerRun
    run.argtypes = [H, ctypes.POINTER(H), ctypes.c_size_t, ctypes.POINTER(H), ctypes.c_size_t, H, H]
    nout = ctypes.c_size_t()
    dll.AOTInductorModelContainerGetNumOutputs.argtypes = [H, ctypes.POINTER(ctypes.c_size_t)]
    dll.AOTInductorModelContainerGetNumOutputs(c, ctypes.byref(nout))
    z = np.load(f"{stem}.npz")
    with open(f"{stem}.json") as f:
        dtypes = json.load(f)["inputs"][0]  # bfloat16 is stored as its uint16 bits
    ins = [np.ascontiguousarray(z[f"in0_{i}"]) for i in range(len(dtypes))]
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
    return once
for stem in spec["models"]:  # each a model's path without ".pt2"
    try:
        calls[os.path.basename(stem)] = model_call(stem)
    except Exception as e:  # a model this library cannot load: say so, time the rest
        skipped[os.path.basename(stem)] = f"{side}: {type(e).__name__}: {e}"
addmm_fn = lib.aoti_torch_cpu_addmm_out
addmm_fn.restype, addmm_fn.argtypes = ctypes.c_int32, [H, H, H, H, ctypes.c_double, ctypes.c_double]
def handle(a):
    h = H()
    blob(a.ctypes.data, a.ndim, dims(a.shape), dims([s // 4 for s in a.strides]), 0, 6, 0, 0, ctypes.byref(h), 0,
         None, 0)
    return h
keep = []
for m, k, n in spec["addmm"]:
    rng = np.random.default_rng(0)
    A, B, bias, O = (rng.standard_normal(s).astype(np.float32) for s in [(m, k), (k, n), (n,), (m, n)])
    hs = [handle(x) for x in (O, bias, A, B)]
    keep.append((A, B, bias, O))
    calls[f"addmm {m}x{k}@{k}x{n}"] = lambda hs=hs: addmm_fn(hs[0], hs[1], hs[2], hs[3], 1.0, 1.0)
conv_fn = lib.aoti_torch_cpu_convolution
conv_fn.restype = ctypes.c_int32
conv_fn.argtypes = [H, H, ctypes.POINTER(H), P64, I64, P64, I64, P64, I64, I32, P64, I64, I64, ctypes.POINTER(H)]
def ints(*v):
    return (ctypes.c_int64 * len(v))(*v)
def conv_call(n, c, oc, hh, ww, k, stride, pad, groups):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, c, hh, ww)).astype(np.float32)
    W = rng.standard_normal((oc, c // groups, k, k)).astype(np.float32)
    B = rng.standard_normal(oc).astype(np.float32)
    hx, hw, hb = handle(X), handle(W), handle(B)
    keep.append((X, W, B))
    ret = H()
    args = (hx, hw, ctypes.byref(hb), ints(stride, stride), 2, ints(pad, pad), 2, ints(1, 1), 2, 0, ints(0, 0), 2,
            groups, ctypes.byref(ret))
    def once():
        if conv_fn(*args) != 0:
            raise RuntimeError("convolution failed")
        delete(ret)
    return once
for key, shape in spec["conv"].items():
    calls[key] = conv_call(*shape)
print("ready " + json.dumps({"keys": list(calls), "skipped": skipped}), flush=True)
for line in sys.stdin:
    verb, key, arg = line.split("\t")
    fn = calls[key]
    if verb == "warm":
        fn(); fn()
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < float(arg) / 1e3:
            fn(); n += 1
        print(max(1, n), flush=True)
    else:
        n = int(arg)
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            fn()
        t1, c1 = time.perf_counter(), time.process_time()
        print((t1 - t0) / n * 1e6, (c1 - c0) / n * 1e6, flush=True)
"""


class Worker:
    """One library's timing process (Note [Interleaved model samples])."""

    def __init__(self, side: str, threads: int, spec: dict):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        self.side = side
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, side, str(threads), json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def ready(self) -> dict:
        line = self._line()
        if not line.startswith("ready "):
            self._fail(f"expected 'ready', got {line!r}")
        return json.loads(line[len("ready ") :])

    def ask(self, verb: str, key: str, arg: float) -> list[float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{verb}\t{key}\t{arg}\n")
        self.proc.stdin.flush()
        return [float(x) for x in self._line().split()]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self._fail("exited")
        return line.strip()

    def _fail(self, what: str):
        self.proc.kill()
        err = self.proc.stderr.read() if self.proc.stderr else ""
        raise SystemExit(f"the {self.side} worker {what}:\n{err[-4000:]}")


def measure(spec: dict, threads: int, repeats: int, sample_ms: float) -> list[dict]:
    """Every case of spec on both libraries, interleaved per sample; one row per case."""
    slim, torch_ = Worker("slim", threads, spec), Worker("torch", threads, spec)
    try:
        have = [w.ready() for w in (slim, torch_)]
        rows = []
        for key in have[0]["keys"]:
            if key not in have[1]["keys"]:
                continue
            load_before = os.getloadavg()[0]
            n = {w.side: int(w.ask("warm", key, sample_ms)[0]) for w in (slim, torch_)}
            wall: dict[str, list[float]] = {"slim": [], "torch": []}
            cpu: dict[str, list[float]] = {"slim": [], "torch": []}
            for i in range(repeats):
                for w in (slim, torch_) if i % 2 == 0 else (torch_, slim):
                    t, c = w.ask("time", key, n[w.side])
                    wall[w.side].append(t)
                    cpu[w.side].append(c)
            rows.append(
                {
                    "case": key,
                    "slim_us": wall["slim"],
                    "torch_us": wall["torch"],
                    "slim_cpu_us": cpu["slim"],
                    "torch_cpu_us": cpu["torch"],
                    "calls_per_sample": n,
                    "ratio": statistics.median(wall["slim"]) / statistics.median(wall["torch"]),
                    "cpu_ratio": statistics.median(cpu["slim"]) / statistics.median(cpu["torch"]),
                    "load_avg": [load_before, os.getloadavg()[0]],
                }
            )
        skipped: dict[str, list[str]] = {}
        for h in have:
            for key, why in h["skipped"].items():
                skipped.setdefault(key, []).append(why)
        return rows + [{"case": key, "skipped": "; ".join(whys)} for key, whys in skipped.items()]
    finally:
        for w in (slim, torch_):
            w.close()


def spread(samples: list[float]) -> float:
    """(q3 - q1) / median, as the suite's summaries (bench/_timing.py)."""
    q = statistics.quantiles(samples, n=4, method="inclusive")
    return (q[2] - q[0]) / statistics.median(samples)


def _option(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    model_dirs = sys.argv[1].split(os.pathsep)
    threads = int(_option("--threads", "1"))
    repeats = int(_option("--repeats", str(REPEATS)))
    sample_ms = float(_option("--sample-ms", str(SAMPLE_MS)))
    wanted = _option("--models", None)
    wanted = [n for n in wanted.split(",") if n] if wanted is not None else MODELS
    stems = []
    for n in wanted:
        found = [f"{d}/{n}" for d in model_dirs if os.path.exists(f"{d}/{n}.pt2")]
        stems += found[:1]
    # --only narrows what is timed: the models, the addmm calls, the convolution calls
    only = _option("--only", "models,addmm,conv").split(",")
    spec = {
        "models": stems if "models" in only else [],
        "addmm": ADDMM if "addmm" in only else [],
        "conv": CONV if "conv" in only else {},
    }
    started = time.time()
    rows = measure(spec, threads, repeats, sample_ms)
    print(
        f"{threads} thread(s), {repeats} samples per case and library, interleaved; load average {os.getloadavg()}"
    )
    print(
        f"{'case':28s} {'slim us (med, spread)':>22s} {'torch us (med, spread)':>22s} {'ratio':>6s} "
        f"{'slim CPU us':>11s} {'torch CPU us':>12s} {'ratio':>6s}"
    )
    for r in rows:
        if "skipped" in r:
            print(f"{r['case']:28s} skipped: {r['skipped']}")
            continue
        s, t = r["slim_us"], r["torch_us"]
        print(
            f"{r['case']:28s} {statistics.median(s):12.1f} ({spread(s):6.1%}) {statistics.median(t):12.1f} "
            f"({spread(t):6.1%}) {r['ratio']:6.3f} {statistics.median(r['slim_cpu_us']):11.1f} "
            f"{statistics.median(r['torch_cpu_us']):12.1f} {r['cpu_ratio']:6.3f}"
        )
    if "--json" in sys.argv:
        with open(_option("--json", ""), "w") as f:
            json.dump({"threads": threads, "time": started, "repeats": repeats, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

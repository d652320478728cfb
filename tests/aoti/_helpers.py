"""Helpers of tests/aoti: compiling the test models (cached, in a subprocess) and the C++ test programs,
reference data, tolerances."""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CACHE = os.path.join(ROOT, ".cache", "aoti-models")
TORCH_VERSION = "2.13.0"

MODEL_NAMES = [
    "pointwise",
    "linear",
    "mlp",
    "conv1d",
    "conv2d_groups",
    "small_cnn",
    "softmax",
    "layer_norm",
    "sdpa",
    "sdpa_causal",
    "sdpa_masked",
    "transformer_block",
    "view_permute",
    "alias_input",
    "two_outputs",
    "bf16",
    "int64",
    "bmm",
    "mlp_dynamic",
    "linear_blob",
    "const_alias",
]
EXTRA_NAMES = ["linear_libtorch", "pointwise_native"]  # compiled, but run by torch (the isolation tests)


def torch_version() -> str | None:
    if importlib.util.find_spec("torch") is None:
        return None
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def have_torch() -> bool:
    v = torch_version()
    return v is not None and v.split("+")[0] == TORCH_VERSION


# Tests that need torch itself (not only the cached models) are marked like the rest of the suite.
needs_torch = pytest.mark.needs_torch


def sleef_library() -> str | None:
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"):
        p = os.path.join(d, "libsleef.so.3")
        if os.path.exists(p):
            return p
    return None


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cache_dir(zoo: str = "model_zoo") -> str:
    h = hashlib.sha256()
    h.update((torch_version() or "none").encode())
    if zoo == "arch_zoo":  # its models' code is transformers' own
        h.update((_package_version("transformers") or "none").encode())
    h.update(b"sleef" if sleef_library() else b"no-sleef")
    for f in (f"{zoo}.py", "compile_models.py"):
        with open(os.path.join(HERE, f), "rb") as fh:
            h.update(fh.read())
    # each zoo has its own folder, so that editing one zoo does not recompile the others
    return os.path.join(CACHE, h.hexdigest()[:16] if zoo == "model_zoo" else f"{zoo}-{h.hexdigest()[:16]}")


def say(message: str) -> None:
    """One line on the real terminal, even while pytest captures output (long work must not be silent)."""
    stream = sys.__stderr__ or sys.stderr
    print(f"[slimtensor tests] {message}", file=stream, flush=True)


def compile_models(names: list[str], zoo: str = "model_zoo") -> str:
    """Compiles (once, under a file lock) the named models of tests/aoti/<zoo>.py; returns the folder holding
    NAME.pt2/.npz/.json."""
    out = _cache_dir(zoo)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        todo = [n for n in names if not os.path.exists(os.path.join(out, f"{n}.pt2"))]
        if todo:
            env = dict(os.environ)
            env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(CACHE, "inductor"))
            # the zoo's transformers models come from configs, never from the hub: any download attempt fails
            env["HF_HUB_OFFLINE"] = "1"
            env["TRANSFORMERS_OFFLINE"] = "1"
            # Inductor accepts a vector ISA only if a probe .so it builds can be dlopen'ed by a bare Python;
            # that probe calls Sleef_* (which torch's Python does not put in the global scope), so without
            # SLEEF preloaded every ISA is "invalid" and the models get scalar kernels. With it, they get
            # the AVX2 kernels the options ask for (and call SLEEF, which slimtensor.aoti provides).
            if sleef_library():
                env["LD_PRELOAD"] = " ".join(filter(None, [env.get("LD_PRELOAD"), sleef_library()]))
            # one compiler process per core (each compiles its share of the models one after the other)
            jobs = max(1, min(len(todo), os.cpu_count() or 1))
            # Long work says what it does, past pytest's capture: which models, where, and each as it is done.
            say(
                f"compiling {len(todo)} AOTInductor test models once with torch {TORCH_VERSION} into {out} "
                f"({jobs} process(es); a few minutes on 2 cores): {', '.join(todo)}"
            )
            procs = [
                subprocess.Popen(
                    [
                        sys.executable,
                        os.path.join(HERE, "compile_models.py"),
                        "--zoo",
                        zoo,
                        out,
                        *todo[i::jobs],
                    ],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for i in range(jobs)
            ]
            outputs = [[] for _ in procs]

            def forward(proc, lines):
                for line in proc.stdout:
                    lines.append(line)
                    say(line.rstrip())

            errors = [[] for _ in procs]
            readers = [
                threading.Thread(target=forward, args=(p, lines), daemon=True)
                for p, lines in zip(procs, outputs, strict=True)
            ]
            readers += [
                threading.Thread(target=lambda p, e: e.extend(p.stderr), args=(p, e), daemon=True)
                for p, e in zip(procs, errors, strict=True)
            ]
            for r in readers:
                r.start()
            failures = []
            for p in procs:
                p.wait(timeout=1800)
            for r in readers:
                r.join(timeout=60)
            for p, lines, err in zip(procs, outputs, errors, strict=True):
                if p.returncode != 0:
                    failures.append(f"{''.join(lines)[-4000:]}\n{''.join(err)[-8000:]}")
            if failures:
                raise RuntimeError("compiling test models failed:\n" + "\n".join(failures))
    return out


def load_reference(model_dir: str, name: str):
    """[(inputs, expected outputs)] per input set, as numpy arrays (bfloat16 via ml_dtypes)."""
    import ml_dtypes
    import numpy as np

    with open(os.path.join(model_dir, f"{name}.json")) as f:
        meta = json.load(f)
    z = np.load(os.path.join(model_dir, f"{name}.npz"))
    sets = []
    for s in range(len(meta["inputs"])):

        def arr(key, dt):
            a = z[key]
            return a.view(ml_dtypes.bfloat16) if dt == "bfloat16" else a

        ins = [arr(f"in{s}_{i}", dt) for i, dt in enumerate(meta["inputs"][s])]
        outs = [arr(f"out{s}_{i}", dt) for i, dt in enumerate(meta["outputs"][s])]
        sets.append((ins, outs))
    return sets


def tolerance(dtype) -> float:
    import numpy as np

    name = str(np.dtype(dtype))
    return {"float32": 2e-5, "float64": 1e-12, "bfloat16": 2e-2, "float16": 2e-3}.get(name, 0.0)


def cxx_sanitize_flags() -> list[str]:
    """Under make test-asan, the sanitizer flags the C++ test programs are built with (SLIMTENSOR_CXX_SANITIZE)."""
    return shlex.split(os.environ.get("SLIMTENSOR_CXX_SANITIZE", ""))


def cxx_env(**extra: str) -> dict[str, str]:
    """The environment of a C++ test program: under make test-asan its own ASAN_OPTIONS (LeakSanitizer on: a
    C++ program, unlike the interpreter, frees everything it made)."""
    env = dict(os.environ, **extra)
    if os.environ.get("SLIMTENSOR_CXX_ASAN_OPTIONS"):
        env["ASAN_OPTIONS"] = os.environ["SLIMTENSOR_CXX_ASAN_OPTIONS"]
    return env


def build_cpp(source: str, out_dir) -> str:
    """Compiles tests/aoti/cpp/<source> against the installed libslimtensor (C ABI and C++ API headers);
    returns the executable's path."""
    from slimtensor.aoti import _lib

    cxx = shutil.which("g++") or shutil.which("c++")
    if not cxx:
        pytest.skip("no C++ compiler (install g++)")
    libdir = os.path.dirname(_lib.library_path())
    include = os.path.join(os.path.dirname(libdir), "include")
    exe = os.path.join(str(out_dir), os.path.splitext(source)[0])
    cmd = [
        cxx,
        "-std=c++17",
        "-O1",
        "-pthread",
        *cxx_sanitize_flags(),
        os.path.join(HERE, "cpp", source),
        f"-I{include}",
        _lib.library_path(),
        f"-Wl,-rpath,{libdir}",
        "-o",
        exe,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return exe


def shim_lib() -> ctypes.CDLL:
    """libslimtensor through ctypes, every function of its C headers declared from the headers themselves
    (Note [One source for the C prototypes] in slimtensor/aoti/_cdecl.py)."""
    from slimtensor.aoti import _lib

    return _lib.lib()

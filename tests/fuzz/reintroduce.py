"""Re-introduced bugs (issue 14): proof that the regression tests, the sanitizers and the fuzzers catch the
bugs they were written for. Run by `make reintroduce` (after `make build-asan` and `make fuzz-build`).

Each patch in tests/fuzz/reintroduced/ puts one fixed finding back (written against today's code, as small
as the bug was). For each, a scratch copy of the tree (build/reintro/src: the tracked and new files) gets the
patch, is rebuilt, and every detector named below runs against it: it must FAIL, with the signature of the
bug in its output. Then the patch is reverted. A control run of the same detectors on the unpatched copy
must pass, so each detection is the patch's doing.

Note [Scratch builds in a mount namespace]
A full sanitizer build takes many minutes; a patch touches a file or two. So the scratch copy is built with
copies of the tree's own build folders (packages/slimtensor-core/build/asan-<tag> of `make build-asan`,
build/fuzz/core of `make fuzz-build`), which name sources by absolute path: the script re-runs itself in a private mount namespace
(unshare -m) where the scratch copy is bind-mounted over the tree itself (the venvs, the model cache and
build/reintro are mounted back from the real tree). Inside, every path is the tree's, the copied build
folders are up to date except for what the patch changed, and nothing outside the namespace sees the
patched files: not the tree, not its build folders, not other processes.

The two scratch builds:
- "asan": the core and slimtensor._C with GCC's ASan + UBSan, as `make build-asan` builds them, installed (not
  editable) into build/reintro/venv, a venv that also sees .venv-asan's packages (a .pth line); pytest
  detectors and the atheris fuzzer run there under `make test-asan`'s environment (REINTRO_ASAN_ENV).
- "fuzz": libslimtensor and the libFuzzer targets built with clang as `make fuzz-build` builds them; a fuzzer
  starts from an EMPTY corpus (nothing given to it can hold the answer) and must find the bug within
  --fuzz-time seconds.

Results: build/reintro/summary.json and a table on stdout (docs/reliability.md quotes them).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORK = os.path.abspath(
    os.environ.get("REINTRO_WORK", os.path.join(ROOT, "build", "reintro"))
)  # inside build/
SRC = os.path.join(WORK, "src")
PATCHES = os.path.join(HERE, "reintroduced")
CORE = "packages/slimtensor-core"


@dataclass
class Detector:
    kind: str  # "pytest" (asan build), "atheris" (asan build), "shim" / "dlpack" (libFuzzer, fuzz build)
    target: str = ""  # pytest node ids, space-separated
    signature: tuple[str, ...] = ()  # any of these in the output (with a failing exit) is a detection


@dataclass
class Bug:
    name: str
    detectors: list[Detector] = field(default_factory=list)


HOSTILE = "tests/core/test_hostile_values.py::"
SANITIZER = ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer")
BUGS = [
    Bug(
        "fill-index-null",
        [
            Detector(
                "pytest", HOSTILE + "test_index_raising_value_does_not_crash_a_child", ("SIGSEGV", "-11")
            ),
            Detector(
                "atheris",
                "",
                ("deadly signal", "Segmentation fault", "SEGV", "runtime error: member access within null"),
            ),
        ],
    ),
    Bug(
        "handle-stale-generation",
        [
            Detector(
                "pytest",
                "tests/aoti/test_shim_c_abi.py::test_stale_handle_never_names_a_new_handle "
                "tests/aoti/test_shim_c_abi.py::test_getters_reject_deleted_and_foreign_handles",
                ("assert",),
            ),
            Detector("shim", "", ("contract broken: a non-live handle was accepted", "contract broken")),
        ],
    ),
    Bug(
        "weights-blob-unchecked",
        [
            Detector(
                "pytest",
                "tests/aoti/test_model_files.py::test_tampered_weights_blob_is_refused",
                ("DID NOT RAISE",),
            )
        ],
    ),
    Bug(
        "scalar-cast-ub",
        [
            Detector("pytest", "tests/core/test_scalar_casts.py", ("runtime error:",)),
            Detector(
                "pytest", HOSTILE + "test_non_finite_and_huge_floats_fill_floats_and_refuse_ints", SANITIZER
            ),
            Detector("atheris", "", ("is outside the range of representable values",)),
        ],
    ),
    Bug(
        "narrow-overflow",
        [
            Detector("pytest", HOSTILE + "test_narrow_with_a_huge_length_is_an_index_error", SANITIZER),
            Detector("atheris", "", ("signed integer overflow",)),
        ],
    ),
    Bug(
        "empty-int64-min",
        [
            Detector("pytest", HOSTILE + "test_most_negative_size_is_a_value_error", SANITIZER),
            Detector("shim", "", ("runtime error: signed integer overflow",)),
        ],
    ),
    Bug(
        "buffer-export-huge-step",
        [
            Detector("pytest", HOSTILE + "test_buffer_export_of_a_huge_step_has_a_defined_stride", SANITIZER),
            Detector("atheris", "", ("signed integer overflow",)),
        ],
    ),
    Bug(
        "misaligned-copy-kernels",
        [
            Detector("pytest", "tests/kernels/test_misaligned.py", ("runtime error:", "misaligned address")),
            Detector("atheris", "", ("misaligned address",)),
        ],
    ),
    Bug(
        "float32-payload-round-trip",
        [Detector("pytest", "tests/kernels/test_nan_payloads.py", ("elements differ",))],
    ),
    Bug(
        "dlpack-offset-wraps", [Detector("dlpack", "", ("runtime error:", "pointer overflow", "overflowed"))]
    ),
    Bug(
        "from-blob-unregistered-device",
        [
            Detector(
                "pytest", HOSTILE + "test_from_blob_on_an_unregistered_device_is_refused", ("DID NOT RAISE",)
            )
        ],
    ),
    Bug(
        "copy-exact-overlap-message",
        [
            Detector(
                "pytest",
                HOSTILE + "test_copy_onto_own_transpose_says_exact_overlap",
                ("Regex pattern did not match",),
            )
        ],
    ),
    Bug(
        "pickle-unknown-dtype",
        [
            Detector(
                "pytest",
                HOSTILE + "test_pickle_naming_an_unknown_dtype_is_a_value_error",
                ("AttributeError",),
            )
        ],
    ),
    Bug(
        "metadata-not-an-object",
        [
            Detector(
                "pytest",
                "tests/aoti/test_model_files.py::test_bad_metadata_is_a_clear_error",
                ("AttributeError",),
            )
        ],
    ),
    Bug(
        "load-a-directory",
        [
            Detector(
                "pytest",
                "tests/aoti/test_model_files.py::test_loading_a_directory_says_what_to_pass",
                ("Error",),
            )
        ],
    ),
]


def sh(
    cmd: list[str] | str, log: str, env: dict | None = None, timeout: float | None = None, cwd: str = ROOT
):
    """Runs cmd with its output appended to log; returns (exit code, this run's output)."""
    start = os.path.getsize(log) if os.path.exists(log) else 0
    with open(log, "a") as f:
        f.write(f"\n$ {cmd if isinstance(cmd, str) else shlex.join(cmd)}\n")
        f.flush()
        try:
            rc = subprocess.run(
                cmd,
                shell=isinstance(cmd, str),
                cwd=cwd,
                env=env,
                stdout=f,
                stderr=subprocess.STDOUT,
                timeout=timeout,
            ).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    with open(log, errors="replace") as f:
        f.seek(start)
        return rc, f.read()


# Mounted back from the real tree inside the namespace (Note [Scratch builds in a mount namespace]).
MOUNTED_BACK = (".venv-asan", ".venv-test", ".cache", os.path.relpath(WORK, ROOT))


def asan_build_dir() -> str:
    # pip runs the build backend in the package folder: -Cbuild-dir=build/asan-{wheel_tag} lands there
    dirs = sorted(glob.glob(os.path.join(ROOT, CORE, "build", "asan-cp*")))
    if not dirs:
        raise SystemExit(f"no {CORE}/build/asan-<tag>: run make build-asan first")
    return os.path.relpath(dirs[0], ROOT)


def prepare_scratch(need_asan: bool, need_fuzz: bool) -> None:
    """The tracked and new (not ignored) files into SRC, mtimes kept; the build folders copied once."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    listing = b"\0".join(f for f in files if f and os.path.exists(os.path.join(ROOT, f.decode())))
    os.makedirs(SRC, exist_ok=True)
    tar = subprocess.Popen(
        ["tar", "-C", ROOT, "--null", "-T", "-", "-cf", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    untar = subprocess.Popen(["tar", "-C", SRC, "-xf", "-"], stdin=tar.stdout)
    tar.stdin.write(listing)
    tar.stdin.close()
    assert untar.wait() == 0 and tar.wait() == 0, "copying the tree into build/reintro/src failed"
    for d in MOUNTED_BACK:
        os.makedirs(os.path.join(SRC, d), exist_ok=True)
    copies = ([asan_build_dir()] if need_asan else []) + (["build/fuzz/core"] if need_fuzz else [])
    for d in copies:
        if not os.path.isdir(os.path.join(ROOT, d)):
            raise SystemExit(f"no {d}: run make build-asan and make fuzz-build first")
        if not os.path.isdir(os.path.join(SRC, d)):
            os.makedirs(os.path.dirname(os.path.join(SRC, d)), exist_ok=True)
            subprocess.run(["cp", "-a", os.path.join(ROOT, d), os.path.join(SRC, d)], check=True)
    if not os.path.isdir(os.path.join(SRC, ".git")):
        subprocess.run(["git", "init", "-q"], cwd=SRC, check=True)  # git apply's root is the scratch copy


def enter_namespace(real: str) -> None:
    """Inside `unshare -m`: the scratch copy over the tree, the MOUNTED_BACK paths from the real one."""

    def mount(a: str, b: str) -> None:
        subprocess.run(["mount", "--bind", a, b], check=True)

    mount(ROOT, real)
    mount(SRC, ROOT)
    for d in MOUNTED_BACK:
        if os.path.isdir(
            os.path.join(real, d)
        ):  # a tree may lack a venv (.venv-test) that it does not use here
            mount(os.path.join(real, d), os.path.join(ROOT, d))


def build_asan(log: str, env: dict) -> bool:
    venv = os.path.join(WORK, "venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
        site = subprocess.run(
            [os.path.join(ROOT, ".venv-asan", "bin", "python"), "-c", purelib],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        mine = subprocess.run([py, "-c", purelib], capture_output=True, text=True, check=True).stdout.strip()
        with open(os.path.join(mine, "asan_packages.pth"), "w") as f:
            f.write(site + "\n")  # a plain path: .venv-asan's own editable slimtensor finder is not run
    flags, link = env["REINTRO_ASAN_FLAGS"], env["REINTRO_ASAN_LINK"]
    rc, _ = sh(
        [
            py,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--force-reinstall",
            "-Cbuild-dir=build/asan-{wheel_tag}",
            "-Ccmake.build-type=Debug",
            f"-Ccmake.define.CMAKE_CXX_FLAGS={flags}",
            f"-Ccmake.define.CMAKE_C_FLAGS={flags}",
            f"-Ccmake.define.CMAKE_SHARED_LINKER_FLAGS={link}",
            f"-Ccmake.define.CMAKE_MODULE_LINKER_FLAGS={link}",
            f"-Ccmake.define.CMAKE_BUILD_PARALLEL_LEVEL={env.get('JOBS', '2')}",
            os.path.join(ROOT, CORE),
        ],
        log,
        env=dict(
            os.environ, **assignments(env["REINTRO_ASAN_ENV"])
        ),  # the build's Python steps load the package
    )
    return rc == 0


def build_fuzz(log: str, env: dict) -> bool:
    cmd = f"cmake --build build/fuzz/core -j{env.get('JOBS', '2')} --target slimtensor"
    for f in ("shim", "dlpack"):
        cmd += (
            f" && {env['REINTRO_CXX']} -std=c++17 {env['REINTRO_FUZZ_FLAGS']} -fsanitize=fuzzer tests/fuzz/{f}_fuzzer.cpp"
            f" -I{CORE}/include build/fuzz/core/libslimtensor.so -Wl,-rpath,{ROOT}/build/fuzz/core -o {WORK}/{f}_fuzzer"
        )
    rc, _ = sh(cmd, log)
    return rc == 0


def assignments(text: str) -> dict[str, str]:
    """'A=1 B="x y"' (the Makefile's environment variables, as `env` takes them) as a dict."""
    return dict(word.split("=", 1) for word in shlex.split(text))


def run_detector(d: Detector, log: str, env: dict, fuzz_time: int, tag: str) -> dict:
    """Runs one detector: detected (failed with the signature), seconds, said (its first error line) and, for a
    fuzzer, executions, finding (the report naming the bug: the signature's line, its first stack frames, the
    sanitizer's SUMMARY) and artifact (the input it wrote)."""
    t0 = time.time()
    asan_env = dict(os.environ, **assignments(env["REINTRO_ASAN_ENV"]))
    py = os.path.join(WORK, "venv", "bin", "python")
    if d.kind == "pytest":
        # --capture=sys: pytest's default fd capture swallows a sanitizer's report when UBSan ends the process
        # (exit 1, no output at all: last session's "harness failure" was that); at sys level it reaches the log
        cmd = [py, "-m", "pytest", "-p", "no:cacheprovider", "--capture=sys", "-q", *d.target.split()]
        rc, out = sh(cmd, log, env=asan_env, timeout=1800)
    else:
        corpus = os.path.join(WORK, f"corpus-{d.kind}-{tag}")
        shutil.rmtree(corpus, ignore_errors=True)
        os.makedirs(corpus)
        flags = [
            f"-max_total_time={fuzz_time}",
            f"-artifact_prefix={WORK}/artifact-{tag}-",
            "-print_final_stats=1",
        ]
        if d.kind == "atheris":
            cmd = [py, "tests/fuzz/views_fuzzer.py", *flags, "-max_len=256", corpus]
            rc, out = sh(cmd, log, env=asan_env, timeout=fuzz_time + 300)
        else:
            fenv = dict(os.environ, **assignments(env["REINTRO_FUZZ_ENV"]), LLVM_PROFILE_FILE=os.devnull)
            cmd = [
                os.path.join(WORK, f"{d.kind}_fuzzer"),
                *flags,
                "-max_len=512",
                "-timeout=10",
                "-rss_limit_mb=2048",
                corpus,
            ]
            rc, out = sh(cmd, log, env=fenv, timeout=fuzz_time + 300)
    hit = next((s for s in d.signature if s in out), None)
    said = ""
    for line in out.splitlines():
        if any(
            k in line
            for k in ("runtime error", "contract broken", "ERROR:", "Error:", "assert", "SIGSEGV", "deadly")
        ):
            said = line.strip()[:200]
            break
    result = {
        "detected": rc != 0 and hit is not None,
        "seconds": round(time.time() - t0, 1),
        "said": said or f"exit {rc}",
    }
    if d.kind != "pytest":
        result.update(fuzzer_report(out, hit))
    return result


def fuzzer_report(out: str, hit: str | None) -> dict:
    """What a libFuzzer (or atheris) run said: executions (its final stats, else its last status line), the
    finding (the line holding the signature, the next stack frames, the SUMMARY line) and the input written."""
    lines = out.splitlines()
    stats = [int(x.split(":")[-1]) for x in lines if x.startswith("stat::number_of_executed_units:")]
    # killed before its final stats: the last status line ("#4096\tpulse  cov: ...")
    status = [
        int(x[1:].split("\t")[0]) for x in lines if x.startswith("#") and x[1:].split("\t")[0].isdigit()
    ]
    execs = stats[-1] if stats else status[-1] if status else None
    finding: list[str] = []
    if hit is not None:
        first = next(i for i, line in enumerate(lines) if hit in line)
        finding.append(lines[first].strip())
        frames = [x.strip() for x in lines[first + 1 : first + 40] if x.strip().startswith("#")][:4]
        finding += frames
        finding += [x.strip() for x in lines[first:] if x.startswith("SUMMARY:")][:1]
    artifact = next((x.split("written to ")[-1].strip() for x in lines if "Test unit written to" in x), None)
    return {"executions": execs, "finding": finding, "artifact": artifact}


MARKER = os.path.join(
    WORK, "applied-patch"
)  # names the patch while its build is in the scratch build folders


def patched_files(patch: str) -> list[str]:
    with open(patch) as f:
        return [line[6:].split("\t")[0].strip() for line in f if line.startswith("+++ b/")]


def apply(patch: str, log: str, reverse: bool = False) -> None:
    rc, out = sh(["git", "apply", *(["-R"] if reverse else []), patch], log, cwd=SRC)
    if rc != 0:
        raise SystemExit(f"git apply {'-R ' if reverse else ''}{patch} failed in {SRC}:\n{out[-2000:]}")
    if not reverse:
        with open(MARKER, "w") as f:
            f.write(patch)


def forget_interrupted_patch() -> None:
    """After a run that stopped with a patch applied, the files it touched are rebuilt (their copies from the
    tree carry older mtimes than the objects built from the patched text)."""
    if os.path.exists(MARKER):
        with open(MARKER) as f:
            for path in patched_files(f.read().strip()):
                os.utime(os.path.join(SRC, path))
        os.remove(MARKER)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", help="bug names (default: all)")
    ap.add_argument("--fuzz-time", type=int, default=600, help="seconds each fuzzer gets to find its bug")
    ap.add_argument("--skip-control", action="store_true")
    ap.add_argument(
        "--kinds", default="pytest,atheris,shim,dlpack", help="detector kinds to run (comma-separated)"
    )
    ap.add_argument("--inside", help=argparse.SUPPRESS)  # the real tree's view, inside the namespace
    args = ap.parse_args()
    env = dict(os.environ)
    kinds_wanted = set(args.kinds.split(","))
    bugs = [
        Bug(b.name, [d for d in b.detectors if d.kind in kinds_wanted])
        for b in BUGS
        if (not args.only or b.name in args.only) and any(d.kind in kinds_wanted for d in b.detectors)
    ]
    missing = sorted(set(args.only or []) - {b.name for b in BUGS})
    if missing:
        raise SystemExit(f"unknown bugs {missing}; known: {[b.name for b in BUGS]}")
    kinds = {d.kind for b in bugs for d in b.detectors}
    need_asan = bool(kinds & {"pytest", "atheris"})
    need_fuzz = bool(kinds & {"shim", "dlpack"})
    if not args.inside:
        os.makedirs(WORK, exist_ok=True)
        prepare_scratch(need_asan, need_fuzz)
        forget_interrupted_patch()
        real = tempfile.mkdtemp(prefix="slimtensor-reintro-")
        try:
            return subprocess.run(
                [
                    "unshare",
                    "-m",
                    "--propagation",
                    "private",
                    sys.executable,
                    __file__,
                    *sys.argv[1:],
                    "--inside",
                    real,
                ]
            ).returncode
        finally:
            os.rmdir(real)
    enter_namespace(args.inside)
    log = os.path.join(WORK, "reintro.log")
    results = []

    def build() -> None:
        if need_asan and not build_asan(log, env):
            raise SystemExit(f"the scratch ASan build failed: {log}")
        if need_fuzz and not build_fuzz(log, env):
            raise SystemExit(f"the scratch fuzz build failed: {log}")

    build()
    if need_asan and not args.skip_control and "pytest" in kinds:
        nodes = " ".join(d.target for b in bugs for d in b.detectors if d.kind == "pytest")
        r = run_detector(Detector("pytest", nodes, ("",)), log, env, 0, "control")
        results.append({"bug": "(control: no patch)", "detector": "pytest", "target": nodes, **r})
        print(
            f"control (unpatched): {'FAILED: ' + r['said'] if r['detected'] else 'passed'} in {r['seconds']}s",
            flush=True,
        )
        if r["detected"]:
            raise SystemExit("the detectors fail without any patch: fix that first")
    for b in bugs:
        patch = os.path.join(PATCHES, b.name + ".patch")
        apply(patch, log)
        try:
            build()
            for d in b.detectors:
                r = run_detector(d, log, env, args.fuzz_time, b.name)
                results.append({"bug": b.name, "detector": d.kind, "target": d.target, **r})
                execs = f" after {r['executions']} executions" if r.get("executions") is not None else ""
                verdict = "DETECTED" if r["detected"] else "MISSED"
                print(
                    f"{b.name:30s} {d.kind:8s} {verdict} in {r['seconds']}s{execs}: {r['said']}", flush=True
                )
                for line in r.get("finding", []):
                    print(f"    {line[:300]}", flush=True)
                with open(os.path.join(WORK, "summary.json"), "w") as f:  # so far: a long run is read early
                    json.dump(results, f, indent=1)
        finally:
            apply(patch, log, reverse=True)
    build()  # the scratch builds back at the tree's state
    if os.path.exists(MARKER):
        os.remove(MARKER)
    with open(os.path.join(WORK, "summary.json"), "w") as f:
        json.dump(results, f, indent=1)
    missed = [r for r in results if r["bug"] != "(control: no patch)" and not r["detected"]]
    found = sum(1 for r in results if r["bug"] != "(control: no patch)" and r["detected"])
    print(f"{found} detections, {len(missed)} missed; log: {log}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

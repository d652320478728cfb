"""Latency of the same CUDA AOTInductor model .so on slimtensor and on libtorch, and of its CUDA graph.

    python -m slimtensor_cuda.bench_aoti MODEL_DIR [--runs 50] [--json out.json] [NAME ...]

MODEL_DIR holds NAME.pt2/.npz written by tests/aoti/compile_models.py --device cuda. Each library runs in its
own worker process, both from Python on the same inputs: "slim" loads the model with
st.aoti.load(device="cuda") (no torch in that process); "torch" puts libtorch_cuda in the global scope (so
the very same libtorch-free .so binds to libtorch's shims and CUDA runtime) and runs it with
torch._inductor.aoti_load_package. Each run is timed with CUDA events recorded on the run's stream around
the call, after 5 warm-up runs. "slim graph" replays model.capture()'s graph the same way (inputs copied in,
launch).

Note [Interleaved CUDA model samples]: the GPU machine is shared, and its host speed moves between minutes
(libtorch's time of one model doubled between two runs while slimtensor's did not move), so the two workers
stay alive for the whole run and are asked for a few samples at a time, in turn (5 per turn, --runs in all,
at least 20): both libraries see the same machine, and a ratio compares like with like (as the CPU model
harness does: Note [Interleaved model samples]). Reported: the median and min microseconds of each side's
samples. A worker that dies (a crash is not an exception) gives the model it was timing that reason, and a
new worker takes the next model. Measurements only: nothing here asserts a speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

WORKER = r"""
import json, os, sys
import numpy as np
side, d = sys.argv[1], sys.argv[2]
def inputs_of(name):
    z = np.load(f"{d}/{name}.npz")
    meta = json.load(open(f"{d}/{name}.json"))
    return [z[f"in0_{i}"] for i in range(len(meta["inputs"][0]))], meta["inputs"][0]
def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
if side == "torch":
    import ctypes, torch
    ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"), mode=os.RTLD_GLOBAL)
    def event():
        return torch.cuda.Event(enable_timing=True)
    def stream():
        return torch.cuda.current_stream()
else:
    import slimtensor as st
    import slimtensor_cuda as stc
    from slimtensor import aoti
    assert "torch" not in sys.modules
    def event():
        return stc.Event(enable_timing=True)
    def stream():
        return stc.current_stream()
calls = {}  # kind -> the timed call of the loaded model
held = []  # the slimtensor model loaded last, closed before the next
def load(name):
    calls.clear()
    while held:
        held.pop().close()
    arrs, dts = inputs_of(name)
    out = {}
    if side == "torch":
        try:
            xs = [torch.from_numpy(a).view(torch.bfloat16).cuda() if dt == "bfloat16" else torch.from_numpy(a).cuda()
                  for a, dt in zip(arrs, dts)]
            runner = torch._inductor.aoti_load_package(f"{d}/{name}.pt2")
            for _ in range(5):
                runner(*xs)
            calls["torch"] = lambda: runner(*xs)
        except Exception as e:
            out["torch"] = f"{type(e).__name__}: {str(e)[:300]}"
        return out
    try:
        xs = [st.asarray(a.view("uint16")).view(st.bfloat16).to("cuda") if dt == "bfloat16" else st.asarray(a).to("cuda")
              for a, dt in zip(arrs, dts)]
        m = aoti.load(f"{d}/{name}.pt2", device="cuda", check_inputs=False)
    except Exception as e:
        return {"slim": f"{type(e).__name__}: {str(e)[:300]}", "slim graph": "the model did not load"}
    held.append(m)
    try:
        for _ in range(5):
            m(*xs)
        calls["slim"] = lambda: m(*xs)
    except Exception as e:
        out["slim"] = f"{type(e).__name__}: {str(e)[:300]}"
    try:
        m.capture(*xs)
        for _ in range(5):
            m.replay(*xs)
        calls["slim graph"] = lambda: m.replay(*xs)
    except Exception as e:
        out["slim graph"] = f"{type(e).__name__}: {str(e)[:300]}"
    return out
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["op"] == "load":
        reply({"skipped": load(cmd["name"]), "kinds": sorted(calls)})
    elif cmd["op"] == "time":
        fn, s, ms = calls[cmd["kind"]], stream(), []
        for _ in range(cmd["n"]):
            a, b = event(), event()
            a.record(s); fn(); b.record(s); b.synchronize()
            ms.append(a.elapsed_time(b))
        reply({"ms": ms})
"""

PER_TURN = 5  # samples a worker takes before the other's turn
KINDS = {"slim": ("slim", "slim graph"), "torch": ("torch",)}  # what each worker times


class Worker:
    """One library's timing process, kept for the run (Note [Interleaved CUDA model samples])."""

    def __init__(self, side: str, model_dir: str):
        self.side, self.model_dir, self.proc, self.err = side, model_dir, None, None

    def ask(self, cmd: dict) -> dict:
        """The worker's reply (a new worker when the last one died); RuntimeError with its stderr if it dies."""
        if self.proc is None:
            # stderr to a file, not a pipe: warnings never fill a pipe and block the worker
            self.err = tempfile.TemporaryFile(mode="w+")
            self.proc = subprocess.Popen(
                [sys.executable, "-c", WORKER, self.side, self.model_dir],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.err,
                text=True,
            )
        try:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if line:
            return json.loads(line)
        rc = self.proc.wait()
        self.err.seek(0)
        why = self.err.read()[-600:]
        self.proc = None
        raise RuntimeError(f"the {self.side} process died (exit {rc}): {why}")

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def stats(ms: list[float]) -> dict:
    ts = sorted(ms)
    return {
        "median_us": ts[len(ts) // 2] * 1e3,
        "min_us": ts[0] * 1e3,
        "runs": len(ts),
        "samples_us": [t * 1e3 for t in ts],
    }


def measure(workers: list[Worker], name: str, runs: int) -> dict:
    """{kind: stats or {"skipped": why}} for one model, its kinds' samples taken in turns."""
    result, live = {}, []  # live: the (worker, kind) pairs still sampled
    for w in workers:
        try:
            r = w.ask({"op": "load", "name": name})
        except RuntimeError as e:
            result.update({k: {"skipped": str(e)} for k in KINDS[w.side]})
            continue
        result.update({k: {"skipped": why} for k, why in r["skipped"].items()})
        live += [(w, k) for k in r["kinds"]]
    samples: dict[str, list[float]] = {k: [] for _, k in live}
    while live and min(len(samples[k]) for _, k in live) < runs:
        for w, k in list(live):
            if (w, k) not in live:  # its worker died earlier in this round
                continue
            try:
                samples[k] += w.ask({"op": "time", "kind": k, "n": PER_TURN})["ms"]
            except RuntimeError as e:  # every kind that worker was sampling ends with the reason
                for k2 in KINDS[w.side]:
                    if samples.pop(k2, None) is not None:
                        result[k2] = {"skipped": str(e)}
                live = [p for p in live if p[0] is not w]
    result.update({k: stats(v) for k, v in samples.items()})
    return result


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    runs, out_json = 50, None
    if "--runs" in args:
        i = args.index("--runs")
        runs = max(20, int(args[i + 1]))
        del args[i : i + 2]
    if "--json" in args:
        i = args.index("--json")
        out_json = args[i + 1]
        del args[i : i + 2]
    model_dir, names = args[0], args[1:]
    if not names:
        names = sorted(f[:-4] for f in os.listdir(model_dir) if f.endswith(".pt2"))
    workers = [Worker("slim", model_dir), Worker("torch", model_dir)]
    rows = []
    print(
        f"{'model':20s} {'slim us':>10s} {'torch us':>10s} {'ratio':>7s} {'graph us':>10s} {'torch/graph':>11s}"
    )
    try:
        for name in names:
            got = measure(workers, name, runs)
            s, g, t = got.get("slim", {}), got.get("slim graph", {}), got.get("torch", {})
            row = {"model": name, "slim": s, "slim_graph": g, "torch": t}
            if "median_us" in s and "median_us" in t:
                row["ratio"] = s["median_us"] / t["median_us"]
            if "median_us" in g and "median_us" in t:
                row["torch_over_graph"] = t["median_us"] / g["median_us"]
            rows.append(row)

            def f(d):
                return f"{d['median_us']:10.1f}" if "median_us" in d else f"{'-':>10s}"

            ratio = f"{row['ratio']:7.2f}" if "ratio" in row else f"{'-':>7s}"
            speed = f"{row['torch_over_graph']:11.2f}" if "torch_over_graph" in row else f"{'-':>11s}"
            print(f"{name:20s} {f(s)} {f(t)} {ratio} {f(g)} {speed}", flush=True)
            for k, d in (("slim", s), ("graph", g), ("torch", t)):
                if "skipped" in d:
                    print(f"    {k}: {d['skipped']}")
    finally:
        for w in workers:
            w.close()
    if out_json:
        with open(out_json, "w") as fh:
            json.dump({"runs": runs, "per_turn": PER_TURN, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

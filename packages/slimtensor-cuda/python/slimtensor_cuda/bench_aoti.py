"""Latency of the same CUDA AOTInductor model .so on slimtensor and on libtorch, and of its CUDA graph.

    python -m slimtensor_cuda.bench_aoti MODEL_DIR [--runs 30] [--json out.json] [NAME ...]

MODEL_DIR holds NAME.pt2/.npz written by tests/aoti/compile_models.py --device cuda. Each side runs in its
own subprocess, both from Python on the same inputs: "slim" loads the model with st.aoti.load(device="cuda")
(no torch in that process); "torch" puts libtorch_cuda in the global scope (so the very same libtorch-free
.so binds to libtorch's shims and CUDA runtime) and runs it with torch._inductor.aoti_load_package. Each run
is timed with CUDA events recorded on the run's stream around the call, after 5 warm-up runs; reported: the
median and min microseconds of --runs runs (at least 20). "slim graph" replays model.capture()'s graph the
same way (inputs copied in, launch). Measurements only: nothing here asserts a speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r"""
import json, os, sys
import numpy as np
side, d, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = sys.argv[4].split(",")
def inputs_of(name):
    z = np.load(f"{d}/{name}.npz")
    meta = json.load(open(f"{d}/{name}.json"))
    arrs = [z[f"in0_{i}"] for i in range(len(meta["inputs"][0]))]
    return arrs, meta["inputs"][0]
def stats(ts):
    ts = sorted(ts)
    return {"median_us": ts[len(ts) // 2] * 1e3, "min_us": ts[0] * 1e3, "runs": len(ts), "samples_us": [t * 1e3 for t in ts]}
out = {}
if side == "torch":
    import ctypes, torch
    ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"), mode=os.RTLD_GLOBAL)
    for name in names:
        arrs, dts = inputs_of(name)
        xs = [torch.from_numpy(a).view(torch.bfloat16).cuda() if dt == "bfloat16" else torch.from_numpy(a).cuda()
              for a, dt in zip(arrs, dts)]
        try:  # one model's failure is that model's result, never the whole side's
            runner = torch._inductor.aoti_load_package(f"{d}/{name}.pt2")
            s = torch.cuda.current_stream()
            for _ in range(5):
                runner(*xs)
            ts = []
            for _ in range(runs):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record(s); runner(*xs); b.record(s); b.synchronize()
                ts.append(a.elapsed_time(b))
            out[name] = {"torch": stats(ts)}
        except Exception as e:
            out[name] = {"torch": {"skipped": f"{type(e).__name__}: {str(e)[:300]}"}}
else:
    import slimtensor as st
    import slimtensor_cuda as stc
    from slimtensor import aoti
    assert "torch" not in sys.modules
    for name in names:
        arrs, dts = inputs_of(name)
        xs = [st.asarray(a.view("uint16")).view(st.bfloat16).to("cuda") if dt == "bfloat16" else st.asarray(a).to("cuda")
              for a, dt in zip(arrs, dts)]
        res = {}
        try:
            m = aoti.load(f"{d}/{name}.pt2", device="cuda", check_inputs=False)
        except Exception as e:
            out[name] = {"slim": {"skipped": f"{type(e).__name__}: {str(e)[:300]}"}}
            continue
        s = stc.current_stream()
        def timed(fn):
            for _ in range(5):
                fn()
            ts = []
            for _ in range(runs):
                a, b = stc.Event(enable_timing=True), stc.Event(enable_timing=True)
                a.record(s); fn(); b.record(s); b.synchronize()
                ts.append(a.elapsed_time(b))
            return stats(ts)
        try:
            res["slim"] = timed(lambda: m(*xs))
        except Exception as e:
            res["slim"] = {"skipped": f"{type(e).__name__}: {str(e)[:300]}"}
        try:
            m.capture(*xs)
            res["slim graph"] = timed(lambda: m.replay(*xs))
        except Exception as e:
            res["slim graph"] = {"skipped": f"{type(e).__name__}: {str(e)[:300]}"}
        m.close()
        out[name] = res
print(json.dumps(out))
"""


def _child(side: str, model_dir: str, runs: int, names: list[str]) -> tuple[dict | None, str]:
    """One subprocess timing ``names`` on ``side``: (results, "") or (None, why it died)."""
    try:
        r = subprocess.run(
            [sys.executable, "-c", CHILD, side, model_dir, str(runs), ",".join(names)],
            capture_output=True,
            text=True,
            timeout=900,
        )
    except subprocess.TimeoutExpired:
        return None, "timed out after 900 s"
    if r.returncode != 0:
        return None, f"exit {r.returncode}: {(r.stderr or r.stdout)[-600:]}"
    return json.loads(r.stdout.strip().splitlines()[-1]), ""


def run_side(side: str, model_dir: str, runs: int, names: list[str]) -> dict:
    """All models in one process; when that process dies (a crash is not an exception), each model again in
    its own, so the crashing model is named with its stderr and the others are still measured."""
    out, why = _child(side, model_dir, runs, names)
    if out is not None:
        return out
    print(f"{side} side died ({why.splitlines()[0] if why else ''}); one process per model", file=sys.stderr)
    key = "torch" if side == "torch" else "slim"
    out = {}
    for name in names:
        one, why = _child(side, model_dir, runs, [name])
        out.update(one if one is not None else {name: {key: {"skipped": f"the {side} process died: {why}"}}})
    return out


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    runs, out_json = 30, None
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
    slim = run_side("slim", model_dir, runs, names)
    torch_ = run_side("torch", model_dir, runs, names)
    rows = []
    print(
        f"{'model':20s} {'slim us':>10s} {'torch us':>10s} {'ratio':>7s} {'graph us':>10s} {'torch/graph':>11s}"
    )
    for name in names:
        s = slim.get(name, {}).get("slim", {})
        g = slim.get(name, {}).get("slim graph", {})
        t = torch_.get(name, {}).get("torch", {})
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
        print(f"{name:20s} {f(s)} {f(t)} {ratio} {f(g)} {speed}")
        for k, d in (("slim", s), ("graph", g), ("torch", t)):
            if "skipped" in d:
                print(f"    {k}: {d['skipped']}")
    if out_json:
        with open(out_json, "w") as fh:
            json.dump({"runs": runs, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

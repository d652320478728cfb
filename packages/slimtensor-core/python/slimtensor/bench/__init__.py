"""The benchmark suite: slimtensor against numpy and torch in the same run, written as JSON (docs/benchmarks.md).

    slimtensor bench [--quick] [--filter PATTERN] [--out PATH] [--compare OLD.json] [--targets] [--markdown]
    python -m slimtensor.bench ...

Results follow the schema in _schema.py; st.viz.benchmark(results) plots them.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from . import _machine, _report, _schema, _targets
from ._case import Case, Libs, to_json
from ._timing import Settings

__all__ = ["run", "main", "load", "validate", "compare", "SCHEMA"]

SCHEMA = _schema.SCHEMA
validate = _schema.validate


def _all_cases(libs: Libs, quick: bool) -> list[Case]:
    from . import cases_aoti, cases_calls, cases_copies, cases_cuda, cases_memory

    return [
        *cases_calls.cases(libs, quick),
        *cases_copies.cases(libs, quick),
        *cases_memory.cases(libs, quick),
        *cases_aoti.cases(libs, quick),
        *cases_cuda.cases(libs, quick),
    ]


def _selected(case_id: str, patterns: list[str] | None) -> bool:
    """A case runs when any pattern matches its id: a glob (fnmatch) or, without wildcards, a substring."""
    if not patterns:
        return True
    for p in patterns:
        if any(ch in p for ch in "*?[") and fnmatch.fnmatchcase(case_id, p):
            return True
        if p in case_id:
            return True
    return False


def _settings(case: Case, quick: bool) -> Settings:
    size = case.params.get("size_bytes", 0)
    if quick:
        return Settings(repeats=3, min_sample_s=0.004, warmup=1)
    if size >= (1 << 30):
        return Settings(repeats=5, min_sample_s=0.0, warmup=1)
    if size >= (64 << 20):
        return Settings(repeats=7, min_sample_s=0.0, warmup=1)
    return Settings(repeats=9, min_sample_s=0.02, warmup=2)


@contextlib.contextmanager
def _threads(libs: Libs, n: int) -> Iterator[dict]:
    """n threads for slimtensor and torch; with n == 1 the process is pinned to one CPU (the last allowed)."""
    info: dict[str, Any] = {"threads": n, "pinned_cpu": None}
    old_affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    old_st = libs.st.get_num_threads()
    old_torch = libs.torch.get_num_threads() if libs.torch is not None else None
    try:
        if n == 1 and old_affinity and len(old_affinity) > 1:
            cpu = max(old_affinity)
            os.sched_setaffinity(0, {cpu})
            info["pinned_cpu"] = cpu
        libs.st.set_num_threads(n)
        if libs.torch is not None:
            libs.torch.set_num_threads(n)
        yield info
    finally:
        if old_affinity:
            os.sched_setaffinity(0, old_affinity)
        libs.st.set_num_threads(old_st)
        if libs.torch is not None:
            libs.torch.set_num_threads(old_torch)


def run(
    quick: bool = False,
    filter: list[str] | str | None = None,
    torch: bool = True,
    progress: bool = True,
    argv: list[str] | None = None,
) -> dict:
    """Runs the suite (or the cases `filter` selects) and returns the results as a JSON-ready dict."""
    patterns = [filter] if isinstance(filter, str) else filter
    libs = Libs.load(with_torch=torch)
    cases = [c for c in _all_cases(libs, quick) if _selected(c.id, patterns)]
    started = time.perf_counter()
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "created": _machine.now_iso(),
        "command": _machine.command_line(argv if argv is not None else (["--quick"] if quick else [])),
        "mode": "quick" if quick else "full",
        "filter": patterns,
        "machine": _machine.machine(),
        "versions": _machine.versions(libs.torch),
        "settings": {
            "pinning": "1-thread cases run pinned to one CPU; torch.set_num_threads and "
            "st.set_num_threads set per case",
            "gc": "off during each sample",
            "timer": "time.perf_counter via timeit",
        },
        "cases": [],
    }
    bar = _progress(len(cases), progress)
    try:
        for case in cases:
            if bar is not None:
                bar.set_description(case.id[:48])
            results = None
            if case.skipped is None and case.batch is not None:
                for sub, sub_results in case.batch(_settings(case, quick)):
                    out["cases"].append(to_json(sub, sub_results))
                if bar is not None:
                    bar.update(1)
                continue
            if case.skipped is None and case.run is not None:
                with _threads(libs, case.threads) as info:
                    try:
                        results = case.run(_settings(case, quick))
                    except MemoryError as exc:
                        case.skipped = f"not enough memory for this case ({exc})"
                    case.extra["pinned_cpu"] = info["pinned_cpu"]
            out["cases"].append(to_json(case, results))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    out["duration_s"] = time.perf_counter() - started
    return out


def _progress(total: int, enabled: bool):
    """A tqdm bar on stderr, or a plain counter (one line per case) when tqdm is not installed."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return _Counter(total)
    return tqdm(total=total, unit="case", file=sys.stderr, dynamic_ncols=True)


class _Counter:
    """The progress of a run without tqdm: ``[  3/40] copy/c2c/... (12 s)`` per case, on stderr."""

    def __init__(self, total: int, stream=None) -> None:
        self.total, self.done, self.stream = total, 0, stream or sys.stderr
        self.started = time.perf_counter()
        self.width = len(str(total))

    def set_description(self, text: str) -> None:
        elapsed = time.perf_counter() - self.started
        print(
            f"[{self.done + 1:{self.width}d}/{self.total}] {text} ({elapsed:.0f} s)",
            file=self.stream,
            flush=True,
        )

    def update(self, n: int = 1) -> None:
        self.done += n

    def close(self) -> None:
        elapsed = time.perf_counter() - self.started
        print(f"{self.done}/{self.total} cases in {elapsed:.0f} s", file=self.stream, flush=True)


def load(path: str) -> dict:
    """Reads a results file and checks it against the schema."""
    with open(path) as f:
        results = json.load(f)
    validate(results)
    return results


def compare(old: dict, new: dict) -> dict:
    """slimtensor's change per case between two results (old median / new median: > 1 is faster)."""
    return _report.compare(old, new)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="slimtensor bench",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats (under a minute)")
    p.add_argument(
        "--filter",
        action="append",
        metavar="PATTERN",
        help="run the cases whose id contains PATTERN (or matches it as a glob); repeatable",
    )
    p.add_argument(
        "--out",
        metavar="PATH",
        help="write the JSON results here (default: "
        "slimtensor-bench-<mode>-<time>.json in the current folder)",
    )
    p.add_argument(
        "--compare", metavar="OLD.json", help="print (and store) the change against an earlier run"
    )
    p.add_argument(
        "--results",
        metavar="NEW.json",
        help="with --compare or --targets: use this stored run instead of running the suite",
    )
    p.add_argument(
        "--targets",
        action="store_true",
        help="print the issues' speed targets, met or missed, as a markdown table",
    )
    p.add_argument("--markdown", action="store_true", help="print every case as a markdown table")
    p.add_argument("--list", action="store_true", help="list the case ids (after --filter) and exit")
    p.add_argument(
        "--no-torch", action="store_true", help="do not import torch (its cases say why they are skipped)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quiet", action="store_true", help="do not print the results table")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ns = _parser().parse_args(argv)
    if ns.list:
        libs = Libs.load(with_torch=not ns.no_torch)
        for case in _all_cases(libs, ns.quick):
            if _selected(case.id, ns.filter):
                print(case.id + (f"  (skipped: {case.skipped})" if case.skipped else ""))
        return 0
    if ns.results and not (ns.compare or ns.targets or ns.markdown):
        print(
            "slimtensor bench: --results needs --compare OLD.json, --targets or --markdown", file=sys.stderr
        )
        return 2
    old = load(ns.compare) if ns.compare else None
    if ns.results:
        new = load(ns.results)
    else:
        new = run(
            quick=ns.quick, filter=ns.filter, torch=not ns.no_torch, progress=not ns.no_progress, argv=argv
        )
        if old is not None:
            new["compare"] = {"against": os.path.abspath(ns.compare), "cases": compare(old, new)}
        validate(new)
        out = ns.out or f"slimtensor-bench-{new['mode']}-{time.strftime('%Y%m%d-%H%M%S')}.json"
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            json.dump(new, f, indent=1)
            f.write("\n")
        if not ns.quiet:
            print(_report.table(new))
        print(f"results: {out}", file=sys.stderr)
    if old is not None:
        changes = compare(old, new)
        metric_of = {c["id"]: c["metric"] for c in new["cases"]}
        print(_report.compare_table(changes, metric_of))
    if ns.markdown:
        print(_report.markdown(new))
    if ns.targets:
        print(_targets.markdown(new))
    return 0

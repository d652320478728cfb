"""One benchmark case: its id, parameters, the libraries it measures, and how it turns into JSON."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._timing import Settings

LIBS = ("slimtensor", "numpy", "torch")


@dataclass
class Libs:
    """The libraries a run measures; a peer that cannot be imported carries the reason instead."""

    st: Any
    np: Any
    torch: Any = None
    torch_reason: str = ""

    @staticmethod
    def load(with_torch: bool = True) -> Libs:
        import numpy

        import slimtensor

        torch, reason = None, "not requested (--no-torch)"
        if with_torch:
            try:
                torch = importlib.import_module("torch")
                reason = ""
            except Exception as exc:  # noqa: BLE001  (any import failure means: no torch peer)
                reason = f"torch is not importable ({type(exc).__name__}: {exc})"
        return Libs(slimtensor, numpy, torch, reason)


# What a case's run() returns per library: the _timing.summarize() dict, or {"skipped": reason}.
LibResult = dict


@dataclass
class Case:
    id: str  # "group/name/..."; --filter matches it
    group: str  # "call", "copy", "memory", "aoti"
    title: str  # one line for people
    params: dict
    metric: str  # "time" (seconds per call), "bytes", or "seconds" (one-shot durations such as import)
    run: Callable[[Settings], dict[str, LibResult]] | None = None
    traffic_bytes: int | None = None  # copies: bytes read + bytes written per call (GB/s = traffic/1e9/s)
    skipped: str | None = None  # the whole case cannot run here, and why
    threads: int = 1
    extra: dict = field(default_factory=dict)
    # A case measured elsewhere in one go (the CUDA cases, Note [CUDA bench cases]): returns the cases it
    # measured with their results, which replace this one in the output.
    batch: Callable[[Settings], list[tuple[Case, dict[str, LibResult]]]] | None = None


def ratios(results: dict[str, LibResult]) -> dict[str, float]:
    """peer median / slimtensor median for each measured peer: > 1 means slimtensor is faster (or smaller)."""
    mine = results.get("slimtensor", {})
    if "median" not in mine or not mine["median"]:
        return {}
    return {
        lib: r["median"] / mine["median"]
        for lib, r in results.items()
        if lib != "slimtensor" and "median" in r
    }


def with_bandwidth(result: LibResult, traffic: int | None) -> LibResult:
    """Adds GB/s (median and the quartile band, from the times) to one library's timing result."""
    if traffic is None or "median" not in result:
        return result
    out = dict(result)
    out["gbps"] = traffic / 1e9 / result["median"]
    out["gbps_q1"] = traffic / 1e9 / result["q3"]  # slower quartile of time = lower bandwidth
    out["gbps_q3"] = traffic / 1e9 / result["q1"]
    out["gbps_best"] = traffic / 1e9 / result["min"]
    return out


def to_json(case: Case, results: dict[str, LibResult] | None) -> dict:
    entry = {
        "id": case.id,
        "group": case.group,
        "title": case.title,
        "params": case.params,
        "metric": case.metric,
        "threads": case.threads,
        "traffic_bytes": case.traffic_bytes,
        "skipped": case.skipped,
        "results": {},
        "ratios": {},
    }
    entry.update(case.extra)
    if results is not None:
        entry["results"] = {lib: with_bandwidth(r, case.traffic_bytes) for lib, r in results.items()}
        entry["ratios"] = ratios(results)
    return entry

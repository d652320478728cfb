"""The JSON schema of benchmark results (docs/benchmarks.md describes it) and a checker for it."""

from __future__ import annotations

SCHEMA = "slimtensor-bench/1"

_TOP = {
    "schema": str,
    "created": str,
    "command": str,
    "mode": str,
    "filter": (list, type(None)),
    "machine": dict,
    "versions": dict,
    "settings": dict,
    "cases": list,
}
_CASE = {
    "id": str,
    "group": str,
    "title": str,
    "params": dict,
    "metric": str,
    "threads": int,
    "traffic_bytes": (int, type(None)),
    "skipped": (str, type(None)),
    "results": dict,
    "ratios": dict,
}
_STATS = {
    "samples": list,
    "number": int,
    "median": float,
    "min": float,
    "max": float,
    "q1": float,
    "q3": float,
    "spread": float,
}


def problems(results: dict) -> list[str]:
    """Every way `results` departs from the schema (empty when it conforms)."""
    out = []

    def check(obj: dict, spec: dict, where: str) -> None:
        for key, kind in spec.items():
            if key not in obj:
                out.append(f"{where}: missing '{key}'")
            elif not isinstance(obj[key], kind) and not (kind is float and isinstance(obj[key], int)):
                out.append(f"{where}.{key}: expected {kind} but found {type(obj[key]).__name__}")

    check(results, _TOP, "results")
    if results.get("schema") != SCHEMA:
        out.append(f"results.schema: expected {SCHEMA!r} but found {results.get('schema')!r}")
    for i, case in enumerate(results.get("cases", [])):
        where = f"cases[{i}]({case.get('id', '?')})"
        check(case, _CASE, where)
        if case.get("metric") not in ("time", "bytes", "seconds"):
            out.append(f"{where}.metric: expected time, bytes or seconds")
        if case.get("skipped") is None and "slimtensor" not in case.get("results", {}):
            out.append(f"{where}: not skipped but has no slimtensor result")
        for lib, r in case.get("results", {}).items():
            if "skipped" in r:
                if not isinstance(r["skipped"], str) or not r["skipped"]:
                    out.append(f"{where}.results.{lib}: a skipped library needs its reason")
                continue
            check(r, _STATS, f"{where}.results.{lib}")
            if case.get("traffic_bytes") and "gbps" not in r:
                out.append(f"{where}.results.{lib}: a copy result needs gbps")
        for lib, ratio in case.get("ratios", {}).items():
            if not isinstance(ratio, float) or ratio <= 0:
                out.append(f"{where}.ratios.{lib}: expected a positive float")
    return out


def validate(results: dict) -> None:
    """Raises ValueError listing the problems when `results` does not follow the schema."""
    found = problems(results)
    if found:
        raise ValueError("benchmark results do not follow " + SCHEMA + ":\n  " + "\n  ".join(found[:20]))

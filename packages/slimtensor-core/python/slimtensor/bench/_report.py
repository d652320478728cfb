"""Text output of the benchmark suite: the results table and the --compare table."""

from __future__ import annotations

import math

from ._case import LIBS

# The CUDA cases (group "cuda", Note [CUDA bench cases]) have their own columns: their peers are torch,
# cupy and cudaMemcpy, measured on the GPU in the same run.
CUDA_LIBS = ("slimtensor", "torch", "cupy", "cudaMemcpy")
CUDA_RATIOS = ("torch", "cupy", "cudaMemcpy")


def fmt_time(s: float) -> str:
    if s < 1e-8:
        return f"{s * 1e9:.1f} ns"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_bytes(b: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(b) >= size:
            return f"{b / size:.1f} {unit}"
    return f"{b:.0f} B"


def fmt_value(case: dict, r: dict) -> str:
    if "skipped" in r:
        return "-"
    if case.get("traffic_bytes"):
        return f"{r['gbps']:.1f} GB/s"
    if case["metric"] == "bytes":
        return fmt_bytes(r["median"])
    return fmt_time(r["median"])


def table(results: dict) -> str:
    """One line per case: each library's median (GB/s for copies) and slimtensor's ratio to each peer."""
    rows = [("case", *LIBS, "vs numpy", "vs torch")]
    cuda = [c for c in results["cases"] if c["group"] == "cuda"]
    if cuda and len(cuda) == len(results["cases"]):  # a CUDA-only run (--filter cuda): its table alone
        return cuda_table(cuda)
    for case in results["cases"]:
        if case["group"] == "cuda":
            continue
        if case.get("skipped"):
            rows.append((case["id"], f"skipped: {case['skipped']}", "", "", "", ""))
            continue
        res, ratios = case["results"], case["ratios"]
        cells = [fmt_value(case, res.get(lib, {"skipped": ""})) for lib in LIBS]
        rat = [f"{ratios[p]:.2f}x" if p in ratios else "-" for p in ("numpy", "torch")]
        rows.append((case["id"], *cells, *rat))
    widths = [max(len(r[i]) for r in rows if len(r) > i and not r[1].startswith("skipped")) for i in range(6)]
    lines = []
    for r in rows:
        if r[1].startswith("skipped"):
            lines.append(f"{r[0]:<{widths[0]}}  {r[1]}")
        else:
            lines.append(
                "  ".join(
                    c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=False))
                )
            )
    lines.append("ratios: peer median / slimtensor median (> 1: slimtensor is faster, or smaller for bytes)")
    if cuda:
        lines += ["", cuda_table(cuda)]
    return "\n".join(lines)


def _cuda_rows(cases: list[dict]) -> list[tuple[str, ...]]:
    rows = []
    for case in cases:
        if case.get("skipped"):
            rows.append((case["id"], f"skipped: {case['skipped']}"))
            continue
        res, ratios = case["results"], case["ratios"]
        cells = [fmt_value(case, res.get(lib, {"skipped": ""})) for lib in CUDA_LIBS]
        rat = [f"{ratios[p]:.2f}x" if p in ratios else "-" for p in CUDA_RATIOS]
        rows.append((case["id"], *cells, *rat))
    return rows


def cuda_table(cases: list[dict]) -> str:
    """The CUDA cases: GB/s (or time per call) of slimtensor, torch, cupy and cudaMemcpy, and the ratios."""
    head = ("case", *CUDA_LIBS, *(f"vs {p}" for p in CUDA_RATIOS))
    rows = _cuda_rows(cases)
    full = [r for r in [head, *rows] if len(r) == len(head)]
    widths = [max(len(r[i]) for r in full) for i in range(len(head))]
    lines = []
    for r in [head, *rows]:
        if len(r) != len(head):
            lines.append(f"{r[0]:<{widths[0]}}  {r[1]}")
        else:
            lines.append(
                "  ".join(
                    c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
                )
            )
    lines.append(
        "CUDA: GB/s count bytes read + written; vs cudaMemcpy = slimtensor's share of a contiguous "
        "device-to-device cudaMemcpy of the same bytes"
    )
    return "\n".join(lines)


def cuda_markdown(cases: list[dict]) -> str:
    """The CUDA cases as a markdown table (the columns of cuda_table)."""
    head = ("case", *CUDA_LIBS, *(f"vs {p}" for p in CUDA_RATIOS))
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for r in _cuda_rows(cases):
        if len(r) != len(head):
            lines.append(f"| `{r[0]}` | {r[1]} |" + " |" * (len(head) - 2))
        else:
            lines.append(f"| `{r[0]}` | " + " | ".join(r[1:]) + " |")
    return "\n".join(lines)


def compare(old: dict, new: dict) -> dict:
    """Per case present in both: slimtensor's old and new medians and the change (old / new: > 1 is better)."""
    old_cases = {c["id"]: c for c in old.get("cases", [])}
    out = {}
    for case in new.get("cases", []):
        before = old_cases.get(case["id"])
        if before is None:
            continue
        a, b = before["results"].get("slimtensor", {}), case["results"].get("slimtensor", {})
        if "median" not in a or "median" not in b or not b["median"]:
            continue
        entry = {"old_median": a["median"], "new_median": b["median"], "change": a["median"] / b["median"]}
        for peer in ("numpy", "torch"):
            if peer in before.get("ratios", {}) and peer in case.get("ratios", {}):
                entry[f"old_ratio_{peer}"] = before["ratios"][peer]
                entry[f"new_ratio_{peer}"] = case["ratios"][peer]
        out[case["id"]] = entry
    return out


def compare_table(changes: dict, metric_of: dict) -> str:
    rows = [("case", "old", "new", "change", "vs torch old -> new")]
    for cid, e in changes.items():
        fmt = (lambda v: fmt_bytes(v)) if metric_of.get(cid) == "bytes" else fmt_time
        torch_cell = (
            f"{e['old_ratio_torch']:.2f}x -> {e['new_ratio_torch']:.2f}x" if "new_ratio_torch" in e else "-"
        )
        ch = e["change"]
        arrow = "faster" if ch > 1.0 else "slower"
        if metric_of.get(cid) == "bytes":
            arrow = "smaller" if ch > 1.0 else "larger"
        rows.append(
            (
                cid,
                fmt(e["old_median"]),
                fmt(e["new_median"]),
                f"{ch:.2f}x {arrow}" if not math.isclose(ch, 1.0, rel_tol=1e-9) else "same",
                torch_cell,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = [
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=False)))
        for r in rows
    ]
    lines.append("change: old median / new median of slimtensor (> 1: the new run is faster, or smaller)")
    return "\n".join(lines)


def markdown(results: dict, ids: list[str] | None = None) -> str:
    """A markdown table of the cases (all, or `ids` in that order): each library's median and the ratios."""
    by_id = {c["id"]: c for c in results["cases"]}
    chosen = [by_id[i] for i in ids if i in by_id] if ids is not None else list(results["cases"])
    cuda = [c for c in chosen if c["group"] == "cuda"]
    chosen = [c for c in chosen if c["group"] != "cuda"]
    if cuda and not chosen:  # a CUDA-only run: its table alone
        return cuda_markdown(cuda)
    lines = ["| case | slimtensor | numpy | torch | vs numpy | vs torch |", "|---|---:|---:|---:|---:|---:|"]
    for case in chosen:
        if case.get("skipped"):
            lines.append(f"| `{case['id']}` | skipped: {case['skipped']} | | | | |")
            continue
        cells = [fmt_value(case, case["results"].get(lib, {"skipped": ""})) for lib in LIBS]
        rat = [f"{case['ratios'][p]:.2f}x" if p in case["ratios"] else "-" for p in ("numpy", "torch")]
        lines.append(f"| `{case['id']}` | " + " | ".join(cells + rat) + " |")
    if cuda:
        lines += ["", cuda_markdown(cuda)]
    return "\n".join(lines)

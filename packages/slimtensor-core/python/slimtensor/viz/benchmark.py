"""st.viz.benchmark(results): bandwidth or time against size (log-log, with spread bands) and ratio bars per peer."""

from __future__ import annotations

import json
import math
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LIB_COLOURS = {
    "slimtensor": "#1f77b4",
    "numpy": "#2ca02c",
    "torch": "#ff7f0e",
    "cupy": "#9467bd",
    "cudaMemcpy": "#7f7f7f",
}
LIB_MARKERS = {"slimtensor": "o", "numpy": "s", "torch": "^"}
PEER_COLOURS = {"numpy": "#2ca02c", "torch": "#ff7f0e"}
_LAYOUT_ORDER = ("c2c", "t2c", "c2t", "p2c", "c2p", "bcast", "slice")
# Panel titles in words (the case ids keep the short codes).
LAYOUT_TITLES = {
    "c2c": "contiguous → contiguous",
    "t2c": "transposed source → contiguous",
    "c2t": "contiguous → transposed destination",
    "p2c": "NCHW seen as NHWC → contiguous",
    "c2p": "contiguous NHWC → NCHW buffer",
    "bcast": "broadcast row (N,) → N × N",
    "slice": "strided slice [:, ::2] → contiguous",
}
# The same in a few words, for the bars of the speed-up panel.
LAYOUT_SHORT = {
    "c2c": "contig.",
    "t2c": "transp. src",
    "c2t": "transp. dst",
    "p2c": "NCHW→NHWC",
    "c2p": "NHWC→NCHW",
    "bcast": "broadcast",
    "slice": "slice",
}
LABEL_PT, TICK_PT, TITLE_PT = 9.5, 8.5, 10.5


def _plain_log_labels(ax) -> None:
    """Tick labels like 3, 10, 30 on a log axis (not 3×10⁰)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _load(results: Any) -> dict:
    if isinstance(results, (str, os.PathLike)):
        with open(results) as f:
            return json.load(f)
    if not isinstance(results, dict) or "cases" not in results:
        raise TypeError(
            "benchmark(): expected the results dict of slimtensor.bench.run() or the path of a results "
            f"JSON file, but got {type(results).__name__}"
        )
    return results


def _figure(width: float, height: float):
    from ._mpl import new_figure  # a VizFigure: Jupyter shows it as SVG, no pyplot state

    return new_figure(width, height)


def _size_label(nbytes: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size:
            return f"{nbytes // size} {unit}"
    return f"{nbytes} B"


def _copy_cases(data: dict, dtype: str, threads: int) -> list[dict]:
    return [
        c
        for c in data["cases"]
        if c["group"] == "copy"
        and not c.get("skipped")
        and c["threads"] == threads
        and f"{c['params']['src_dtype']}-{c['params']['dst_dtype']}" == dtype
    ]


def _ratio_bars(ax, labels: list[str], ratios: list[dict], peers: list[str], title: str) -> None:
    """Grouped bars of slimtensor's speed-up against each peer (log scale; 1 = parity)."""
    peers = [p for p in peers if any(math.isfinite(r.get(p, math.nan)) for r in ratios)]  # bars only
    width = 0.8 / max(len(peers), 1)
    for k, peer in enumerate(peers):
        xs = [i + (k - (len(peers) - 1) / 2) * width for i in range(len(labels))]
        vals = [r.get(peer, math.nan) for r in ratios]
        ax.bar(xs, vals, width=width, color=PEER_COLOURS.get(peer, "#7f7f7f"), label=f"vs {peer}")
    ax.axhline(1.0, color="#333333", linewidth=0.8)
    ax.set_yscale("log")
    _plain_log_labels(ax)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=TICK_PT)
    ax.tick_params(axis="y", labelsize=TICK_PT)
    ax.set_ylabel("peer's time / slimtensor's\n(> 1: slimtensor faster)", fontsize=LABEL_PT)
    ax.set_title(title, fontsize=TITLE_PT)
    if peers:
        ax.legend(fontsize=LABEL_PT, loc="best")
    else:
        ax.text(
            0.5,
            0.5,
            "no peer measured in this run: no ratios",
            transform=ax.transAxes,
            ha="center",
            fontsize=LABEL_PT,
        )


def _copies(data: dict, dtype: str, threads: int):
    cases = _copy_cases(data, dtype, threads)
    if not cases:
        available = sorted(
            {
                f"{c['params']['src_dtype']}-{c['params']['dst_dtype']} ({c['threads']} thread(s))"
                for c in data["cases"]
                if c["group"] == "copy" and not c.get("skipped")
            }
        )
        raise ValueError(
            f"benchmark(): no copy results for {dtype} with {threads} thread(s); the results hold: "
            f"{', '.join(available) or 'no copy cases'}"
        )
    layouts = [lay for lay in _LAYOUT_ORDER if any(c["params"]["layout"] == lay for c in cases)]
    cols = min(3, len(layouts))  # at most 9.5 in wide: a notebook output area crops wider pictures
    rows = math.ceil(len(layouts) / cols)
    fig = _figure(3.15 * cols, 2.9 * rows + 3.6)
    grid = fig.add_gridspec(rows + 1, cols, height_ratios=[1] * rows + [1.25])
    for n, layout in enumerate(layouts):
        ax = fig.add_subplot(grid[n // cols, n % cols])
        mine = sorted(
            (c for c in cases if c["params"]["layout"] == layout), key=lambda c: c["params"]["size_bytes"]
        )
        sizes = [c["params"]["size_bytes"] for c in mine]
        for lib in ("slimtensor", "numpy", "torch"):
            pts = [
                (s, c["results"][lib])
                for s, c in zip(sizes, mine, strict=False)
                if "gbps" in c["results"].get(lib, {})
            ]
            if not pts:
                continue
            xs = [p[0] for p in pts]
            ax.plot(
                xs,
                [p[1]["gbps"] for p in pts],
                marker=LIB_MARKERS[lib],
                color=LIB_COLOURS[lib],
                label=lib,
                linewidth=1.4,
                markersize=4,
            )
            ax.fill_between(
                xs,
                [p[1]["gbps_q1"] for p in pts],
                [p[1]["gbps_q3"] for p in pts],
                color=LIB_COLOURS[lib],
                alpha=0.2,
                linewidth=0,
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([_size_label(s) for s in sizes], fontsize=TICK_PT)
        ax.tick_params(axis="y", which="both", labelsize=TICK_PT)
        _plain_log_labels(ax)
        ax.set_title(LAYOUT_TITLES.get(layout, layout), fontsize=TITLE_PT)
        ax.set_xlabel("bytes copied (source size)", fontsize=LABEL_PT)
        ax.set_ylabel("GB/s (read + written)", fontsize=LABEL_PT)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=TICK_PT)  # every panel: only the libraries it has lines for
    ax = fig.add_subplot(grid[rows, :])
    ordered = sorted(
        cases, key=lambda c: (_LAYOUT_ORDER.index(c["params"]["layout"]), c["params"]["size_bytes"])
    )
    peers = [p for p in ("numpy", "torch") if any(p in c["ratios"] for c in ordered)]
    _ratio_bars(
        ax,
        [
            f"{LAYOUT_SHORT.get(c['params']['layout'], c['params']['layout'])} "
            f"{_size_label(c['params']['size_bytes'])}"
            for c in ordered
        ],
        [c["ratios"] for c in ordered],
        peers,
        "slimtensor's speed-up per layout and size",
    )
    thread_words = "1 thread" if threads == 1 else f"{threads} threads"
    fig.suptitle(
        f"copy_ bandwidth, {dtype.replace('-', ' → ')}, {thread_words}: median GB/s with the "
        "interquartile band, per layout and size",
        fontsize=TITLE_PT + 0.5,
    )
    return fig


# Issue 10's targets as slimtensor's share of cudaMemcpy's bandwidth, by what the case copies.
CUDA_TARGETS = (("contiguous", 0.95), ("bfloat16", 0.9), ("odd", 0.5), ("", 0.7))


def cuda_target(title: str) -> float | None:
    """The share of cudaMemcpy's bandwidth issue 10 asks of a CUDA copy case (None: no memcpy target)."""
    if "pinned" in title:
        return None
    for word, share in CUDA_TARGETS:
        if word in title:
            return share
    return None


def _cuda(data: dict):
    cases = [c for c in data["cases"] if c["group"] == "cuda" and not c.get("skipped")]
    # cuda_copies.py's main set is issue 10's table; its other sets (every permutation of a 4-D shape, every
    # dtype, ...) are too many to draw as bars and are counted in the title instead
    others = [c for c in cases if c["params"].get("set", "main") != "main"]
    cases = [c for c in cases if c["params"].get("set", "main") == "main"]
    copies = [c for c in cases if c.get("traffic_bytes")]
    calls = [c for c in cases if not c.get("traffic_bytes")]
    if not copies:
        reasons = [c["skipped"] for c in data["cases"] if c["group"] == "cuda" and c.get("skipped")]
        raise ValueError(
            "benchmark(): the results hold no CUDA copy cases (group 'cuda')"
            + (f"; they were skipped: {reasons[0]}" if reasons else "; run slimtensor bench on a GPU machine")
        )
    fig = _figure(9.5, 8.6)
    grid = fig.add_gridspec(2, 1, height_ratios=[1.15, 1])
    ax = fig.add_subplot(grid[0])
    libs = [
        lib
        for lib in ("slimtensor", "torch", "cupy", "cudaMemcpy")
        if any(lib in c["results"] for c in copies)
    ]
    width = 0.8 / len(libs)
    for k, lib in enumerate(libs):
        xs = [
            i + (k - (len(libs) - 1) / 2) * width
            for i, c in enumerate(copies)
            if "gbps" in c["results"].get(lib, {})
        ]
        ys = [c["results"][lib]["gbps"] for c in copies if "gbps" in c["results"].get(lib, {})]
        if xs:
            ax.bar(xs, ys, width=width, color=LIB_COLOURS[lib], label=lib)
    ax.set_xticks(range(len(copies)))
    ax.set_xticklabels([c["title"] for c in copies], rotation=30, ha="right", fontsize=TICK_PT)
    ax.tick_params(axis="y", labelsize=TICK_PT)
    ax.set_ylabel("GB/s (read + written)", fontsize=LABEL_PT)
    ax.set_title("bandwidth of each copy (median of CUDA-event timings)", fontsize=TITLE_PT)
    tallest = max((r["gbps"] for c in copies for r in c["results"].values() if "gbps" in r), default=1.0)
    ax.set_ylim(0, tallest * 1.2)  # room for the legend above the bars
    ax.legend(fontsize=LABEL_PT, ncol=len(libs), loc="upper center")
    ax.grid(True, axis="y", alpha=0.3)
    ax2 = fig.add_subplot(grid[1])
    shared = [c for c in copies if "cudaMemcpy" in c["ratios"]]
    shares = [c["ratios"]["cudaMemcpy"] for c in shared]  # memcpy's time / slimtensor's = share of its GB/s
    targets = [cuda_target(c["title"]) for c in shared]
    colours = [
        "#2ca02c" if t is not None and v >= t else ("#d62728" if t is not None else LIB_COLOURS["slimtensor"])
        for v, t in zip(shares, targets, strict=True)
    ]
    ax2.bar(range(len(shared)), [v * 100 for v in shares], color=colours, width=0.6)
    for i, t in enumerate(targets):
        if t is not None:
            ax2.plot([i - 0.4, i + 0.4], [t * 100, t * 100], color="#333333", linewidth=1.6)
    ax2.set_xticks(range(len(shared)))
    ax2.set_xticklabels([c["title"] for c in shared], rotation=30, ha="right", fontsize=TICK_PT)
    ax2.tick_params(axis="y", labelsize=TICK_PT)
    ax2.set_ylabel("% of cudaMemcpy's GB/s", fontsize=LABEL_PT)
    ax2.set_title(
        "slimtensor's share of cudaMemcpy (black line: issue 10's target; green met, red missed)",
        fontsize=TITLE_PT,
    )
    ax2.grid(True, axis="y", alpha=0.3)
    words = []
    for c in calls:
        per = ", ".join(
            f"{lib} {c['results'][lib]['median'] * 1e6:.2f} µs"
            for lib in ("slimtensor", "torch", "cupy")
            if "median" in c["results"].get(lib, {})
        )
        words.append(f"{c['title'].split(' per call')[0]}: {per}")
    if others:
        words.append(f"{len(others)} more cases in the results (slimtensor bench --markdown)")
    device = copies[0]["params"].get("device", "cuda")
    fig.suptitle(
        f"CUDA copies on {device}" + ("\n" + "; ".join(words) if words else ""), fontsize=TITLE_PT + 0.5
    )
    return fig


def _calls(data: dict):
    cases = [c for c in data["cases"] if c["group"] == "call" and not c.get("skipped")]
    if not cases:
        raise ValueError("benchmark(): the results hold no per-call cases (group 'call')")
    fig = _figure(9.5, 7.5)
    grid = fig.add_gridspec(2, 1, height_ratios=[1.3, 1])
    ax = fig.add_subplot(grid[0])
    libs = ("slimtensor", "numpy", "torch")
    width = 0.8 / len(libs)
    for k, lib in enumerate(libs):
        xs, ys, lo, hi = [], [], [], []
        for i, c in enumerate(cases):
            r = c["results"].get(lib, {})
            if "median" in r:
                xs.append(i + (k - 1) * width)
                ys.append(r["median"] * 1e9)
                lo.append((r["median"] - r["q1"]) * 1e9)
                hi.append((r["q3"] - r["median"]) * 1e9)
        if not xs:  # a library with no bars gets no legend entry
            continue
        ax.bar(xs, ys, width=width, color=LIB_COLOURS[lib], label=lib, yerr=[lo, hi], capsize=1.5)
    ax.set_yscale("log")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([c["params"]["op"] for c in cases], rotation=45, ha="right", fontsize=TICK_PT)
    ax.tick_params(axis="y", labelsize=TICK_PT)
    ax.set_ylabel("ns per call\n(median, IQR whiskers)", fontsize=LABEL_PT)
    ax.set_title("time of one Python call, per library (lower is faster)", fontsize=TITLE_PT)
    ax.legend(fontsize=LABEL_PT)
    ax.grid(True, axis="y", alpha=0.3)
    ax2 = fig.add_subplot(grid[1])
    peers = [p for p in ("numpy", "torch") if any(p in c["ratios"] for c in cases)]
    _ratio_bars(
        ax2,
        [c["params"]["op"] for c in cases],
        [c["ratios"] for c in cases],
        peers,
        "slimtensor's speed-up per call (> 1: faster)",
    )
    fig.suptitle("Python per-call cost: views, getters and small copies, one thread", fontsize=TITLE_PT + 0.5)
    return fig


def benchmark(
    results: dict[str, Any] | str | os.PathLike[str],
    kind: str = "copy",
    dtype: str = "float32-float32",
    threads: int = 1,
) -> Figure:
    """Plots benchmark results (the dict of slimtensor.bench.run() or the path of a results JSON file).

    kind="copy": one panel per copy layout, GB/s against size (log-log) for each library with its
    interquartile band, then slimtensor's speed-up against each peer per case (bars, log scale).
    `dtype` picks the conversion ("float32-bfloat16", ...) and `threads` the thread count.
    kind="call": per-call time of each Python operation per library, then the speed-up bars.
    kind="cuda": the CUDA cases (slimtensor bench on a GPU): GB/s of slimtensor, torch, cupy and cudaMemcpy
    per copy, then slimtensor's share of cudaMemcpy's bandwidth against issue 10's targets, and the
    per-call cost of a cached allocation.
    Returns a matplotlib Figure (slimtensor.viz's VizFigure: no pyplot state, shown as SVG in Jupyter;
    display it or call fig.savefig(...)).
    """
    data = _load(results)
    if kind == "copy":
        return _copies(data, dtype, threads)
    if kind == "call":
        return _calls(data)
    if kind == "cuda":
        return _cuda(data)
    raise ValueError(f"benchmark(): kind must be 'copy', 'call' or 'cuda' but got {kind!r}")

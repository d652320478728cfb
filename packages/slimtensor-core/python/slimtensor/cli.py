"""The `slimtensor` console command: `slimtensor info` (versions, build, devices, memory; `--ops`: the CPU
op-fallback table) and `slimtensor bench`."""

from __future__ import annotations

import argparse
import os
import platform
import sys


def _info() -> int:
    import numpy

    import slimtensor as st

    from . import _C, _plugins

    lines = [
        f"slimtensor {st.__version__}  (python {platform.python_version()}, numpy {numpy.__version__}, "
        f"{platform.system()} {platform.machine()})",
        f"  package:        {os.path.dirname(st.__file__)}",
        f"  cmake prefix:   {st.cmake_prefix()}  (find_package(slimtensor))",
        f"  plugin ABI:     {_C._PLUGIN_ABI[0]}.{_C._PLUGIN_ABI[1]}",
        f"  threads:        {st.get_num_threads()}",
        f"  device autoload: {'on' if _plugins.autoload_enabled() else 'off (SLIMTENSOR_DEVICE_AUTOLOAD)'}",
        "build:",
        *_build_lines(_C),
        "devices:",
    ]
    for d in st.devices():
        version = f" {d.plugin_version}" if d.plugin_version else ""
        state = f"available, {d.count} device(s)" if d.available else f"UNAVAILABLE: {d.reason}"
        lines.append(f"  {d.name:<10} code {d.code:<3} {state}  [{d.source}{version}]")
    records = _plugins.plugin_records()
    if records:
        lines.append("plugins (entry points 'slimtensor.devices'):")
        lines.extend(f"  {record.describe()}" for record in records)
    lines.append("memory:")
    for name, stats in st.memory_stats().items():
        body = ", ".join(f"{k}={v}" for k, v in stats.items())
        lines.append(f"  {name:<10} {body}")
    print("\n".join(lines))
    return 0


def _build_lines(_C) -> list[str]:
    """How the core was built: compiler, build type, copy kernels, SLEEF, oneDNN, BLAS."""
    info = dict(getattr(_C, "_BUILD_INFO", {}))
    std = {201703: "C++17", 202002: "C++20", 202302: "C++23"}.get(info.get("cxx_standard", 0), "?")
    lines = [
        f"  compiler:       {info.get('compiler', 'unknown')} ({std}), build type {info.get('build_type', '?')}"
        f", assertions {'on' if info.get('assertions') else 'off'}, nanobind {info.get('nanobind', '?')}",
        f"  copy kernels:   {_C._copy_isa()} (chosen at run time from this CPU)",
        f"  SLEEF:          {'bundled in slimtensor/lib' if info.get('sleef_bundled') else 'not bundled'}"
        " (vector math for AOTInductor models)",
        f"  oneDNN:         {'bundled in slimtensor/lib' if info.get('onednn_bundled') else 'not bundled'}"
        " (convolution and LSTM fallbacks; loaded on first use)",
    ]
    try:
        import scipy_openblas32

        lines.append(
            f"  BLAS:           scipy-openblas32 {getattr(scipy_openblas32, '__version__', '?')}"
            " (AOTI op fallbacks)"
        )
    except ImportError:
        lines.append("  BLAS:           scipy-openblas32 not installed (AOTI matrix-product fallbacks fail)")
    return lines


def _version() -> str:
    import slimtensor as st

    return f"slimtensor {st.__version__}"


def main(argv: list[str] | None = None) -> int:
    """The console entry point; a closed stdout (``slimtensor info | head``) ends quietly."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away: point stdout at devnull so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "bench":
        # Everything after 'bench' belongs to the suite's own parser (argparse's REMAINDER would stop at the
        # first option, so `slimtensor bench --quick` is forwarded here before parsing).
        from . import bench as bench_module

        return bench_module.main(argv[1:])
    parser = argparse.ArgumentParser(prog="slimtensor", description=__doc__)
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="versions, build options, registered devices and memory statistics")
    info.add_argument(
        "--ops",
        action="store_true",
        help="the CPU op fallbacks of torch's AOTI headers: implemented or refused at load",
    )
    bench = sub.add_parser("bench", help="run the benchmark suite (see python -m slimtensor.bench --help)")
    bench.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    if ns.command == "info" and ns.ops:
        from .aoti import _ops_table

        print(_ops_table.describe())
        return 0
    if ns.command == "info":
        return _info()
    from . import bench as bench_module

    return bench_module.main(ns.args)


if __name__ == "__main__":
    sys.exit(main())

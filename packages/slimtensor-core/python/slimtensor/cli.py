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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "bench":
        # Everything after 'bench' belongs to the suite's own parser (argparse's REMAINDER would stop at the
        # first option, so `slimtensor bench --quick` is forwarded here before parsing).
        from . import bench as bench_module

        return bench_module.main(argv[1:])
    parser = argparse.ArgumentParser(prog="slimtensor", description=__doc__)
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

"""python -m slimtensor.distributed.run --nproc N script.py [args...]: start one process per rank.

Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (a free port on 127.0.0.1 unless
--master-port is given), and NCCL_NVLS_ENABLE=0 (NVLink multicast stays off: it can take a shared host's
GPUs out of service). When a rank exits with an error, the launcher gives the others --grace seconds to
fail on their own (their collectives time out with a clear error), then stops them, and exits with the
first failing rank's status, naming it.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_environment(rank: int, nproc: int, addr: str, port: int, base: dict[str, str]) -> dict[str, str]:
    env = dict(base)
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(nproc),
        LOCAL_WORLD_SIZE=str(nproc),
        MASTER_ADDR=addr,
        MASTER_PORT=str(port),
        NCCL_NVLS_ENABLE="0",
    )
    return env


def launch(
    nproc: int, command: list[str], *, master_port: int | None = None, grace: float = 30.0, poll: float = 0.05
) -> int:
    """Run ``command`` as ranks 0..nproc-1; return 0 when all succeed, else the first failure's code."""
    if nproc < 1:
        raise ValueError(f"--nproc must be >= 1, got {nproc}")
    port = master_port or _free_port()
    procs = [
        subprocess.Popen(command, env=rank_environment(r, nproc, "127.0.0.1", port, dict(os.environ)))
        for r in range(nproc)
    ]
    failed: tuple[int, int] | None = None
    deadline = None
    try:
        while True:
            codes = [p.poll() for p in procs]
            if failed is None:
                for rank, code in enumerate(codes):
                    if code not in (None, 0):
                        failed = (rank, code)
                        deadline = time.monotonic() + grace
                        print(
                            f"slimtensor.distributed.run: rank {rank} exited with status {code}; the other "
                            f"ranks get {grace:g} s to finish before they are stopped",
                            file=sys.stderr,
                        )
                        break
            if all(c is not None for c in codes):
                break
            if deadline is not None and time.monotonic() > deadline:
                for rank, p in enumerate(procs):
                    if p.poll() is None:
                        print(f"slimtensor.distributed.run: stopping rank {rank}", file=sys.stderr)
                        p.send_signal(signal.SIGTERM)
                for p in procs:
                    try:
                        p.wait(5)
                    except subprocess.TimeoutExpired:
                        p.kill()
                break
            time.sleep(poll)
    except KeyboardInterrupt:
        for p in procs:
            p.send_signal(signal.SIGINT)
        for p in procs:
            p.wait()
        return 130
    if failed is not None:
        return failed[1] if failed[1] > 0 else 128 - failed[1]
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m slimtensor.distributed.run", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--nproc", type=int, required=True, help="number of ranks (one per GPU)")
    parser.add_argument(
        "--master-port", type=int, default=None, help="the store's port (default: a free one)"
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=30.0,
        help="seconds the other ranks get after one fails, before they are stopped",
    )
    parser.add_argument("script", help="the Python script each rank runs")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    command = [sys.executable, ns.script, *ns.args]
    return launch(ns.nproc, command, master_port=ns.master_port, grace=ns.grace)


if __name__ == "__main__":
    sys.exit(main())

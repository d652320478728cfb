"""slimtensor.distributed without a GPU: the stores, the launcher, group names, timeouts, and all_reduce
over the host-memory stand-in backend (tests/distributed/host_backend.py) in real separate processes."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import slimtensor.distributed as dist
from slimtensor.distributed import FileStore, TCPStore, run
from slimtensor.distributed._store import store_from_init_method

HERE = os.path.dirname(os.path.abspath(__file__))
RANK_SCRIPT = os.path.join(HERE, "rank_script.py")


def _launch(
    nproc: int, init_method: str, scenario: str, folder, grace: float = 10.0
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "slimtensor.distributed.run",
            "--nproc",
            str(nproc),
            "--grace",
            str(grace),
            RANK_SCRIPT,
            init_method,
            scenario,
            str(folder),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _results(folder, nproc: int) -> list[dict]:
    return [json.loads((folder / f"rank{r}.json").read_text()) for r in range(nproc)]


@pytest.mark.parametrize("kind", ["tcp", "file"])
def test_all_reduce_over_three_ranks_equals_the_host_computation(tmp_path, kind) -> None:
    init = "env://" if kind == "tcp" else f"file://{tmp_path / 'rdzv'}"
    done = _launch(3, init, "all_reduce", tmp_path)
    assert done.returncode == 0, done.stderr
    results = _results(tmp_path, 3)
    import ml_dtypes

    for dtype_name in ("float32", "bfloat16", "int32"):
        dtype = ml_dtypes.bfloat16 if dtype_name == "bfloat16" else np.dtype(dtype_name)
        parts = [
            (np.arange(12, dtype=np.float64).reshape(3, 4) * (r + 1) - r).astype(dtype).astype(np.float64)
            for r in range(3)
        ]
        expected = {
            "sum": sum(parts),
            "product": parts[0] * parts[1] * parts[2],
            "min": np.minimum.reduce(parts),
            "max": np.maximum.reduce(parts),
            "avg": sum(parts) / 3,
        }
        for op, want in expected.items():
            want = want.astype(dtype).astype(np.float64)  # the result is stored in the tensor's dtype
            for r, res in enumerate(results):
                np.testing.assert_array_equal(
                    np.array(res[f"{dtype_name}/{op}"]), want, err_msg=f"rank {r} {dtype_name} {op}"
                )
    for r, res in enumerate(results):
        assert res["env"] == {
            "RANK": str(r),
            "WORLD_SIZE": "3",
            "LOCAL_RANK": str(r),
            "NCCL_NVLS_ENABLE": "0",
        }
        assert res["default_name"] == "0"
        assert res["subgroup"] == (["1", r, 2] if r < 2 else None)  # torch's next count; rank 2 is outside
        assert res["named"] == "tp_group"
        want = sum((np.arange(12, dtype=np.float32).reshape(3, 4) * (q + 1) - q) for q in range(3))
        np.testing.assert_array_equal(np.array(res["async_sum"], dtype=np.float32), want)


def test_a_dead_rank_fails_the_others_within_their_timeout_and_the_launcher_names_it(tmp_path) -> None:
    t0 = time.monotonic()
    done = _launch(3, "env://", "dead_rank", tmp_path, grace=20.0)
    elapsed = time.monotonic() - t0
    assert done.returncode == 3, (done.returncode, done.stderr)  # the first failure's status: rank 1's
    assert "rank 1 exited with status 3" in done.stderr
    for r in (0, 2):
        res = json.loads((tmp_path / f"rank{r}.json").read_text())
        assert res["error"] and "waited 4 s" in res["error"] and "died" in res["error"], res
        assert 3.5 < res["waited"] < 15, res["waited"]
    assert elapsed < 60


def test_the_launcher_stops_ranks_that_outlive_the_grace_period(tmp_path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        "import os, sys, time\nif os.environ['RANK'] == '0':\n    sys.exit(7)\ntime.sleep(600)\n"
    )
    t0 = time.monotonic()
    code = run.launch(2, [sys.executable, str(script)], grace=1.0)
    assert code == 7
    assert time.monotonic() - t0 < 30


def test_the_launcher_passes_success_and_the_environment(tmp_path) -> None:
    script = tmp_path / "env.py"
    script.write_text(
        "import os, json, sys\n"
        f"open(os.path.join({str(tmp_path)!r}, 'r' + os.environ['RANK']), 'w').write(json.dumps(dict(os.environ)))\n"
    )
    assert run.main(["--nproc", "2", str(script)]) == 0
    envs = [json.loads((tmp_path / f"r{r}").read_text()) for r in range(2)]
    assert envs[0]["MASTER_PORT"] == envs[1]["MASTER_PORT"] and envs[0]["MASTER_ADDR"] == "127.0.0.1"
    assert [e["RANK"] for e in envs] == ["0", "1"] and all(e["NCCL_NVLS_ENABLE"] == "0" for e in envs)
    with pytest.raises(ValueError, match="nproc"):
        run.launch(0, [sys.executable, str(script)])


def _store_worker(init_method: str, rank: int, queue) -> None:
    store = store_from_init_method(init_method, rank, timeout=20)
    try:
        store.set(f"from/{rank}", bytes([rank]) * 3)
        total = store.add("counter", rank + 1)
        store.barrier("b", 3)
        seen = [store.get(f"from/{r}") for r in range(3)]
        queue.put((rank, total, seen))
        store.barrier("end", 3)
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["tcp", "file"])
def test_store_set_get_add_and_barrier_across_processes(tmp_path, kind) -> None:
    if kind == "tcp":
        with __import__("socket").socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        init = f"tcp://127.0.0.1:{port}"
    else:
        init = f"file://{tmp_path}/store"
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_store_worker, args=(init, r, queue)) for r in range(3)]
    for p in procs:
        p.start()
    got = sorted(queue.get(timeout=60) for _ in range(3))
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert [g[2] for g in got] == [[b"\x00" * 3, b"\x01" * 3, b"\x02" * 3]] * 3
    assert sorted(g[1] for g in got)[-1] == 6  # 1 + 2 + 3, whatever the order


@pytest.mark.parametrize(
    "make", [lambda p: FileStore(str(p), 0.3), lambda p: TCPStore("127.0.0.1", 0, True, 0.3)]
)
def test_a_missing_key_times_out_naming_it(tmp_path, make) -> None:
    store = make(tmp_path)
    try:
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match=r"waited 0.3 s for key 'nobody/here'.*died"):
            store.get("nobody/here")
        assert time.monotonic() - t0 < 5
        with pytest.raises(ValueError, match="store key"):
            store.set("../escape", b"x")
    finally:
        store.close()


def test_unreachable_tcp_store_is_a_clear_timeout() -> None:
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens here once the socket closes
    with pytest.raises(TimeoutError, match="is rank 0 running"):
        TCPStore("127.0.0.1", port, is_server=False, timeout=0.5)


def test_bad_arguments_are_clear_errors(monkeypatch) -> None:
    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    sys.path.insert(0, HERE)
    import host_backend

    host_backend.register()
    with pytest.raises(ValueError, match="no collective backend 'nope'"):
        dist.init_process_group("nope", rank=0, world_size=1)
    with pytest.raises(ValueError, match=r"\$RANK is not set"):
        dist.init_process_group("host")
    with pytest.raises(ValueError, match="must be in"):
        dist.init_process_group("host", rank=2, world_size=2, init_method="file:///tmp/x")
    with pytest.raises(ValueError, match="MASTER_ADDR"):
        dist.init_process_group("host", rank=0, world_size=1)
    with pytest.raises(ValueError, match="expected 'tcp://HOST:PORT'"):
        dist.init_process_group("host", rank=0, world_size=1, init_method="udp://x:1")
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.all_reduce(np.zeros(2), "sum")
    assert not dist.is_initialized()


def test_a_world_of_one_in_process(tmp_path) -> None:
    sys.path.insert(0, HERE)
    import host_backend

    host_backend.register()
    group = dist.init_process_group("host", rank=0, world_size=1, init_method=f"file://{tmp_path}", timeout=5)
    try:
        assert (group.name, dist.get_rank(), dist.get_world_size(), dist.is_initialized()) == (
            "0",
            0,
            1,
            True,
        )
        with pytest.raises(RuntimeError, match="already"):
            dist.init_process_group("host", rank=0, world_size=1, init_method=f"file://{tmp_path}")
        a = np.arange(4, dtype=np.float32)
        dist.all_reduce(a, "avg")
        np.testing.assert_array_equal(a, np.arange(4, dtype=np.float32))
        with pytest.raises(ValueError, match="op must be one of"):
            dist.all_reduce(a, "mean")
        with pytest.raises(KeyError, match=r"no process group named 'x'.*known: '0'"):
            dist.all_reduce(a, "sum", group="x")
        assert dist.new_group([0]).name == "1" and dist.new_group([0], group_name="tp").name == "tp"
        with pytest.raises(ValueError, match="exists already"):
            dist.new_group([0], group_name="tp")
        with pytest.raises(ValueError, match="subset"):
            dist.new_group([3])
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


def test_a_backend_with_register_group_registers_its_own_table(tmp_path) -> None:
    """Note [Collective backends]: a backend that has register_group(name) is asked to register itself (the
    NCCL backend registers its C table); the core does not wrap it."""
    from slimtensor import _C

    calls = []

    class Native:
        def __init__(self, store, group_name, rank, size, timeout):
            pass

        def register_group(self, name):
            calls.append(name)
            _C._register_collective_group(name, self)  # what a C backend does through its own library

        def all_reduce(self, tensor, op):
            pass

        def wait(self, tensor):
            pass

        def close(self):
            calls.append("closed")

    dist.register_backend("native-test", Native)
    dist.init_process_group("native-test", rank=0, world_size=1, init_method=f"file://{tmp_path}")
    try:
        assert calls == ["0"] and _C._collective_counts() == (1, 0)
    finally:
        dist.destroy_process_group()
    assert calls == ["0", "closed"] and _C._collective_counts() == (0, 0)


def test_an_unknown_backend_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"no collective backend 'nope' is registered here \(registered: "):
        dist.init_process_group("nope", rank=0, world_size=1, init_method="file:///nonexistent")

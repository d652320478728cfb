"""The op-fallback table (slimtensor.aoti._ops_table), CPU and CUDA: generated from and checked against torch's
headers, and every op slimtensor declares implemented with torch's exact prototype and exported (CPU ops by
libslimtensor, CUDA ops by slimtensor-cuda's libslimtensor_cuda_aoti when the plugin is installed)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _table():
    from slimtensor.aoti import _ops_table

    return _ops_table


def test_generated_table_matches_the_installed_torch_headers():
    t = _table()
    d = t.torch_aoti_dir()
    if d is None:
        pytest.skip("torch's AOTI headers are not installed (pip install torch==2.13.0 to check the table)")
    import importlib.metadata

    version = importlib.metadata.version("torch").split("+")[0]
    if version != t.torch_version():
        pytest.skip(f"the table is torch {t.torch_version()}'s; torch {version} is installed")
    with open(t._GENERATED, encoding="utf-8") as f:
        committed = f.read()
    assert committed == t.generated_text(d, version), (
        "slimtensor/aoti/_torch_ops.json is stale: run "
        "'python -m slimtensor.aoti._ops_table --generate' and commit it"
    )


def test_table_has_every_op_of_the_torch_headers():
    t = _table()
    ops = t.table()
    per_header = {h: sum(o.header == h for o in ops) for h in t.TORCH_HEADERS}
    # torch 2.13.0
    assert per_header == {"c/shim_cpu.h": 16, "generated/c_shim_cpu.h": 153, "generated/c_shim_cuda.h": 167}
    assert {o.device for o in ops} == {"cpu", "cuda"}
    assert all(o.name.startswith(f"aoti_torch_{o.device}_") for o in ops)
    assert len({o.name for o in ops}) == len(ops) == len(t.stored()["ops"])
    by_name = {o.name: o for o in ops}
    assert by_name["aoti_torch_cpu_mkldnn_rnn_layer"].condition == "AT_MKLDNN_ENABLED()"
    assert by_name["aoti_torch_cpu__mkl_linear"].condition == "AT_MKLDNN_ENABLED() && AT_MKL_ENABLED()"
    assert by_name["aoti_torch_cpu_cumsum"].header == "generated/c_shim_cpu.h"
    assert by_name["aoti_torch_cuda_mm_out"].header == "generated/c_shim_cuda.h"


def test_implemented_ops_have_torchs_exact_prototypes():
    """Against the table's stored prototypes (always) and torch's own headers (when installed)."""
    t = _table()
    ours = t.implemented_prototypes()
    stored = {o.name: o.prototype for o in t.table()}
    assert len(ours) >= 6
    unknown = sorted(n for n in ours if n not in stored)
    assert not unknown, (
        f"slimtensor/c/shim_cpu.h declares CPU ops torch {t.torch_version()} does not: {unknown}"
    )
    wrong = {n: (t.prototype_text(p), stored[n]) for n, p in ours.items() if t.prototype_text(p) != stored[n]}
    assert not wrong, wrong
    d = t.torch_aoti_dir()
    if d is None:
        pytest.skip("torch's AOTI headers are not installed: checked against the stored table only")
    theirs = {name: proto for name, _, _, proto in t.parse_torch_headers(d)}
    wrong = {
        n: (t.prototype_text(p), theirs.get(n))
        for n, p in ours.items()
        if t.prototype_text(p) != theirs.get(n)
    }
    assert not wrong, wrong


def test_every_implemented_op_is_exported_and_every_refused_one_is_not():
    import os

    from slimtensor.aoti import _elf, _lib

    t = _table()
    exported = {"cpu": _elf.defined_symbols(_lib.library_path())}
    plugin = t.cuda_plugin_dir()
    if plugin is not None:
        exported["cuda"] = _elf.defined_symbols(os.path.join(plugin, t.CUDA_OPS_LIBRARY))
    for o in t.table():
        if o.device in exported:
            assert (o.name in exported[o.device]) == (o.state == t.IMPLEMENTED), o
        else:
            assert o.state == t.REFUSED, o


CUDA_OPS = (
    "aoti_torch_cuda_mm_out",
    "aoti_torch_cuda_addmm_out",
    "aoti_torch_cuda_bmm_out",
    "aoti_torch_cuda_baddbmm_out",
    "aoti_torch_cuda_convolution",
    "aoti_torch_cuda__scaled_dot_product_efficient_attention",
    "aoti_torch_cuda__scaled_dot_product_flash_attention",
    "aoti_torch_cuda__scaled_dot_product_cudnn_attention",
)


def test_cuda_ops_are_implemented_where_the_plugin_is_installed():
    t = _table()
    if t.cuda_plugin_dir() is None:
        pytest.skip("slimtensor-cuda is not installed: every CUDA op is refused at load")
    by_name = {o.name: o for o in t.table()}
    assert {n for n, o in by_name.items() if o.device == "cuda" and o.state == t.IMPLEMENTED} == set(CUDA_OPS)


def test_info_ops_prints_the_counts_and_every_op():
    t = _table()
    r = subprocess.run(
        [sys.executable, "-m", "slimtensor.cli", "info", "--ops"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    ops = t.table()
    cpu = [o for o in ops if o.device == "cpu"]
    n_impl = sum(o.state == t.IMPLEMENTED for o in cpu)
    assert lines[0].startswith("CPU op fallbacks")
    assert f": {len(cpu)} (c/shim_cpu.h 16, generated/c_shim_cpu.h 153); {n_impl} implemented" in lines[0]
    assert f"{len(cpu) - n_impl} refused at load" in lines[0]
    cuda = [o for o in ops if o.device == "cuda"]
    n_cuda = sum(o.state == t.IMPLEMENTED for o in cuda)
    assert lines[1].startswith(
        f"CUDA op fallbacks of torch {t.torch_version()}: {len(cuda)} (generated/c_shim_cuda.h"
    )
    assert (
        f"{n_cuda} implemented by slimtensor-cuda" in lines[1]
        and f"{len(cuda) - n_cuda} refused at load" in lines[1]
    )
    assert len(lines) == 2 + len(ops)
    assert any(line.split()[:2] == ["implemented", "aoti_torch_cpu_cumsum"] for line in lines[2:])
    states = {line.split()[1]: line.split()[0] for line in lines[2:]}
    # the fallbacks of the architecture zoo's quantised and spectral models, among the rest
    for op in ("cumsum", "_weight_int8pack_mm", "_weight_int4pack_mm_cpu_tensor", "_fft_r2c", "_fft_c2c"):
        assert states[f"aoti_torch_cpu_{op}"] == "implemented", op
    assert any(
        "aoti_torch_cpu_mkldnn_rnn_layer" in line and "[#if AT_MKLDNN_ENABLED()]" in line
        for line in lines[1:]
    )

"""The CUDA cases of slimtensor bench (Note [CUDA bench cases]): skipped with the reason without a GPU, and
cuda_copies.py's rows turned into schema cases, tabled and plotted (rows as that script writes them)."""

from __future__ import annotations

import pytest
import slimtensor as st
from slimtensor import bench
from slimtensor.bench import _report, cases_cuda
from slimtensor.bench._case import to_json

# Rows in the shape bench/cuda_copies.py writes (numbers of the first H200 run, /work/gpu4/cuda_copies.json).
ROWS = [
    {"case": "contiguous D2D 1 GiB f32", "bytes": 536870912, "slimtensor_ms": 0.1341, "torch_ms": 0.1356,
     "cupy_ms": 0.1397, "memcpy_GBps": 3942.0},
    {"case": "2-D transpose 8192x8192 f32", "bytes": 536870912, "slimtensor_ms": 0.2578, "torch_ms": 0.4822,
     "cupy_ms": 0.4803, "memcpy_GBps": 3965.3},
    {"case": "float32->bfloat16 64M", "bytes": 402653184, "slimtensor_ms": 0.1664, "torch_ms": 0.1023,
     "memcpy_GBps": 3921.1},
    {"case": "pinned H2D 256 MiB", "bytes": 268435456, "slimtensor_ms": 4.856, "torch_ms": 4.861},
    {"case": "empty(1024) per call (us)", "slimtensor_us": 1.33, "torch_us": 4.06, "cupy_us": 3.71},
]  # fmt: skip


def _cases():
    return [to_json(*cases_cuda.row_case(row, 25, "NVIDIA H200")) for row in ROWS]


def _results():
    out = bench.run(quick=True, filter=["call/shape"], torch=False, progress=False)
    out["cases"] += _cases()
    return out


def test_rows_become_schema_cases_with_memcpy_as_a_peer():
    results = _results()
    bench.validate(results)
    by_id = {c["id"]: c for c in results["cases"]}
    c = by_id["cuda/contiguous_d2d_1_gib_f32"]
    assert c["group"] == "cuda" and c["traffic_bytes"] == 536870912
    assert c["results"]["slimtensor"]["median"] == pytest.approx(0.1341e-3)
    assert c["results"]["slimtensor"]["gbps"] == pytest.approx(536870912 / 0.1341e-3 / 1e9)
    assert c["results"]["cudaMemcpy"]["gbps"] == pytest.approx(3942.0)
    # memcpy's time / slimtensor's: slimtensor's share of cudaMemcpy's bandwidth
    assert c["ratios"]["cudaMemcpy"] == pytest.approx(c["results"]["slimtensor"]["gbps"] / 3942.0)
    assert "median of 25" in c["params"]["statistic"]
    conv = by_id["cuda/float32_to_bfloat16_64m"]
    assert "skipped" in conv["results"]["cupy"] and "cupy" not in conv["ratios"]
    alloc = by_id["cuda/empty_1024_per_call_us"]
    assert alloc["traffic_bytes"] is None and alloc["results"]["torch"]["median"] == pytest.approx(4.06e-6)


def test_the_table_has_cuda_columns():
    text = _report.table(_results())
    cuda = text[text.index("cudaMemcpy") - 200 :]
    assert "vs cudaMemcpy" in text and "cuda/2_d_transpose_8192x8192_f32" in cuda
    assert "4003.5 GB/s" in text  # slimtensor's contiguous copy: 2 x 256 MiB read + written in 0.1341 ms
    md = _report.markdown(_results())
    assert "| case | slimtensor | torch | cupy | cudaMemcpy |" in md


def test_without_a_gpu_the_cuda_cases_say_why():
    reason = cases_cuda.unavailable_reason(bench.Libs.load(with_torch=False))
    cuda = next((d for d in st.devices() if d.name == "cuda"), None)
    if cuda is not None and cuda.available:
        pytest.skip("a CUDA device is usable here: the cases run (tests/cuda covers them on the GPU)")
    assert reason
    out = bench.run(filter=["cuda"], torch=False, progress=False)
    # the "cuda" filter also matches the CUDA AOTI model case (aoti/cuda_model), which says why on its own
    assert [(c["id"], c["skipped"]) for c in out["cases"] if c["id"].startswith("cuda/")] == [
        ("cuda/copies", reason)
    ]
    assert f"cuda/copies  skipped: {reason}" in _report.table(out)


def test_case_ids_are_words():
    assert cases_cuda.case_id("NCHW->NHWC 64x256x64x64 f32") == "cuda/nchw_to_nhwc_64x256x64x64_f32"
    assert cases_cuda.case_id("(2,0,1) of 512x512x256 f32") == "cuda/2_0_1_of_512x512x256_f32"


def test_the_cuda_picture_holds_each_copy_and_the_targets():
    pytest.importorskip("matplotlib")
    from slimtensor.viz.benchmark import benchmark, cuda_target

    fig = benchmark(_results(), kind="cuda")
    bars, shares = fig.axes[0], fig.axes[1]
    assert [t.get_text() for t in bars.get_xticklabels()] == [r["case"] for r in ROWS[:4]]
    assert {t.get_text() for t in bars.get_legend().get_texts()} == {
        "slimtensor",
        "torch",
        "cupy",
        "cudaMemcpy",
    }
    heights = [round(p.get_height()) for p in shares.patches]  # the copies measured against cudaMemcpy
    assert heights == [102, 53, 62]  # % of cudaMemcpy's GB/s: 4003/3942, 2083/3965, 2420/3921
    assert [p.get_facecolor()[:3] for p in shares.patches][2] != [
        p.get_facecolor()[:3] for p in shares.patches
    ][0]
    assert cuda_target("contiguous D2D 1 GiB f32") == 0.95 and cuda_target("pinned H2D 256 MiB") is None
    assert "empty(1024): slimtensor 1.33 µs" in fig.get_suptitle()
    with pytest.raises(ValueError, match="no CUDA copy cases"):
        benchmark(bench.run(filter=["call/shape"], torch=False, progress=False), kind="cuda")


def test_issue_10_targets_read_the_cuda_cases():
    from slimtensor.bench import _targets

    verdicts = {v.target: v for v in _targets.check(_results())}
    contiguous = verdicts["CUDA: contiguous device-to-device >= 95% of cudaMemcpy"]
    assert contiguous.met is True and "1 GiB 4004 GB/s = 102%" in contiguous.result
    assert verdicts["CUDA: the four permuted copies >= 70% of cudaMemcpy"].met is None  # 3 of 4 rows absent
    empty = verdicts[
        "CUDA: st.empty(1024, device='cuda') from the cache <= 1 us per call and >= 2.5x faster than cupy"
    ]
    assert empty.met is False and "1.33 us (cupy 3.71 us, 2.79x)" in empty.result

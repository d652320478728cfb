"""Compiled models that call the CPU op fallbacks (tests/aoti/op_model_zoo.py) run on slimtensor and match
eager (bit for bit, except the fallbacks in TOLERANCES); each model's .so is checked to call the fallback it is
meant to reach."""

from __future__ import annotations

import os
import zipfile

import numpy as np
import pytest

from ._helpers import TORCH_VERSION, compile_models, have_torch, load_reference

# model -> the fallbacks its compiled .so must call (read from its undefined symbols)
FALLBACKS = {
    "op_cumsum": {"aoti_torch_cpu_cumsum"},
    "op_cumprod": {"aoti_torch_cpu_cumprod"},
    "op_sort": {"aoti_torch_cpu_sort_stable"},
    "op_sort_stable": {"aoti_torch_cpu_sort_stable"},
    "op_topk": {"aoti_torch_cpu_topk"},
    "op_search": {"aoti_torch_cpu_searchsorted_Tensor", "aoti_torch_cpu_bucketize_Tensor"},
    "op_nonzero": {"aoti_torch_cpu_nonzero"},
    "op_repeat_interleave": {"aoti_torch_cpu_repeat_interleave_Tensor"},
    "op_histc": {"aoti_torch_cpu_histc"},
    "op_masked_scatter": {"aoti_torch_cpu_masked_scatter"},
    "op_scatter": {"aoti_torch_cpu_scatter_src_out", "aoti_torch_cpu_scatter_value_out"},
    "op_scatter_reduce": {"aoti_torch_cpu_scatter_reduce_two_out"},
    "op_index_reduce": {"aoti_torch_cpu_index_reduce"},
    "op_embedding_bag": {"aoti_torch_cpu__embedding_bag"},  # nn.EmbeddingBag (its weight a parameter)
    "op_index_put": {"aoti_torch_index_put_out"},  # torch's c/shim.h fallback (IndexPutFallback)
    # block "zoo": FFTs and the weight-only quantised matmuls
    "op_fft": {"aoti_torch_cpu__fft_r2c", "aoti_torch_cpu__fft_c2c", "aoti_torch_cpu_view_as_real"},
    "op_fft_strided": {
        "aoti_torch_cpu__fft_r2c",
        "aoti_torch_cpu__fft_c2c",
        "aoti_torch_cpu_view_as_real",
        "aoti_torch_cpu_mul_Tensor",
    },
    "op_complex_rotary": {
        "aoti_torch_cpu_view_as_complex",
        "aoti_torch_cpu_mul_Tensor",
        "aoti_torch_cpu_view_as_real",
    },
    "op_int8pack_mm": {"aoti_torch_cpu__weight_int8pack_mm"},
    "op_int8pack_mm_bf16": {"aoti_torch_cpu__weight_int8pack_mm"},
    "op_int4pack_mm": {"aoti_torch_cpu__weight_int4pack_mm_cpu_tensor"},
    "op_int4pack_mm_bf16": {"aoti_torch_cpu__weight_int4pack_mm_cpu_tensor"},
}
# (rtol, atol) of the models whose fallbacks sum in another order than torch's kernels (pocketfft against MKL's
# FFT; float32 GEMMs against torch's int8/int4 loops): equal to rounding, not bit for bit
TOLERANCES = {
    "op_fft": (1e-5, 1e-5),
    "op_fft_strided": (1e-5, 1e-5),
    "op_complex_rotary": (1e-6, 1e-6),
    "op_int8pack_mm": (1e-5, 1e-5),
    "op_int8pack_mm_bf16": (1.6e-2, 1.6e-2),
    "op_int4pack_mm": (1e-5, 1e-4),
    "op_int4pack_mm_bf16": (1.6e-2, 5e-2),
}


@pytest.fixture(scope="module")
def op_model_dir():
    if not have_torch():
        pytest.skip(
            f"needs torch=={TORCH_VERSION} (pip install -r requirements/test.txt) to compile the op models"
        )
    return compile_models(sorted(FALLBACKS), zoo="op_model_zoo")


def _so_undefined(pt2, tmp_path):
    from slimtensor.aoti import _elf

    with zipfile.ZipFile(pt2) as z:
        so = next(n for n in z.namelist() if n.endswith(".wrapper.so"))
        path = z.extract(so, tmp_path)
    return _elf.undefined_symbols(path)


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_model_calls_its_fallback(op_model_dir, name, tmp_path):
    undefined = _so_undefined(os.path.join(op_model_dir, f"{name}.pt2"), tmp_path)
    calls = {n for n in undefined if n.startswith("aoti_torch_cpu_") or n in FALLBACKS[name]}
    assert FALLBACKS[name] <= calls, f"{name}: the .so calls {sorted(calls)}, not {sorted(FALLBACKS[name])}"


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_model_matches_eager_exactly(op_model_dir, name):
    from slimtensor import aoti

    before = aoti.live_handles()
    with aoti.load(os.path.join(op_model_dir, f"{name}.pt2")) as model:
        for inputs, expected in load_reference(op_model_dir, name):
            outs = model.run_numpy(*inputs)
            assert len(outs) == len(expected)
            for i, (g, e) in enumerate(zip(outs, expected, strict=True)):
                g = np.asarray(g)
                assert g.dtype == e.dtype and g.shape == e.shape, (
                    name,
                    i,
                    g.dtype,
                    e.dtype,
                    g.shape,
                    e.shape,
                )
                if name in TOLERANCES:
                    rtol, atol = TOLERANCES[name]
                    np.testing.assert_allclose(
                        g.astype(np.float64),
                        e.astype(np.float64),
                        rtol=rtol,
                        atol=atol,
                        err_msg=f"{name} output {i}",
                    )
                else:
                    np.testing.assert_array_equal(g, e, err_msg=f"{name} output {i}")
    assert aoti.live_handles() == before

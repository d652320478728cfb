"""The architecture zoo (tests/aoti/arch_zoo.py): real model families at tiny sizes, compiled once (cached) as a
user compiles them, run on slimtensor and compared with torch eager.

Each model's compiled .so is read first: every aoti_torch_* function it calls must be one slimtensor implements
(else loading would refuse it), and the CPU fallbacks listed below must be among them, so a model that stops
reaching its fallback (a new torch lowering the op itself) fails loudly instead of silently testing less.

Note [Reduced and whole zoo]
Compiling is the zoo's cost (tens of seconds per model on 2 cores), so `make test` compiles and runs the
reduced zoo (REDUCED: one model of each kind of fallback the zoo reaches) and `make test-zoo` the whole zoo
(SLIMTENSOR_ZOO=all); the other models are then skipped, saying how to run them. The whole zoo's compile
times are in docs/aoti.md.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass

import numpy as np
import pytest

from ._helpers import TORCH_VERSION, compile_models, have_torch, load_reference


@dataclass(frozen=True)
class Zoo:
    fallbacks: frozenset[str]  # aoti_torch_cpu_* (or c/shim.h fallbacks) the .so must call
    rtol: float = 1e-4  # against eager: inductor's fused kernels round differently from eager's
    atol: float = 1e-4


def _z(*fallbacks: str, rtol: float = 1e-4, atol: float = 1e-4) -> Zoo:
    return Zoo(frozenset(f"aoti_torch_cpu_{f}" for f in fallbacks), rtol, atol)


# read from the compiled .so files (torch 2.13, transformers 5.24): what each model reaches
SDPA = "_scaled_dot_product_flash_attention_for_cpu"
ZOO: dict[str, Zoo] = {
    "gpt2_mask": _z(SDPA, "addmm_out", "mm_out"),
    "gpt2_ids": _z(SDPA, "addmm_out", "mm_out", "cumsum"),
    "llama_mask": _z(SDPA, "mm_out"),
    "llama_ids": _z(SDPA, "mm_out", "cumsum"),
    "llama_bf16": _z(SDPA, "mm_out", rtol=3e-2, atol=3e-2),
    "qwen2_mask": _z(SDPA, "addmm_out", "mm_out"),
    "qwen2_ids": _z(SDPA, "addmm_out", "mm_out", "cumsum"),
    "mistral_mask": _z(SDPA, "mm_out"),
    "mistral_ids": _z(SDPA, "mm_out", "cumsum"),
    "bert": _z(SDPA, "addmm_out"),
    "roberta": _z(SDPA, "addmm_out", "cumsum"),  # position ids from the padding mask
    "t5_encoder": _z(SDPA, "mm_out"),  # the relative position bias is the attention mask
    "vit": _z(SDPA, "addmm_out", "convolution"),
    "whisper_encoder": _z(SDPA, "addmm_out", "mm_out", "convolution"),
    "bert_dynamic": _z(SDPA, "addmm_out"),
    "mobile_block": _z("addmm_out", "convolution"),
    "conv_decoder": _z("convolution"),  # transposed convolutions; inductor lowers the upsampling itself
    "moe_routing": _z("addmm_out", "sort_stable", "topk"),
}
# Note [Reduced and whole zoo]: a decoder without a mask (cumsum) and one with a mask (grouped-query attention),
# a CNN (depthwise, grouped and strided convolution with squeeze-excite), the router (topk and sorts) and the
# dynamic batch: every fallback the whole zoo reaches, in 5 of its 18 models.
REDUCED = ["gpt2_ids", "llama_mask", "mobile_block", "moe_routing", "bert_dynamic"]
WHOLE = os.environ.get("SLIMTENSOR_ZOO") == "all"
NAMES = sorted(ZOO) if WHOLE else REDUCED


@pytest.fixture(scope="module")
def zoo_dir():
    if not have_torch():
        pytest.skip(f"needs torch=={TORCH_VERSION} (pip install -r requirements/test.txt) to compile the zoo")
    pytest.importorskip(
        "transformers", reason="the zoo's models come from transformers (requirements/test.txt)"
    )
    return compile_models(NAMES, zoo="arch_zoo")


def _params():
    return [
        pytest.param(
            n,
            marks=()
            if n in NAMES
            else pytest.mark.skip(reason="in the whole zoo only: make test-zoo (SLIMTENSOR_ZOO=all)"),
        )
        for n in sorted(ZOO)
    ]


def _undefined(pt2, tmp_path):
    from slimtensor.aoti import _elf

    with zipfile.ZipFile(pt2) as z:
        so = next(n for n in z.namelist() if n.endswith(".wrapper.so"))
        return _elf.undefined_symbols(z.extract(so, tmp_path))


@pytest.mark.parametrize("name", _params())
def test_zoo_model_calls_only_implemented_shims(zoo_dir, name, tmp_path):
    from slimtensor.aoti import _lib

    undefined = {
        s for s in _undefined(os.path.join(zoo_dir, f"{name}.pt2"), tmp_path) if s.startswith("aoti_")
    }
    missing = sorted(s for s in undefined if s not in _lib.prototypes())
    assert not missing, f"{name} calls shims slimtensor lacks: {missing}"
    fallbacks = {s for s in undefined if s.startswith("aoti_torch_cpu_")}
    assert ZOO[name].fallbacks <= fallbacks, f"{name}: its .so calls {sorted(fallbacks)}"


@pytest.mark.parametrize("name", _params())
def test_zoo_model_matches_eager(zoo_dir, name):
    import slimtensor as st
    from slimtensor import aoti

    z = ZOO[name]
    before_h, before = aoti.live_handles(), st.memory_stats("cpu")
    with aoti.load(os.path.join(zoo_dir, f"{name}.pt2")) as model:
        sets = load_reference(zoo_dir, name)
        for s, (inputs, expected) in enumerate(sets):
            outs = model.run_numpy(*inputs)
            assert len(outs) == len(expected), name
            for i, (g, e) in enumerate(zip(outs, expected, strict=True)):
                g = np.asarray(g)
                assert g.dtype == e.dtype and g.shape == e.shape, (
                    name,
                    s,
                    i,
                    g.dtype,
                    e.dtype,
                    g.shape,
                    e.shape,
                )
                np.testing.assert_allclose(
                    g.astype(np.float64),
                    e.astype(np.float64),
                    rtol=z.rtol,
                    atol=z.atol,
                    err_msg=f"{name} input set {s} output {i}",
                )
    after = st.memory_stats("cpu")
    assert aoti.live_handles() == before_h
    for key in ("live_storages", "live_tensors", "live_bytes"):
        assert after[key] == before[key], (key, before, after)


def test_dynamic_zoo_model_ran_at_two_batch_sizes(zoo_dir):
    sets = load_reference(zoo_dir, "bert_dynamic")
    assert [s[0][0].shape[0] for s in sets] == [2, 5]

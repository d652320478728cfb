"""CUDA AOTInductor models on slimtensor: each compiled model vs torch eager on the GPU (its outputs were
recorded when it was compiled), with the device memory and the handles back to baseline after each."""

from __future__ import annotations

import gc

import numpy as np
import pytest

pytestmark = pytest.mark.needs_cuda

# (rtol, atol) vs torch eager on the same GPU: Triton kernels may fuse and reorder float32 math differently
# from eager's kernels (and use TF32 nowhere unless the model asks), so a few ulps; bfloat16 keeps 8 bits.
TOL = {"float32": (1e-4, 1e-5), "bfloat16": (2e-2, 2e-2)}


def _counters():
    import slimtensor as st
    import slimtensor_cuda as stc
    from slimtensor import aoti

    gc.collect()
    stc.synchronize()
    s = st.memory_stats("cuda")
    return {
        "live_storages": s.get("live_storages", 0),
        "live_bytes": s.get("live_bytes", 0),
        "handles": aoti.live_handles(),
        "allocated": stc.memory_stats().get("allocated_bytes", 0),
    }


def _to_cuda(a):
    import slimtensor as st

    return st.asarray(a).to("cuda")


def _check(model_name, outs, expected):
    outs = outs if isinstance(outs, tuple) else (outs,)
    assert len(outs) == len(expected)
    for i, (o, e) in enumerate(zip(outs, expected)):
        assert o.device.type == "cuda", f"{model_name} output {i} is on {o.device}"
        got = o.cpu().numpy()
        rtol, atol = TOL["bfloat16" if e.dtype.name == "bfloat16" else "float32"]
        np.testing.assert_allclose(
            got.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, err_msg=f"{model_name} output {i}"
        )


OP_FREE = ["pointwise", "view_permute", "two_outputs", "softmax", "alias_input", "const_alias"]


@pytest.mark.parametrize("name", OP_FREE)
def test_model_matches_eager(cuda_models, name):
    from slimtensor import aoti

    m = cuda_models(name)[name]
    before = _counters()
    with aoti.load(m.path, device="cuda") as model:
        assert model.device == "cuda:0"
        outs = model(*[_to_cuda(a) for a in m.inputs])
        _check(name, outs, m.outputs)
        del outs
    assert _counters() == before


def test_torch_inputs_without_a_copy(cuda_models, cuda_torch):
    """torch CUDA tensors go in through __dlpack__, sharing their memory (no copy)."""
    import slimtensor as st
    from slimtensor import aoti

    torch = cuda_torch
    m = cuda_models("pointwise")["pointwise"]
    x, y = (torch.from_numpy(a).cuda() for a in m.inputs)
    assert st.from_dlpack(x).data_ptr() == x.data_ptr()
    with aoti.load(m.path, device="cuda") as model:
        out = model(x, y)
        _check("pointwise", out, m.outputs)
        del out


def test_weights_are_visible_in_memory_stats(cuda_models):
    """The weights the model cudaMalloc's at creation are slimtensor storages while it is loaded."""
    import slimtensor as st
    from slimtensor import aoti
    from slimtensor.aoti import _device_support

    m = cuda_models("const_alias")["const_alias"]  # op-free, with a weight
    sup = _device_support.device_support("cuda")
    before = st.memory_stats("cuda").get("live_bytes", 0)
    with aoti.load(m.path, device="cuda") as model:
        mem = sup.model_memory()
        consts = sum(c["nbytes"] for c in model.constants)
        assert mem["bytes"] >= consts
        assert st.memory_stats("cuda").get("live_bytes", 0) - before >= mem["bytes"]
    assert sup.model_memory() == {"bytes": 0, "blocks": 0}


def test_runs_on_a_non_default_stream(cuda_models):
    """The stream guard makes the model's stream current in the plugin: what the run allocates (its
    outputs) is allocated for that stream, and nothing for the default stream. A guard that did nothing
    would leave the outputs on the default stream."""
    import slimtensor_cuda as stc
    from slimtensor import aoti

    m = cuda_models("pointwise")["pointwise"]
    s = stc.Stream()
    default = stc.default_stream()
    with aoti.load(m.path, device="cuda") as model:
        ins = [_to_cuda(a) for a in m.inputs]
        stc.synchronize()
        on_s, on_default = stc.stream_memory_allocated(s), stc.stream_memory_allocated(default)
        out = model(*ins, stream=s)
        s.synchronize()
        assert stc.stream_memory_allocated(s) - on_s >= out.nbytes
        assert stc.stream_memory_allocated(default) == on_default
        _check("pointwise", out, m.outputs)
        # the current stream is the default again after the run
        assert stc.current_stream().cuda_stream == 0
        del out
    # and with the stream current instead of passed
    ins = [_to_cuda(a) for a in m.inputs]
    with aoti.load(m.path, device="cuda") as model, stc.stream(s):
        on_s = stc.stream_memory_allocated(s)
        out = model(*ins)
        s.synchronize()
        assert stc.stream_memory_allocated(s) - on_s >= out.nbytes
        del out

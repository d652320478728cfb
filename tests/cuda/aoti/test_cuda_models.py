"""CUDA AOTInductor models on slimtensor: each compiled model vs torch eager on the GPU (its outputs were
recorded when it was compiled), with the device memory and the handles back to baseline after each."""

from __future__ import annotations

import gc

import numpy as np
import pytest

pytestmark = pytest.mark.needs_cuda

# (rtol, atol) vs torch eager on the same GPU. Op-free models: Triton kernels fuse and reorder float32 math
# differently from eager's kernels, so a few ulps. Models with matrix products, convolutions or attention:
# cuBLASLt/cuDNN pick other algorithms than torch's (and the attention kernel computes float32 as 3xTF32),
# so sums of K products differ by more. bfloat16 keeps 8 bits of mantissa.
# Convolutions: torch's eager ran cuDNN with TF32 (torch.backends.cudnn.allow_tf32 is True by default).
TOL = {
    "float32": (1e-4, 1e-5),
    "float32_ops": (5e-3, 1e-3),
    "float32_conv": (1e-2, 2e-3),
    "bfloat16": (2e-2, 2e-2),
}
CONV = {"conv2d_groups", "small_cnn"}


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
    for i, (o, e) in enumerate(zip(outs, expected, strict=True)):
        assert o.device.type == "cuda", f"{model_name} output {i} is on {o.device}"
        got = o.cpu().numpy()
        kind = (
            "bfloat16"
            if e.dtype.name == "bfloat16"
            else "float32"
            if model_name in OP_FREE
            else "float32_conv"
            if model_name in CONV
            else "float32_ops"
        )
        rtol, atol = TOL[kind]
        np.testing.assert_allclose(
            got.astype(np.float64),
            e.astype(np.float64),
            rtol=rtol,
            atol=atol,
            err_msg=f"{model_name} output {i}",
        )


OP_FREE = ["pointwise", "view_permute", "two_outputs", "softmax", "const_alias"]
# Models that call op fallbacks (src/aoti_ops): linear/mlp addmm and mm, conv2d/small CNN convolution,
# attention the efficient-attention op; GPT-2 and Llama from small random transformers configs.
WITH_OPS = [
    "linear",
    "mlp",
    "conv2d_groups",
    "small_cnn",
    "sdpa",
    "sdpa_causal",
    "transformer_block",
    "bf16",
    "gpt2",
    "llama",
]


def _ops_missing(path):
    """The aoti_torch_* the model calls that neither libslimtensor nor the CUDA shim library defines."""
    import tempfile

    from slimtensor.aoti import _device_support, _elf, _lib, _package

    sup = _device_support.device_support("cuda")
    with tempfile.TemporaryDirectory() as d:
        files = _package.open_model_files(path, d)
        undefined = _elf.undefined_symbols(files.so_path)
    have = _elf.defined_symbols(_lib.library_path()) | _elf.defined_symbols(sup.shim_library)
    return sorted(n for n in undefined if n.startswith("aoti_torch_") and n not in have)


@pytest.mark.parametrize("name", OP_FREE + WITH_OPS)
def test_model_matches_eager(cuda_models, name):
    from slimtensor import aoti

    m = cuda_models(name)[name]
    missing = _ops_missing(m.path)
    if missing:
        # the load refuses such a model, naming the op: that is checked, then the comparison is skipped
        with pytest.raises(aoti.AOTIError, match=missing[0]):
            aoti.load(m.path, device="cuda")
        pytest.skip(f"{name} needs op fallbacks this build lacks: {missing}")
    before = _counters()
    with aoti.load(m.path, device="cuda") as model:
        assert model.device == "cuda:0"
        outs = model(*[_to_cuda(a) for a in m.inputs])
        _check(name, outs, m.outputs)
        del outs
    assert _counters() == before


def test_dynamic_batch(cuda_models):
    """A model exported with a symbolic batch runs at the example's batch and at another one."""
    from slimtensor import aoti

    m = cuda_models("mlp_dynamic")["mlp_dynamic"]
    if _ops_missing(m.path):
        pytest.skip(f"mlp_dynamic needs op fallbacks this build lacks: {_ops_missing(m.path)}")
    assert len(m.input_sets) == 2 and m.input_sets[0][0].shape[0] != m.input_sets[1][0].shape[0]
    with aoti.load(m.path, device="cuda") as model:
        for ins, outs in zip(m.input_sets, m.output_sets, strict=True):
            got = model(*[_to_cuda(a) for a in ins])
            np.testing.assert_allclose(got.cpu().numpy(), outs[0], rtol=5e-3, atol=1e-3)
            del got


def test_concurrent_runs_from_threads_and_streams(cuda_models):
    """A container with 2 model instances, run from 4 threads each on its own stream: every result right."""
    import threading

    import slimtensor_cuda as stc
    from slimtensor import aoti

    name = "mlp" if not _ops_missing(cuda_models("mlp")["mlp"].path) else "softmax"
    m = cuda_models(name)[name]
    rng = np.random.default_rng(3)
    work = [[rng.standard_normal(a.shape).astype(a.dtype) for a in m.inputs] for _ in range(4)]
    errors, results = [], {}
    before = _counters()
    with aoti.load(m.path, device="cuda", num_models=2) as model:
        want = [model(*[_to_cuda(a) for a in w]) for w in work]
        want = [(w if isinstance(w, tuple) else (w,))[0].cpu().numpy() for w in want]

        def worker(k):
            try:
                s = stc.Stream()
                ins = [_to_cuda(a) for a in work[k]]
                outs = []
                for _ in range(10):
                    o = model(*ins, stream=s)
                    outs.append((o if isinstance(o, tuple) else (o,))[0])
                s.synchronize()
                results[k] = [o.cpu().numpy() for o in outs]
            except Exception as e:  # noqa: BLE001  (reported below)
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    for k in range(4):
        for got in results[k]:
            np.testing.assert_allclose(got, want[k], rtol=1e-5, atol=1e-6)
    results.clear()
    assert _counters() == before


def test_model_for_another_gpu_is_refused_naming_its_architecture(cuda_models, tmp_path):
    """The cubins inside the .so say which GPU they are for: one built for sm_100 is refused on sm_90."""
    import struct
    import zipfile

    import slimtensor_cuda as stc
    from slimtensor import aoti
    from slimtensor_cuda import _aoti

    m = cuda_models("pointwise")["pointwise"]
    with zipfile.ZipFile(m.path) as z:
        data = bytearray(z.read(next(n for n in z.namelist() if n.endswith(".so"))))
    (tmp_path / "ok.so").write_bytes(data)
    assert _aoti.cubin_architectures(str(tmp_path / "ok.so"))
    major, minor = stc.get_device_capability()
    other = 100 if major != 10 else 80
    i = data.find(b"\x7fELF", 1)
    patched = 0
    while i >= 0:
        if data[i + 4] == 2 and struct.unpack_from("<H", data, i + 18)[0] == 190:
            flags = struct.unpack_from("<I", data, i + 48)[0]
            if data[i + 8] >= 8:
                flags = (flags & ~0xFF00) | (other << 8)
            else:
                flags = (flags & ~0xFF) | other
            struct.pack_into("<I", data, i + 48, flags)
            patched += 1
        i = data.find(b"\x7fELF", i + 4)
    assert patched
    (tmp_path / "other.so").write_bytes(data)
    with pytest.raises(RuntimeError, match=f"sm_{other} \\(compute capability {other // 10}.{other % 10}\\)"):
        aoti.load(str(tmp_path / "other.so"), device="cuda")


def test_trace_shows_the_model_device_memory(cuda_models):
    """st.trace() around load + run: the weights (aoti_model_malloc) and the run's cuda storages."""
    import slimtensor as st
    from slimtensor import aoti

    m = cuda_models("const_alias")["const_alias"]
    ins = [_to_cuda(a) for a in m.inputs]
    with st.trace() as tr:
        with aoti.load(m.path, device="cuda") as model:
            outs = model(*ins)
            del outs
    ops = [e.op for e in tr.events if e.kind == "device_event"]
    assert "aoti_model_malloc" in ops and "aoti_model_free" in ops
    allocs = [e for e in tr.events if e.kind == "storage_alloc" and e.device.startswith("cuda")]
    freed = {e.id for e in tr.events if e.kind == "storage_free"}
    assert allocs and all(e.id in freed for e in allocs)


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


def test_a_failed_run_does_not_repeat_an_earlier_plugin_error(cuda_models):
    """Note [Fresh shim errors] (slimtensor/aoti/_model.py): a plugin call that failed before the run is not
    reported as the CUDA shims' last error of a run that fails for another reason (a wrong input shape,
    refused by the model's own input checks)."""
    from slimtensor import aoti

    from ..aoti_ops._cuda_calls import last_error, lib

    m = cuda_models("pointwise")["pointwise"]
    wrong = [_to_cuda(np.zeros(tuple(n + 1 for n in a.shape), a.dtype)) for a in m.input_sets[0]]
    assert lib().slimtensor_cuda_aoti_op_library_status(b"cufft") == 1
    assert "unknown library cufft" in last_error()
    with aoti.load(m.path, device="cuda") as model:
        with pytest.raises(aoti.AOTIError, match="model run failed") as failed:
            model(*wrong)
    assert "cufft" not in str(failed.value), str(failed.value)

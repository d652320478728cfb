"""CUDA graphs of model runs: capture() once, replay() with new values, compared with an eager run on
those values; the memory the graph holds shows in the statistics and is given back."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.needs_cuda


def _cuda(a):
    import slimtensor as st

    return st.asarray(a).to("cuda")


@pytest.mark.parametrize("name", ["pointwise", "softmax", "two_outputs", "const_alias"])
def test_replay_with_new_values_matches_eager(cuda_models, name):
    import slimtensor as st
    import slimtensor_cuda as stc
    from slimtensor import aoti

    m = cuda_models(name)[name]
    rng = np.random.default_rng(7)
    with aoti.load(m.path, device="cuda") as model:
        examples = [_cuda(a) for a in m.inputs]
        before = st.memory_stats("cuda").get("live_bytes", 0)
        model.capture(*examples)
        assert stc.memory_stats()["graph_pools"] == 1
        # the graph's static inputs and outputs are storages the model holds
        assert st.memory_stats("cuda").get("live_bytes", 0) > before
        for _ in range(3):
            new = [rng.standard_normal(a.shape).astype(a.dtype) for a in m.inputs]
            got = model.replay(*[_cuda(a) for a in new])
            got = got if isinstance(got, tuple) else (got,)
            got = [g.cpu().numpy() for g in got]  # copies before the next replay overwrites them
            want = model(*[_cuda(a) for a in new])
            want = want if isinstance(want, tuple) else (want,)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w.cpu().numpy(), rtol=1e-6, atol=1e-6)
    assert stc.memory_stats()["graph_pools"] == 0
    assert stc.memory_stats()["graph_pool_bytes"] == 0


def test_replay_on_another_stream_and_shape_check(cuda_models):
    import slimtensor_cuda as stc
    from slimtensor import aoti

    m = cuda_models("pointwise")["pointwise"]
    s = stc.Stream()
    with aoti.load(m.path, device="cuda") as model:
        model.capture(*[_cuda(a) for a in m.inputs])
        out = model.replay(*[_cuda(a) for a in m.inputs], stream=s)
        s.synchronize()
        np.testing.assert_allclose(out.cpu().numpy(), m.outputs[0], rtol=1e-5, atol=1e-6)
        with pytest.raises(ValueError, match="captured with"):
            model.replay(_cuda(m.inputs[0][:2]), _cuda(m.inputs[1][:2]))
        del out


def test_replay_before_capture_is_a_clear_error(cuda_models):
    from slimtensor import aoti

    m = cuda_models("pointwise")["pointwise"]
    with aoti.load(m.path, device="cuda") as model:
        with pytest.raises(RuntimeError, match="call capture"):
            model.replay(*[_cuda(a) for a in m.inputs])


def test_an_uncapturable_model_is_refused_clearly(cuda_models):
    """A model that copies to the host inside its run cannot be captured: capture() says so, and the
    model still runs eagerly afterwards."""
    from slimtensor import aoti

    m = cuda_models("to_host")["to_host"]
    with aoti.load(m.path, device="cuda") as model:
        with pytest.raises(aoti.AOTIError, match="cannot be captured"):
            model.capture(*[_cuda(a) for a in m.inputs])
        out = model(*[_cuda(a) for a in m.inputs])
        out = out if isinstance(out, tuple) else (out,)
        np.testing.assert_allclose(out[0].cpu().numpy(), m.outputs[0], rtol=1e-5, atol=1e-6)


def test_replay_takes_strided_torch_and_wrong_inputs(cuda_models):
    """replay() copies dense inputs in one C call and strided ones through copy_ (Note [Replay in one call]);
    both, and torch tensors through DLPack, give the eager result; a wrong dtype or device is refused."""
    import slimtensor as st
    from slimtensor import aoti

    m = cuda_models("pointwise")["pointwise"]
    rng = np.random.default_rng(11)
    with aoti.load(m.path, device="cuda") as model:
        model.capture(*[_cuda(a) for a in m.inputs])
        new = [rng.standard_normal(a.shape).astype(a.dtype) for a in m.inputs]
        want = model(*[_cuda(a) for a in new]).cpu().numpy()
        # a strided view: every other element of a tensor twice as long in its last dim
        wide = [np.repeat(a, 2, axis=-1) for a in new]
        strided = [_cuda(w)[..., ::2] for w in wide]
        assert not strided[0].is_contiguous()
        np.testing.assert_allclose(model.replay(*strided).cpu().numpy(), want, rtol=1e-6, atol=1e-6)
        # the static inputs themselves (nothing to copy) replay the last values again
        _, _, static, *_ = model._graph
        np.testing.assert_allclose(model.replay(*static).cpu().numpy(), want, rtol=1e-6, atol=1e-6)
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None and torch.cuda.is_available():
            tin = [torch.from_numpy(a).cuda() for a in new]
            got = model.replay(*tin)
            np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-6, atol=1e-6)
        with pytest.raises(ValueError, match="captured with"):
            model.replay(*[_cuda(a.astype(np.float64)) for a in new])
        with pytest.raises(ValueError, match="is on cpu"):
            model.replay(*[st.asarray(a) for a in new])

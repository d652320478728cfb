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
    """replay() takes dense inputs in one call and copies a strided one into its static input first (Note
    [Graph replay from Python]); both, and torch tensors through DLPack, give the eager result; a wrong dtype,
    count or device is refused."""
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
        static = model._graph.static
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
        with pytest.raises(ValueError, match="takes 2 inputs but got 1"):
            model.replay(_cuda(new[0]))


def _graphs_and_stream():
    import slimtensor_cuda as stc
    from slimtensor.aoti import _device_support

    return _device_support.device_support("cuda").graphs, stc.Stream()


def test_graph_input_copies_cover_many_inputs_and_retarget_per_replay():
    """The copy nodes a graph starts with (Note [Replay in one call]), with no model: 40 static inputs (two copy
    kernels of at most 32), sizes from 0 to ~1 MB and odd byte counts; each replay copies its own sources, and
    a source that is the static input itself is left as it is."""
    import slimtensor as st
    import slimtensor_cuda as stc

    graphs, s = _graphs_and_stream()
    rng = np.random.default_rng(3)
    sizes = [0, 1, 3, 17, 4096, 250_000, 33, 7] * 5  # elements; the uint8 ones give odd byte counts
    dtypes = [st.float32 if i % 3 else st.uint8 for i in range(len(sizes))]
    static = tuple(st.zeros(n, dtype=dt, device="cuda") for n, dt in zip(sizes, dtypes, strict=True))
    graph = graphs.begin(0, s.cuda_stream, list(static))
    graphs.end(graph, s.cuda_stream)
    try:
        assert stc.memory_stats()["graph_pools"] >= 1
        for round_ in range(2):
            arrays = [
                (rng.standard_normal(n) * 100).astype(np.float32 if dt == st.float32 else np.uint8)
                for n, dt in zip(sizes, dtypes, strict=True)
            ]
            srcs = [st.asarray(a).to("cuda") for a in arrays]
            keep = 5 + round_  # this input replays from its static input: it keeps what it had
            before = static[keep].cpu().numpy()
            srcs[keep] = static[keep]
            s.wait_stream(stc.current_stream())  # the sources were written on the current stream
            rc = st._C._aoti_graph_replay(graphs.replay_fn, graph, s.cuda_stream, tuple(srcs), static)
            assert rc == 0
            s.synchronize()
            for i, (dst, a) in enumerate(zip(static, arrays, strict=True)):
                want = before if i == keep else a
                np.testing.assert_array_equal(dst.cpu().numpy(), want, err_msg=f"input {i}, replay {round_}")
    finally:
        graphs.destroy(graph)


def test_graph_c_abi_refuses_bad_arguments_with_a_message():
    import ctypes

    import slimtensor as st
    from slimtensor.aoti import _device_support

    support = _device_support.device_support("cuda")
    graphs, s = _graphs_and_stream()
    L = support._lib
    begin = L.slimtensor_cuda_aoti_capture_begin
    g = ctypes.c_void_p()
    null_input = (ctypes.c_void_p * 1)(None)
    one_byte = (ctypes.c_uint64 * 1)(1)
    assert begin(0, s.cuda_stream, 1, null_input, one_byte, ctypes.byref(g)) != 0
    assert "static input 0 has a NULL data pointer" in support.last_error() and not g.value
    assert begin(0, s.cuda_stream, -1, None, None, ctypes.byref(g)) != 0
    assert "-1 static inputs" in support.last_error()
    assert begin(0, None, 0, None, None, ctypes.byref(g)) != 0
    assert "legacy default stream" in support.last_error()
    static = [st.zeros(4, device="cuda")]
    graph = graphs.begin(0, s.cuda_stream, static)
    graphs.end(graph, s.cuda_stream)
    try:
        replay = ctypes.CFUNCTYPE(
            ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p
        )(graphs.replay_fn)
        srcs = (ctypes.c_void_p * 3)(None, None, None)
        assert replay(graph, s.cuda_stream, 3, srcs) != 0
        assert "3 sources for a graph of 1 static inputs" in support.last_error()
        assert replay(graph, s.cuda_stream, 1, srcs) != 0
        assert "input 0 has a NULL data pointer" in support.last_error()
        assert replay(None, s.cuda_stream, 1, srcs) != 0
        assert "graph is NULL" in support.last_error()
    finally:
        graphs.destroy(graph)


def test_close_while_another_thread_replays(cuda_models):
    """close() waits for a replay in flight and later replays are refused: no crash, no graph used after it
    is destroyed (the replay itself runs without the GIL)."""
    import threading

    from slimtensor import aoti

    m = cuda_models("pointwise")["pointwise"]
    model = aoti.load(m.path, device="cuda")
    xs = [_cuda(a) for a in m.inputs]
    model.capture(*xs)
    errors, replays = [], [0]
    started = threading.Event()

    def loop():
        try:
            while True:
                model.replay(*xs)
                replays[0] += 1
                started.set()
        except RuntimeError as e:
            errors.append(str(e))
            started.set()

    t = threading.Thread(target=loop)
    t.start()
    assert started.wait(60)
    model.close()
    t.join(60)
    assert not t.is_alive()
    assert replays[0] > 0 and len(errors) == 1 and "closed" in errors[0], errors

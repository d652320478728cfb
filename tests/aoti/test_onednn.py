"""oneDNN behind the convolution and LSTM fallbacks: compiled models (tests/aoti/op_model_zoo.py's oneDNN block)
against torch eager, aoti_torch_cpu_mkldnn_rnn_layer and aoti_torch_cpu_convolution called through the C ABI
against torch (every argument, dtypes, non-contiguous and empty inputs, errors), and the thread tie to
st.set_num_threads."""

from __future__ import annotations

import os
import threading
import zipfile
from ctypes import byref, c_int64

import numpy as np
import pytest

from ._helpers import compile_models, have_torch, load_reference
from ._op_calls import H, OpError, call

pytestmark = [
    pytest.mark.needs_torch,
    pytest.mark.skipif(
        not have_torch(), reason="torch is the oracle of these tests (pip install -r requirements/test.txt)"
    ),
]


def _lib():
    from slimtensor.aoti import _lib

    return _lib.lib()


def _onednn_or_skip():
    info = _lib().slimtensor_onednn_info()
    if not info:
        from slimtensor.aoti import last_error

        pytest.skip(f"oneDNN is not available in this build: {last_error()}")
    return info.decode()


# ---- compiled models ---------------------------------------------------------------------------------------
# model -> (fallbacks its .so must call, fallbacks it must not call)
MODELS = {
    "onednn_conv_block": ({"aoti_torch_cpu_convolution"}, set()),
    "onednn_conv_variety": ({"aoti_torch_cpu_convolution"}, set()),
    "onednn_conv_bf16_channels_last": ({"aoti_torch_cpu_convolution"}, set()),
    "onednn_conv_f16": ({"aoti_torch_cpu_convolution"}, set()),
    "onednn_lstm": ({"aoti_torch_cpu_mkldnn_rnn_layer"}, set()),
    "onednn_lstm_deep": ({"aoti_torch_cpu_mkldnn_rnn_layer"}, set()),
    "onednn_lstm_nobias_bf16": ({"aoti_torch_cpu_mkldnn_rnn_layer"}, set()),
    # torch compiles nn.GRU, and nn.LSTM with oneDNN off, into matmuls: no RNN fallback
    "onednn_gru": (set(), {"aoti_torch_cpu_mkldnn_rnn_layer"}),
    "onednn_lstm_mkldnn_off": (set(), {"aoti_torch_cpu_mkldnn_rnn_layer"}),
}


@pytest.fixture(scope="module")
def model_dir():
    return compile_models(sorted(MODELS), zoo="op_model_zoo")


def _undefined(pt2, tmp_path):
    from slimtensor.aoti import _elf

    with zipfile.ZipFile(pt2) as z:
        so = next(n for n in z.namelist() if n.endswith(".wrapper.so"))
        return _elf.undefined_symbols(z.extract(so, tmp_path))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_calls_its_fallbacks(model_dir, name, tmp_path):
    undefined = _undefined(os.path.join(model_dir, f"{name}.pt2"), tmp_path)
    must, must_not = MODELS[name]
    assert must <= undefined, f"{name} calls {sorted(n for n in undefined if n.startswith('aoti_torch_cpu'))}"
    assert not must_not & undefined


def _tolerance(dtype, name):
    d = str(dtype)
    if "bfloat16" in d:
        return 3e-2 if "lstm" in name else 2e-2
    if "float16" in d:
        return 2e-3
    return 2e-4 if "lstm" in name else 1e-4


# models compiled for channels-last inputs (the .npz stores every input contiguous)
CHANNELS_LAST_INPUTS = {"onednn_conv_bf16_channels_last"}
# models whose compiled outputs are float32 where eager's are bfloat16: inductor runs a bfloat16 LSTM's
# mkldnn_rnn_layer on float32 copies of its inputs (the generated code converts them first) and returns
# its float32 results, on libtorch as on slimtensor
FLOAT32_OUTPUTS = {"onednn_lstm_nobias_bf16"}


def _channels_last(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2) if a.ndim == 4 else a


def _run_strided(model, arrays):
    """model.run_numpy without its contiguous copies: the arrays' strides reach the model."""
    from slimtensor.aoti import _lib
    from slimtensor.aoti._numpy import array_from_handle, handle_from_array

    outs = model.run_handles([handle_from_array(a) for a in arrays])  # Run steals the input handles
    try:
        return [array_from_handle(h).copy() for h in outs]
    finally:
        for h in outs:
            _lib.lib().aoti_torch_delete_tensor_object(h)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_eager(model_dir, name):
    from slimtensor import aoti

    if MODELS[name][0]:  # convolutions run without oneDNN too (im2col); the LSTM layer does not
        _onednn_or_skip()
    before = aoti.live_handles()
    with aoti.load(os.path.join(model_dir, f"{name}.pt2")) as model:
        for inputs, expected in load_reference(model_dir, name):
            if name in CHANNELS_LAST_INPUTS:
                outs = _run_strided(model, [_channels_last(a) for a in inputs])
            else:
                outs = model.run_numpy(*inputs)
            assert len(outs) == len(expected)
            for i, (g, e) in enumerate(zip(outs, expected, strict=True)):
                g = np.asarray(g)
                want = np.dtype(np.float32) if name in FLOAT32_OUTPUTS else e.dtype
                assert g.dtype == want and g.shape == e.shape, (name, i, g.dtype, want, g.shape, e.shape)
                tol = _tolerance(e.dtype, name)
                np.testing.assert_allclose(
                    g.astype(np.float64),
                    e.astype(np.float64),
                    rtol=tol,
                    atol=tol,
                    err_msg=f"{name} output {i}",
                )
    assert aoti.live_handles() == before


# ---- aoti_torch_cpu_mkldnn_rnn_layer through the C ABI -----------------------------------------------------
def _rand(*shape, dtype=None, seed=0):
    import torch

    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * 0.5).to(dtype or torch.float32)


def rnn_layer(
    x,
    w0,
    w1,
    w2,
    w3,
    hx,
    cx,
    reverse=False,
    mode=2,
    hidden=None,
    has_biases=True,
    batch_sizes=(),
    num_layers=1,
    bidirectional=False,
    batch_first=False,
    train=False,
):
    hidden = hx.shape[-1] if hidden is None else hidden
    bs = (c_int64 * max(1, len(batch_sizes)))(*batch_sizes)

    def args(c):
        return [
            c.tensor(x),
            c.tensor(w0),
            c.tensor(w1),
            c.tensor(w2),
            c.tensor(w3),
            c.tensor(hx),
            c.tensor(cx),
            int(reverse),
            bs,
            len(batch_sizes),
            mode,
            hidden,
            num_layers,
            int(has_biases),
            int(bidirectional),
            int(batch_first),
            int(train),
        ]

    return call("aoti_torch_cpu_mkldnn_rnn_layer", args, 4)


def torch_rnn_layer(x, w0, w1, w2, w3, hx, cx, reverse=False, has_biases=True):
    import torch

    with torch.no_grad():
        return torch.ops.aten.mkldnn_rnn_layer(
            x.contiguous(),
            w0,
            w1,
            w2,
            w3,
            hx.contiguous(),
            cx.contiguous(),
            reverse,
            [],
            2,
            hx.shape[-1],
            1,
            has_biases,
            False,
            False,
            False,
        )


def _lstm_case(t=6, n=3, i=5, h=7, dtype=None, seed=0):
    return (
        _rand(t, n, i, dtype=dtype, seed=seed),
        _rand(4 * h, i, dtype=dtype, seed=seed + 1),
        _rand(4 * h, h, dtype=dtype, seed=seed + 2),
        _rand(4 * h, dtype=dtype, seed=seed + 3),
        _rand(4 * h, dtype=dtype, seed=seed + 4),
        _rand(1, n, h, dtype=dtype, seed=seed + 5),
        _rand(1, n, h, dtype=dtype, seed=seed + 6),
    )


def _close(got, want, tol):
    import torch

    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("has_biases", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_rnn_layer_matches_torch(reverse, has_biases, dtype):
    import torch

    _onednn_or_skip()
    dt = getattr(torch, dtype)
    case = _lstm_case(dtype=dt)
    if not has_biases:  # what the decomposition passes: zeros of the weights' sizes, unused
        case = (
            *case[:3],
            torch.zeros(case[1].shape, dtype=dt),
            torch.zeros(case[2].shape, dtype=dt),
            *case[5:],
        )
    got = rnn_layer(*case, reverse=reverse, has_biases=has_biases)
    try:
        want = torch_rnn_layer(*case, reverse=reverse, has_biases=has_biases)
    except RuntimeError as exc:
        # torch's own 16-bit LSTM needs a CPU with AVX-512 (oneDNN refuses it elsewhere: "could not create a
        # primitive descriptor"), while slimtensor's kernel runs everywhere: then the reference is torch's
        # float32 LSTM of the same rounded inputs, rounded once at the end.
        if dtype == "float32" or "primitive descriptor" not in str(exc):
            raise
        wide = torch_rnn_layer(*(a.float() for a in case), reverse=reverse, has_biases=has_biases)
        want = [w.to(dt) for w in wide[:3]]
    tol = {"float32": 1e-5, "bfloat16": 3e-2, "float16": 3e-3}[dtype]
    for g, w in zip(got[:3], want[:3], strict=True):
        _close(g, w, tol)
    assert got[3].numel() == 0 and got[3].dtype == torch.uint8  # no workspace (inference)


def test_rnn_layer_is_nn_lstm_and_ignores_whole_rnn_arguments():
    """One layer of nn.LSTM; num_layers/bidirectional/batch_first/train describe the whole RNN and change
    nothing (as in torch's kernel); 2-D states work too."""
    import torch

    _onednn_or_skip()
    lstm = torch.nn.LSTM(5, 7)
    x, h0, c0 = _rand(6, 3, 5), _rand(1, 3, 7, seed=1), _rand(1, 3, 7, seed=2)
    with torch.no_grad():
        y, (h, c) = lstm(x, (h0, c0))
    p = [
        lstm.weight_ih_l0.detach(),
        lstm.weight_hh_l0.detach(),
        lstm.bias_ih_l0.detach(),
        lstm.bias_hh_l0.detach(),
    ]
    for kw in [{}, {"num_layers": 3, "bidirectional": True, "batch_first": True, "train": True}]:
        got = rnn_layer(x, *p, h0, c0, **kw)
        _close(got[0], y, 1e-5)
        _close(got[1], h, 1e-5)
        _close(got[2], c, 1e-5)
    got = rnn_layer(x, *p, h0[0], c0[0])
    assert got[1].shape == (3, 7)
    _close(got[1], h[0], 1e-5)


def test_rnn_layer_non_contiguous_inputs_are_read_by_their_strides():
    """torch's kernel reads a non-contiguous input as if it were contiguous; slimtensor reads it by its strides,
    so it matches nn.LSTM on the same values."""
    import torch

    _onednn_or_skip()
    x, w0, w1, b0, b1, hx, cx = _lstm_case()
    xt = x.transpose(0, 1).contiguous().transpose(0, 1)  # (T, N, I) with N outermost in memory
    w0t = w0.t().contiguous().t()
    w1s = torch.zeros(w1.shape[0], w1.shape[1] * 2)
    w1s[:, ::2] = w1
    b0s = torch.zeros(b0.shape[0] * 3)
    b0s[::3] = b0
    hxt = hx.transpose(0, 1).contiguous().transpose(0, 1)
    got = rnn_layer(xt, w0t, w1s[:, ::2], b0s[::3], b1, hxt, cx)
    want = torch_rnn_layer(x, w0, w1, b0, b1, hx, cx)
    for g, w in zip(got[:3], want[:3], strict=True):
        _close(g, w, 1e-5)


def test_rnn_layer_empty_inputs():
    import torch

    x, w0, w1, b0, b1, hx, cx = _lstm_case()
    y, hy, cy, ws = rnn_layer(x[:0], w0, w1, b0, b1, hx, cx)  # T == 0: the states pass through
    assert y.shape == (0, 3, 7)
    torch.testing.assert_close(hy, hx)
    torch.testing.assert_close(cy, cx)
    y, hy, cy, ws = rnn_layer(x[:, :0], w0, w1, b0, b1, hx[:, :0], cx[:, :0])  # N == 0
    assert y.shape == (6, 0, 7) and hy.shape == (1, 0, 7) and cy.shape == (1, 0, 7)


def test_rnn_layer_errors():
    import torch
    from slimtensor import aoti

    x, w0, w1, b0, b1, hx, cx = _lstm_case()
    before = aoti.live_handles()
    bad = {
        "mode 3 is not implemented": dict(mode=3),
        "packed sequences": dict(batch_sizes=(3, 3, 2)),
        "hidden_size must be >= 1": dict(hidden=0),
    }
    for message, kw in bad.items():
        with pytest.raises(OpError, match=message):
            rnn_layer(x, w0, w1, b0, b1, hx, cx, **kw)
    with pytest.raises(OpError, match="weight0"):
        rnn_layer(x, w0[:-1], w1, b0, b1, hx, cx)
    with pytest.raises(OpError, match="weight1"):
        rnn_layer(x, w0, w1[:, :-1], b0, b1, hx, cx)
    with pytest.raises(OpError, match="biases"):
        rnn_layer(x, w0, w1, b0[:-1], b1, hx, cx)
    with pytest.raises(OpError, match="hx_ must have sizes"):
        rnn_layer(x, w0, w1, b0, b1, hx[:, :2], cx)
    with pytest.raises(OpError, match="cx_ must have sizes"):
        rnn_layer(x, w0, w1, b0, b1, hx, torch.zeros(2, 3, 7))
    with pytest.raises(OpError, match="input must be 3-D"):
        rnn_layer(x[0], w0, w1, b0, b1, hx, cx)
    with pytest.raises(OpError, match="float32, bfloat16 or float16"):  # torch refuses float64 too
        rnn_layer(*[t.double() for t in (x, w0, w1, b0, b1, hx, cx)])
    with pytest.raises(OpError, match="both must have the same dtype"):
        rnn_layer(x, w0.bfloat16(), w1, b0, b1, hx, cx)
    lib = _lib()
    ret = [H() for _ in range(4)]
    assert (
        lib.aoti_torch_cpu_mkldnn_rnn_layer(
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            0,
            None,
            0,
            2,
            7,
            1,
            1,
            0,
            0,
            0,
            *[byref(r) for r in ret],
        )
        != 0
    )
    assert all(r.value is None for r in ret)
    assert aoti.live_handles() == before


# ---- aoti_torch_cpu_convolution through oneDNN, against torch ----------------------------------------------
def conv(x, w, b, stride, pad, dil, transposed=False, opad=(0,), groups=1):
    arr = lambda v: (c_int64 * len(v))(*v)  # noqa: E731

    def args(c):
        return [
            c.tensor(x),
            c.tensor(w),
            c.optional(b),
            arr(stride),
            len(stride),
            arr(pad),
            len(pad),
            arr(dil),
            len(dil),
            int(transposed),
            arr(opad),
            len(opad),
            groups,
        ]

    return call("aoti_torch_cpu_convolution", args, 1)


def torch_conv(x, w, b, stride, pad, dil, transposed=False, opad=(0,), groups=1):
    import torch

    nd = x.dim() - 2
    expand = lambda v: list(v) * nd if len(v) == 1 else list(v)  # noqa: E731
    with torch.no_grad():
        return torch.ops.aten.convolution(
            x, w, b, expand(stride), expand(pad), expand(dil), transposed, expand(opad), groups
        )


CONV_SHAPES = {
    # name: x shape, w shape, stride, pad, dil, groups (issue 12's shapes scaled down for test time; each
    # above the oneDNN path's 2^17 multiply-adds but "tiny", which takes the im2col path)
    "resnet3x3": ((2, 64, 14, 14), (64, 64, 3, 3), (1,), (1,), (1,), 1),
    "depthwise5x5s2": ((1, 48, 33, 33), (48, 1, 5, 5), (2,), (2,), (1,), 48),
    "grouped_dilated": ((2, 16, 21, 19), (24, 4, 3, 2), (2, 1), (1, 0), (2, 1), 4),
    "first_layer": ((1, 3, 20, 20), (16, 3, 7, 7), (2,), (3,), (1,), 1),
    "pointwise": ((2, 24, 14, 14), (40, 24, 1, 1), (1,), (0,), (1,), 1),
    "conv1d": ((2, 16, 200), (24, 16, 5), (3,), (2,), (2,), 1),
    "conv3d": ((1, 8, 6, 12, 12), (12, 4, 3, 3, 3), (1, 2, 2), (1,), (1,), 2),
    "tiny": ((2, 4, 10, 10), (6, 4, 3, 3), (1,), (1,), (1,), 1),
}


def _layouts(x):
    import torch

    out = {"contiguous": x}
    if x.dim() == 4:
        out["channels_last"] = x.contiguous(memory_format=torch.channels_last)
    big = torch.zeros(*x.shape[:-1], x.shape[-1] * 2, dtype=x.dtype)
    big[..., ::2] = x
    out["step"] = big[..., ::2]
    out["transposed_batch"] = x.transpose(0, 1).contiguous().transpose(0, 1)
    return out


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(CONV_SHAPES))
def test_convolution_matches_torch(name, dtype):
    import torch

    _onednn_or_skip()
    xs, ws, stride, pad, dil, groups = CONV_SHAPES[name]
    dt = getattr(torch, dtype)
    x, w, b = _rand(*xs, dtype=dt), _rand(*ws, dtype=dt, seed=1), _rand(ws[0], dtype=dt, seed=2)
    tol = {"float32": 1e-4, "bfloat16": 3e-2, "float16": 3e-3}[dtype]
    for layout, xl in _layouts(x).items():
        for bias in (b, None):
            got = conv(xl, w, bias, stride, pad, dil, groups=groups)
            want = torch_conv(xl, w, bias, stride, pad, dil, groups=groups)
            assert got.stride() == want.stride(), (layout, got.stride(), want.stride())
            torch.testing.assert_close(
                got.float(), want.float(), rtol=tol, atol=tol * 4, msg=f"{name} {layout}"
            )


@pytest.mark.parametrize(
    "xs,ws,stride,pad,dil,opad,groups",
    [
        ((2, 16, 10, 12), (16, 6, 3, 3), (2,), (1,), (1,), (1,), 2),
        ((2, 16, 80), (16, 24, 4), (2,), (1,), (1,), (0,), 1),
        ((2, 16, 9, 12), (16, 8, 3, 2), (2, 1), (0, 1), (2, 1), (1, 0), 1),
        ((2, 8, 6, 6, 6), (8, 8, 2, 2, 2), (2,), (0,), (1,), (1,), 1),
        ((1, 16, 10, 10), (16, 16, 3, 3), (3,), (0,), (1,), (2,), 1),  # output_padding > padding
        ((1, 4, 3, 4), (4, 2, 3, 2), (2, 1), (0, 1), (2, 1), (1, 0), 1),  # tiny: the im2col path
    ],
)
def test_transposed_convolution_matches_torch(xs, ws, stride, pad, dil, opad, groups):
    import torch

    _onednn_or_skip()
    x, w, b = _rand(*xs), _rand(*ws, seed=1), _rand(ws[1] * groups, seed=2)
    for xl in _layouts(x).values():
        got = conv(xl, w, b, stride, pad, dil, True, opad, groups)
        want = torch_conv(xl, w, b, stride, pad, dil, True, opad, groups)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_convolution_plans_are_cached_per_shape():
    _onednn_or_skip()
    lib = _lib()
    x, w = _rand(1, 16, 25, 23, seed=7), _rand(16, 16, 3, 3, seed=8)
    conv(x, w, None, (1,), (1,), (1,))
    n = lib.slimtensor_onednn_convolution_plans()
    for _ in range(3):
        conv(x, w, None, (1,), (1,), (1,))
    assert lib.slimtensor_onednn_convolution_plans() == n
    conv(_rand(2, 16, 25, 23), w, None, (1,), (1,), (1,))  # a new batch size is a new plan
    assert lib.slimtensor_onednn_convolution_plans() == n + 1
    conv(_rand(1, 4, 10, 10), _rand(6, 4, 3, 3), None, (1,), (1,), (1,))  # tiny: the im2col path, no plan
    assert lib.slimtensor_onednn_convolution_plans() == n + 1


def test_convolution_empty_and_float64_take_the_other_path():
    import torch

    x, w = _rand(0, 4, 6, 6), _rand(5, 4, 3, 3, seed=1)
    assert conv(x, w, None, (1,), (0,), (1,)).shape == (0, 5, 4, 4)
    xd, wd = _rand(1, 4, 6, 6).double(), w.double()
    torch.testing.assert_close(
        conv(xd, wd, None, (1,), (1,), (1,)), torch_conv(xd, wd, None, (1,), (1,), (1,))
    )


# ---- oneDNN's threads follow st.set_num_threads ------------------------------------------------------------
def test_onednn_threads_follow_set_num_threads():
    import slimtensor as st

    info = _onednn_or_skip()
    assert "libdnnl" in info and "oneDNN 2." in info
    lib = _lib()
    x, w = _rand(1, 16, 24, 24), _rand(16, 16, 3, 3, seed=1)
    old = st.get_num_threads()
    try:
        for n in (1, 2, 3):
            st.set_num_threads(n)
            conv(x, w, None, (1,), (1,), (1,))
            assert lib.slimtensor_onednn_threads() == n
            seen: list[int] = []

            def other_thread(seen=seen):
                conv(x, w, None, (1,), (1,), (1,))  # a new thread starts with OpenMP's default
                seen.append(lib.slimtensor_onednn_threads())

            t = threading.Thread(target=other_thread)
            t.start()
            t.join()
            assert seen == [n]
            rnn_layer(*_lstm_case())
            assert lib.slimtensor_onednn_threads() == n
    finally:
        st.set_num_threads(old)


def test_onednn_info_names_the_loaded_library():
    """A wheel built with oneDNN carries it in slimtensor/lib and loads that copy (not the system's)."""
    from slimtensor import _C

    info = _onednn_or_skip()
    path = info.split(" | ")[0]
    assert os.path.isfile(path), info
    if _C._BUILD_INFO.get("onednn_bundled") and "SLIMTENSOR_DNNL" not in os.environ:
        assert path.endswith(os.path.join("slimtensor", "lib", "libdnnl.so.2")), info
        assert os.path.isfile(os.path.join(os.path.dirname(path), "libOpenCL.so.1"))

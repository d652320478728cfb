"""aoti_torch_cuda_convolution (cuDNN) against torch on the GPU: 1-3 spatial dims, groups, stride, padding,
dilation, transposed, bias, channels-last, every dtype; output strides as torch's; the errors.

Tolerances (relative Frobenius error against torch's float64 convolution of the same rounded inputs): float32
5e-3 (cuDNN may use TF32, as torch's default torch.backends.cudnn.allow_tf32=True allows), bfloat16 2e-2,
float16 5e-3.
"""

from __future__ import annotations

import ctypes

import pytest

from ._cuda_calls import OpError, call, rel_error, to_torch

pytestmark = pytest.mark.needs_cuda

TOL = {"float32": 5e-3, "bfloat16": 2e-2, "float16": 5e-3}

CASES = {
    # name: (input shape, weight shape, stride, padding, dilation, transposed, output_padding, groups, bias)
    "conv2d": ((2, 6, 17, 19), (8, 3, 3, 5), (2, 1), (1, 2), (1, 2), False, (0, 0), 2, True),
    "conv2d_plain": ((1, 3, 16, 16), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), False, (0, 0), 1, False),
    "conv2d_depthwise": ((2, 8, 12, 12), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), False, (0, 0), 8, True),
    "conv1d": ((3, 4, 33), (6, 4, 5), (2,), (2,), (1,), False, (0,), 1, True),
    "conv3d": ((1, 2, 7, 8, 9), (3, 2, 3, 3, 3), (1, 2, 1), (1, 0, 1), (1, 1, 2), False, (0, 0, 0), 1, True),
    "conv_transpose2d": ((2, 4, 9, 10), (4, 3, 3, 3), (2, 2), (1, 0), (1, 1), True, (1, 0), 1, True),
    "conv_transpose1d_groups": ((2, 4, 11), (4, 2, 4), (3,), (1,), (1,), True, (2,), 2, False),
}


def _torch_conv(torch, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    F = torch.nn.functional
    nsp = x.dim() - 2
    if transposed:
        f = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nsp]
        return f(x, w, b, stride, padding, output_padding, groups, dilation)
    f = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nsp]
    return f(x, w, b, stride, padding, dilation, groups)


def run_conv(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    (h,) = call(
        "aoti_torch_cuda_convolution",
        lambda c: (
            c.tensor(x),
            c.tensor(w),
            c.optional(b),
            c.ints(stride),
            len(stride),
            c.ints(padding),
            len(padding),
            c.ints(dilation),
            len(dilation),
            int(transposed),
            c.ints(output_padding),
            len(output_padding),
            groups,
        ),
        "h",
    )
    return to_torch(h)


@pytest.mark.parametrize("dtype_name", list(TOL))
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("channels_last", [False, True])
def test_convolution(cuda_torch, dtype_name, case, channels_last):
    torch = cuda_torch
    xs, ws, stride, padding, dilation, transposed, opad, groups, has_bias = CASES[case]
    if channels_last and len(xs) != 4:
        pytest.skip("channels_last applies to 4-D inputs")
    dt = getattr(torch, dtype_name)
    gen = torch.Generator(device="cuda").manual_seed(len(case))
    x = torch.randn(*xs, generator=gen, device="cuda").to(dt)
    w = torch.randn(*ws, generator=gen, device="cuda").to(dt)
    b = (
        torch.randn(ws[1] * groups if transposed else ws[0], generator=gen, device="cuda").to(dt)
        if has_bias
        else None
    )
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    got = run_conv(x, w, b, stride, padding, dilation, transposed, opad, groups)
    torch.cuda.synchronize()
    ref = _torch_conv(
        torch,
        x.double(),
        w.double(),
        None if b is None else b.double(),
        stride,
        padding,
        dilation,
        transposed,
        opad,
        groups,
    )
    same = _torch_conv(torch, x, w, b, stride, padding, dilation, transposed, opad, groups)
    assert got.shape == ref.shape
    assert got.stride() == same.stride(), "the output's strides must be torch's (the AOTI code assumes them)"
    err = rel_error(got, ref)
    assert err <= TOL[dtype_name], f"relative error {err:.2e} > {TOL[dtype_name]}"


def test_non_contiguous_input(cuda_torch):
    torch = cuda_torch
    x = torch.randn(2, 3, 20, 40, device="cuda")[:, :, :, ::2]
    w = torch.randn(5, 3, 3, 3, device="cuda")
    got = run_conv(x, w, None, (1, 1), (0, 0), (1, 1), False, (0, 0), 1)
    torch.cuda.synchronize()
    ref = torch.nn.functional.conv2d(x.double(), w.double())
    assert rel_error(got, ref) <= TOL["float32"]


@pytest.mark.parametrize(
    "case,match",
    [
        ("groups", "channels"),
        ("stride_len", "stride has 1 values"),
        ("dtype", "must share input's dtype"),
        ("zero_stride", "stride\\[0\\] = 0"),
        ("too_small", "smaller than the dilated kernel"),
        ("bias_shape", "bias must have shape"),
    ],
)
def test_convolution_errors(cuda_torch, case, match):
    torch = cuda_torch
    x = torch.randn(1, 4, 8, 8, device="cuda")
    w = torch.randn(6, 4, 3, 3, device="cuda")
    b = None
    stride, padding, dilation, groups = (1, 1), (0, 0), (1, 1), 1
    if case == "groups":
        groups = 3
    elif case == "stride_len":
        stride = (1,)
    elif case == "dtype":
        w = w.half()
    elif case == "zero_stride":
        stride = (0, 1)
    elif case == "too_small":
        x = torch.randn(1, 4, 2, 8, device="cuda")
    elif case == "bias_shape":
        b = torch.randn(5, device="cuda")
    with pytest.raises(OpError, match=match) as ei:
        run_conv(x, w, b, stride, padding, dilation, False, (0, 0), groups)
    assert "aoti_torch_cuda_convolution()" in str(ei.value)


def test_null_output_pointer_is_an_error(cuda_torch):
    from ._cuda_calls import Call, last_error, lib

    torch = cuda_torch
    x = torch.randn(1, 1, 4, 4, device="cuda")
    c = Call()
    try:
        one = c.ints((1, 1))
        zero = c.ints((0, 0))
        rc = lib().aoti_torch_cuda_convolution(
            c.tensor(x),
            c.tensor(x),
            None,
            one,
            2,
            zero,
            2,
            one,
            2,
            0,
            zero,
            2,
            1,
            ctypes.POINTER(ctypes.c_void_p)(),
        )
    finally:
        c.close()
    assert rc != 0 and "ret0 is null" in last_error()

"""The CUDA copy kernels' choices (packages/slimtensor-cuda/src/kernels, Note [Copy kernel choice]) against
the CPU copy, byte for byte: every permutation of 4-D shapes (vectorised and scalar tiles, partial tiles),
slices (the gather kernel and word widening), broadcast sources, permuted and misaligned conversions
(the dense conversion kernels fall back), every dtype pair through the converting transpose tiles, and
offsets past 2^31 (the 64-bit index path)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ._dtype_cases import DTYPES, ITEMSIZE, special_bytes

pytestmark = pytest.mark.needs_cuda
st = pytest.importorskip("slimtensor")


@pytest.fixture(autouse=True)
def _registered(stc):
    stc.register()
    yield
    stc.synchronize()


def random_host(shape, dtype: str, seed: int = 0):
    n = int(np.prod(shape))
    bits = np.random.default_rng(seed).integers(0, 256, n * getattr(st, dtype).itemsize, dtype=np.uint8)
    return st.from_numpy(bits).view(getattr(st, dtype)).reshape(*shape)


def same_bytes(got, want) -> bool:
    return np.array_equal(
        got.contiguous().view(st.uint8).cpu().numpy(), want.contiguous().view(st.uint8).numpy()
    )


@pytest.mark.parametrize("shape", [(3, 4, 5, 8), (4, 8, 16, 12), (9, 33, 17, 5)])
@pytest.mark.parametrize("dtype", ["uint8", "bfloat16", "float32", "float64", "complex128"])
def test_permuted_every_permutation(shape, dtype) -> None:
    host = random_host(shape, dtype)
    dev = host.to("cuda")
    for perm in itertools.permutations(range(4)):
        assert same_bytes(dev.permute(*perm).contiguous(), host.permute(*perm).contiguous()), perm


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32", "complex64", "complex128"])
def test_permuted_slices_and_words(dtype) -> None:
    host = random_host((40, 64, 6), dtype, seed=1)
    dev = host.to("cuda")
    for index in (
        (slice(None), slice(None, None, 2)),  # every other row: gather
        (slice(None), slice(1, None)),  # one element in: narrower words
        (slice(3, 17), slice(8, 40), slice(2, 6)),
        (slice(None), slice(None), slice(0, 4)),
    ):
        assert same_bytes(dev[index].contiguous(), host[index].contiguous()), index
    # (N, C, k) with C and N swapped: a transpose of k-element words
    assert same_bytes(dev.permute(1, 0, 2).contiguous(), host.permute(1, 0, 2).contiguous())
    assert same_bytes(dev[:, 1:].permute(1, 0, 2).contiguous(), host[:, 1:].permute(1, 0, 2).contiguous())


def test_permuted_broadcast_source() -> None:
    host = random_host((1, 300, 1, 70), "float32", seed=2).expand(5, 300, 9, 70)
    dev = random_host((1, 300, 1, 70), "float32", seed=2).to("cuda").expand(5, 300, 9, 70)
    assert same_bytes(dev.permute(3, 2, 1, 0).contiguous(), host.permute(3, 2, 1, 0).contiguous())
    assert same_bytes(dev.contiguous(), host.contiguous())


@pytest.mark.parametrize(
    "src,dst", [("float32", "bfloat16"), ("bfloat16", "float32"), ("float32", "float16"), ("int32", "float16"),
                ("float64", "uint8"), ("complex128", "bfloat16"), ("uint8", "complex64")]
)  # fmt: skip
def test_permuted_and_misaligned_conversions(src, dst) -> None:
    data = special_bytes(getattr(st, src).code, np.random.default_rng(3), n_random=4 * 1111 * 7)
    n = len(data) // getattr(st, src).itemsize
    host = st.from_numpy(np.frombuffer(data, dtype=np.uint8).copy()).view(getattr(st, src))
    dev = host.to("cuda")
    d = getattr(st, dst)
    assert same_bytes(dev.to(d), host.to(d))  # dense, aligned: the vector kernel
    assert same_bytes(dev[1:].to(d), host[1:].to(d))  # dense, misaligned: the fallback
    rows = n // 7
    h2, d2 = host[: rows * 7].reshape(rows, 7), dev[: rows * 7].reshape(rows, 7)
    assert same_bytes(d2.T.to(d), h2.T.to(d))
    assert same_bytes(d2[:, 1:5].to(d), h2[:, 1:5].to(d))


@pytest.mark.parametrize("src_code,src", DTYPES, ids=[d[1] for d in DTYPES])
def test_permuted_conversions_every_pair(src_code: int, src: str) -> None:
    # A batched transpose whose sizes, strides and pointers allow vector tiles on both sides: each pair's
    # converting tile kernel (transpose_convert.cu), with the special values (NaN payloads, subnormals,
    # ties, out-of-range) among the elements; then an odd shape (scalar tiles or the gather).
    n = 3 * 64 * 96
    data = special_bytes(src_code, np.random.default_rng(src_code + 100), n_random=n)[
        -n * ITEMSIZE[src_code] :
    ]
    host = st.from_numpy(np.frombuffer(data, dtype=np.uint8).copy()).view(getattr(st, src)).reshape(3, 64, 96)
    dev = host.to("cuda")
    for _, dst in DTYPES:
        if dst == src:
            continue
        d = getattr(st, dst)
        for shape, view in (
            ((3, 96, 64), lambda t: t.permute(0, 2, 1)),
            ((61, 3, 9), lambda t: t[:, :9, :61].permute(2, 0, 1)),
        ):
            got = st.empty(*shape, dtype=d, device="cuda")
            got.copy_(view(dev))
            want = st.empty(*shape, dtype=d)
            want.copy_(view(host))
            assert same_bytes(got, want), f"{src}->{dst} {shape} differs from the CPU"
        del got, want


def test_permuted_offsets_past_2_to_31(stc) -> None:
    # A source whose extent passes 2^31 elements takes the 64-bit index path; the reference is the two
    # rows copied one by one (contiguous, so plain memcpy).
    big = st.empty((1 << 31) + 4096, dtype=st.uint8, device="cuda")
    big[: 1 << 20].copy_(random_host((1 << 20,), "uint8", seed=4).to("cuda"))
    big[1 << 31 :].copy_(random_host((4096,), "uint8", seed=5).to("cuda"))
    src = big.as_strided((2, 64, 64), (1 << 31, 1, 64))  # rows 2^31 apart, each a 64x64 transpose
    got = src.contiguous().cpu().numpy()
    rows = [big[:4096].cpu().numpy(), big[1 << 31 :].cpu().numpy()]
    want = np.stack([r.reshape(64, 64).T for r in rows])
    assert np.array_equal(got, want)
    # rows of odd length at an odd distance: no wider words, so a gather on the 64-bit path
    moved = big.as_strided((2, 4095), ((1 << 31) + 1, 1)).contiguous().cpu().numpy()
    assert np.array_equal(moved, np.stack([rows[0][:4095], rows[1][1:]]))
    del big, src

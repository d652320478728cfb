"""Differential fuzzer (atheris, issue 14): chains of views, copies and dtype conversions on slimtensor
tensors against the same operations on numpy arrays.

Each input is a program over one array `a` (numpy) and its twin `t` (slimtensor, a copy): ops are applied to
both; where numpy accepts an op slimtensor must give the same values, sizes and (element) strides, and where
numpy refuses it slimtensor must raise an ordinary exception (never crash). slimtensor refuses negative
steps by design (docs): those are compared as "both refuse". The slimtensor twin lives at a fuzzed byte offset
(0..7 past an aligned address: numpy and from_blob hand over any address), and slices and narrows sometimes
take steps and lengths near 2**63, which must be refused or exported with defined strides.
Run: python tests/fuzz/views_fuzzer.py [libFuzzer flags] tests/fuzz/corpus/views.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    import numpy as np
    import slimtensor as st

DTYPES = ["float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool", "float16", "complex64"]
REFUSALS = (ValueError, IndexError, RuntimeError, TypeError, BufferError)
HUGE = 2**63 - 1


class Mismatch(AssertionError):
    pass


def same(a: np.ndarray, t, view: bool) -> None:
    got = t.numpy()
    if got.shape != a.shape:
        raise Mismatch(f"shape {got.shape} != {a.shape}")
    if a.size and t.dtype.name != "bool":
        if not np.array_equal(got, a, equal_nan=a.dtype.kind in "fc"):
            raise Mismatch(f"values differ:\n{got}\n{a}")
    elif a.size and not np.array_equal(got, a):
        raise Mismatch("bool values differ")
    exp = tuple(s // a.itemsize for s in a.strides) if a.size > 1 else None
    # strides only for pure views (copies may keep strides where numpy makes C order, as torch's clone does)
    if view and exp is not None and all(d > 1 for d in a.shape) and tuple(t.stride()) != exp:
        raise Mismatch(f"strides {tuple(t.stride())} != {exp}")


def step(fdp: atheris.FuzzedDataProvider, a: np.ndarray, t):
    """One op on both; returns the new pair (a view or a copy)."""
    op = fdp.ConsumeIntInRange(0, 12)
    step.view = op in (0, 1, 2, 3, 10)
    step.lenient = op == 12  # hostile fill values: either side may refuse, neither may crash
    nd = a.ndim
    if op == 0 and nd:  # slicing with any start/stop/step
        d = fdp.ConsumeIntInRange(0, nd - 1)
        stride = fdp.ConsumeIntInRange(-3, 4) or 1
        stride = HUGE if stride == 4 else stride  # a size-1 result whose byte stride overflows int64
        sl = slice(fdp.ConsumeIntInRange(-8, 8), fdp.ConsumeIntInRange(-8, 8), stride)
        key = (slice(None),) * d + (sl,)
        # numpy wraps a stride * step past int64 silently; slimtensor refuses it (ValueError): either may do
        step.lenient = abs(t.stride()[d] * sl.step) > HUGE
        return a[key], lambda: t[key], sl.step < 0
    if op == 1 and nd >= 2:
        i, j = fdp.ConsumeIntInRange(-nd, nd - 1), fdp.ConsumeIntInRange(-nd, nd - 1)
        return np.swapaxes(a, i, j), lambda: t.transpose(i, j), False
    if op == 2 and nd:
        perm = list(range(nd))
        for k in range(nd - 1, 0, -1):
            m = fdp.ConsumeIntInRange(0, k)
            perm[k], perm[m] = perm[m], perm[k]
        return a.transpose(perm), lambda: t.permute(*perm), False
    if op == 3 and nd:
        d, s, n = fdp.ConsumeIntInRange(0, nd - 1), fdp.ConsumeIntInRange(-6, 6), fdp.ConsumeIntInRange(-2, 7)
        n = HUGE - fdp.ConsumeIntInRange(0, 2) if n == 7 else n  # start + length past int64
        start = s + a.shape[d] if s < 0 else s
        ok = -a.shape[d] <= s <= a.shape[d] and 0 <= n <= a.shape[d] - start
        key = (slice(None),) * d + (slice(start, start + n),)
        return (a[key] if ok else None), lambda: t.narrow(d, s, n), False
    if op == 4:
        shape = tuple(fdp.ConsumeIntInRange(-1, 6) for _ in range(fdp.ConsumeIntInRange(0, 3)))
        try:
            r = a.reshape(shape)
        except ValueError:
            r = None
        return r, lambda: t.reshape(shape), False
    if op == 5:  # a dtype conversion (a copy)
        dt = DTYPES[fdp.ConsumeIntInRange(0, len(DTYPES) - 1)]
        if a.dtype.kind == "c" and dt not in ("complex64",):
            return None, None, False  # complex -> real: numpy warns and drops imag; slimtensor too, skip
        with np.errstate(all="ignore"):
            if a.dtype.kind == "f" and np.dtype(dt).kind in "iub" and dt != "bool":
                return None, None, False  # float -> int out of range is platform-defined (docs)
            return a.astype(dt), lambda: t.to(getattr(st, dt)), False
    if op == 6:
        return a.copy(order="C"), lambda: t.contiguous(), False  # (ascontiguousarray makes 0-d 1-d)
    if op == 7:
        return a.copy(), lambda: t.clone(), False
    if op == 8 and nd:  # copy_ of a (broadcast) source into the view
        src = (np.arange(a.shape[-1]) % 5).astype(a.dtype)
        b = a.copy()
        b[...] = src

        def run():
            u = t.clone()
            u.copy_(st.asarray(src))
            return u

        return b, run, False
    if op == 9:
        d = fdp.ConsumeIntInRange(-nd - 1, nd)
        return np.expand_dims(a, d), lambda: t.unsqueeze(d), False
    if op == 10 and nd:
        d = fdp.ConsumeIntInRange(-nd, nd - 1)
        i = fdp.ConsumeIntInRange(-4, 4)
        ok = -a.shape[d] <= i < a.shape[d]
        key = (slice(None),) * (d % nd) + (i,)
        return (a[key] if ok else None), lambda: t.select(d, i), False
    if op == 11 and nd:
        shape = list(a.shape)
        k = fdp.ConsumeIntInRange(0, nd - 1)
        shape[k] = fdp.ConsumeIntInRange(1, 4) if shape[k] == 1 else shape[k]
        return np.broadcast_to(a, shape), lambda: t.expand(*shape), False
    if op == 12:  # fill_ of a copy with a value numpy also takes, or a hostile object (never a crash)
        v = fill_value(fdp, a.dtype)
        b = np.array(
            a
        )  # a copy that is an array (select of a 1-d array gives a numpy scalar: fill ignores it)
        try:
            with np.errstate(all="ignore"):
                b.fill(v)
        except Exception:  # noqa: BLE001 (numpy refuses it: slimtensor may too)
            b = None

        def fill():
            u = t.clone()
            u.fill_(v)
            return u

        return b, fill, False
    return None, None, False


class RaisingIndex:
    """A value whose __index__ raises (as a numpy array of two elements does)."""

    def __index__(self):
        raise ZeroDivisionError("hostile __index__")


def fill_value(fdp: atheris.FuzzedDataProvider, dtype: np.dtype):
    kind = fdp.ConsumeIntInRange(0, 6)
    small = fdp.ConsumeIntInRange(-3, 3)
    if kind == 0:
        return abs(small) if dtype.kind in "ub" else small
    if kind == 1:  # floats; non-finite ones only into float dtypes (into ints: both sides refuse differently)
        f = [0.5, -1.25, float("nan"), float("inf"), -0.0, 1e-40][fdp.ConsumeIntInRange(0, 5)]
        return f if dtype.kind in "fc" or f == f and abs(f) < 2 and dtype.kind not in "ub" else 1.0
    if kind == 2:  # a numpy array of 0..3 elements (one element fills; others are refused)
        n = fdp.ConsumeIntInRange(0, 3)
        return np.full(n, abs(small), dtype=np.int64)
    if kind == 3:
        return np.float64(abs(small)) if fdp.ConsumeBool() else np.array(abs(small))
    if kind == 4:
        return RaisingIndex()
    if kind == 5:
        return [None, "1", b"\x01", object(), [1]][fdp.ConsumeIntInRange(0, 4)]
    return bool(small & 1)


def misaligned_copy(a: np.ndarray, shift: int) -> np.ndarray:
    """A copy of a whose first element lies `shift` bytes past an aligned address (numpy and from_blob may
    hand slimtensor memory at any byte address; the tensor shares it)."""
    raw = np.zeros(a.nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 32 + shift
    b = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    b[...] = a
    return b


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    shape = tuple(fdp.ConsumeIntInRange(0, 5) for _ in range(fdp.ConsumeIntInRange(0, 4)))
    dt = DTYPES[fdp.ConsumeIntInRange(0, len(DTYPES) - 1)]
    a = (np.arange(int(np.prod(shape))) % 7 - 3).astype(dt).reshape(shape)
    t = st.asarray(misaligned_copy(a, fdp.ConsumeIntInRange(0, 7)))
    synced = True  # the two layouts agree while only views were made (copies may choose other strides)
    for _ in range(fdp.ConsumeIntInRange(1, 8)):
        new, make, neg_step = step(fdp, a, t)
        if make is None:
            continue
        try:
            u = make()
        except REFUSALS:
            if new is not None and not neg_step and not step.lenient:
                raise Mismatch(f"slimtensor refused an op numpy accepts (shape {a.shape})") from None
            continue
        if new is None and step.lenient:
            continue
        if new is None or neg_step:
            raise Mismatch(f"slimtensor accepted an op numpy refuses: {u!r}")
        synced = synced and step.view
        same(new, u, synced)
        a, t = new, u


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()

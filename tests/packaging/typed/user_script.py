"""A typed user script: what ordinary code does with slimtensor. tests/packaging/test_typing.py checks it with
mypy and basedpyright (no errors allowed) and runs it (it must work, too)."""

from __future__ import annotations

import numpy as np
import slimtensor as st
from matplotlib.figure import Figure


def image_size(t: st.Tensor) -> tuple[int, int]:
    h, w = t.shape  # a tuple of ints
    return h, w


def main() -> None:
    t: st.Tensor = st.arange(12, dtype=st.float32).reshape(3, 4)
    rows: int = t.shape[0]
    cols: int = t.size(1)
    strides: tuple[int, ...] = t.stride()
    first_stride: int = t.stride(0)
    offset: int = t.storage_offset()
    value: float = float(t[0, 1].item())
    total = t[1, 1].item() + 0
    h, w = image_size(t)
    assert (rows, cols, h, w) == (3, 4, 3, 4) and strides == (4, 1) and first_stride == 4 and offset == 0
    assert value == 1.0 and total == 5.0

    v = t.T[1:, ::2]
    views: list[st.Tensor] = [
        t.permute(1, 0),
        t.transpose(0, 1),
        t[..., None],
        t.view(2, 6),
        t.view(st.int32),
        t.reshape((6, 2)),
        t.expand(2, 3, 4),
        t.unsqueeze(0).squeeze(0),
        t.narrow(0, 1, 2),
    ]
    copies: list[st.Tensor] = [
        v.contiguous(),
        v.clone(),
        t.float(),
        t.half(),
        t.bfloat16(),
        t.long(),
        t.to(st.float64),
        t.to("cpu"),
        t.to(device="cpu", dtype="int32"),
        t.to(t),
    ]
    made: list[st.Tensor] = [
        st.zeros(2, 3),
        st.ones((2, 3), dtype=st.int64),
        st.full((2,), 1.5),
        st.empty_strided((2, 3), (1, 2)),
        st.zeros_like(t),
        st.ones_like(t),
        st.full_like(t, 7),
        st.empty_like(t),
        st.tensor([[1, 2]]),
        st.Tensor([1.0, 2.0]),
        st.asarray(np.ones(3)),
        st.from_numpy(np.zeros(2, np.float32)),
    ]
    same: bool = st.equal(t, t.clone()) and t.equal(t)
    seen: set[st.Tensor] = {t, v}
    by_tensor: dict[st.Tensor, str] = {t: "t"}
    array: np.ndarray = t.numpy()
    assert same and len(seen) == 2 and by_tensor[t] == "t" and array.shape == (3, 4)
    assert len(views) == 9 and len(copies) == 10 and len(made) == 12 and not t.is_cuda

    name: str = t.dtype.name
    itemsize: int = t.dtype.itemsize
    device: st.Device = t.device
    index: int | None = device.index
    assert (name, itemsize, str(device), index) == ("float32", 4, "cpu", 0)

    with st.trace() as tr:
        c = v.contiguous()
    picture: Figure = st.viz.layout(c)
    timeline: Figure = st.viz.lifetimes(tr)
    shared: Figure = st.viz.views(t, t.T, names=["t", "t.T"])
    assert all(isinstance(f, Figure) for f in (picture, timeline, shared))
    load = st.aoti.load  # typed: (path, device=...) -> AOTIModel
    assert callable(load)


if __name__ == "__main__":
    main()
    print("ok")

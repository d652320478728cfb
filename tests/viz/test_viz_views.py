"""st.viz.views: lanes per tensor over one storage, and the overlap row."""

from __future__ import annotations

import numpy as np
import pytest
import slimtensor as st

from ._figures import axes, patches, texts

pytest.importorskip("matplotlib", reason="slimtensor.viz draws with matplotlib")


def test_two_halves_and_a_middle_window():
    t = st.arange(12, dtype=st.float32)
    first, second, middle = t[:6], t[6:], t[4:8]
    fig = st.viz.views(first, second, middle, names=["first", "second", "middle"])
    strip = axes(fig, "storage")
    overlap = patches(strip, "overlap-cell")
    assert len(overlap) == 4  # elements 4..7 are reached by middle and one half
    assert sorted(round(p.get_x()) for p in overlap) == [4, 5, 6, 7]
    assert len(patches(strip, "lane-reached")) == 6 + 6 + 4
    assert len(patches(strip, "lane-unreached")) == 3 * 12 - 16
    assert {"first", "second", "middle"} <= set(texts(strip))
    assert [a.get_title() for a in fig.axes if a.get_label().startswith("logical")] == [
        "first  (6,):(1,) @ 0",
        "second  (6,):(1,) @ 6",
        "middle  (4,):(1,) @ 4",
    ]


def test_a_tensor_and_its_transpose_overlap_everywhere():
    t = st.arange(6, dtype=st.float32).reshape(2, 3)
    fig = st.viz.views(t, t.T)
    assert len(patches(axes(fig, "storage"), "overlap-cell")) == 6


def test_disjoint_views_have_no_overlap():
    t = st.arange(8, dtype=st.float32).reshape(2, 4)
    fig = st.viz.views(t[:, ::2], t[:, 1::2])
    assert patches(axes(fig, "storage"), "overlap-cell") == []


def test_views_refuse_tensors_of_different_storages():
    a, b = st.zeros((2,)), st.zeros((2,))
    with pytest.raises(
        ValueError,
        match=r"views\(\): the tensors must share one storage, got a on #\d+, "
        r"b on #\d+",
    ):
        st.viz.views(a, b)


def test_views_argument_errors():
    t = st.zeros((4,))
    with pytest.raises(TypeError, match=r"views\(\): expected one or more tensors"):
        st.viz.views()
    with pytest.raises(ValueError, match=r"views\(\): names must be a sequence of 2 strings"):
        st.viz.views(t, t[1:], names=["only one"])
    with pytest.raises(TypeError, match=r"views\(\): expected a slimtensor.Tensor, got numpy.ndarray"):
        st.viz.views(t, np.zeros(4))


def test_views_refuse_a_storage_too_long_to_draw_and_say_what_to_do():
    t = st.zeros((600,))
    with pytest.raises(
        ValueError, match=r"views\(\): the storage holds 600 elements, more than max_storage=512"
    ):
        st.viz.views(t[:10], t[5:15])
    fig = st.viz.views(t[:10], t[5:15], max_storage=600)
    assert len(patches(axes(fig, "storage"), "overlap-cell")) == 5

"""st.viz.layout: the pictures hold the cells, colours, hatches and titles the layout implies."""

from __future__ import annotations

import numpy as np
import pytest
import slimtensor as st
from slimtensor.viz._style import element_colour

from ._figures import axes, hatched, patches, renderer, texts

pytest.importorskip("matplotlib", reason="slimtensor.viz draws with matplotlib")


def grid_labels(fig) -> list[int]:
    ax = axes(fig, "logical")
    cells = patches(ax, "logical-cell")
    # every cell has its label at its centre; read them in row-major order of their positions
    by_pos = {
        (round(t.get_position()[1] - 0.5, 3), round(t.get_position()[0] - 0.5, 3)): t.get_text()
        for t in ax.texts
    }
    keyed = sorted((round(c.get_y(), 3), round(c.get_x(), 3)) for c in cells)
    return [int(by_pos[k]) for k in keyed]


def test_contiguous_reaches_every_storage_element():
    t = st.arange(12, dtype=st.float32).reshape(3, 4)
    fig = st.viz.layout(t)
    strip = axes(fig, "storage")
    assert len(patches(strip, "storage-reached")) == 12
    assert hatched(strip) == []
    assert fig.get_suptitle() == "(3, 4):(4, 1) @ 0"
    assert grid_labels(fig) == list(range(12))


def test_strided_view_hatches_the_elements_it_skips():
    v = st.arange(12, dtype=st.float32).reshape(3, 4)[:, ::2]
    fig = st.viz.layout(v)
    strip = axes(fig, "storage")
    unreached = patches(strip, "storage-unreached")
    assert len(unreached) == 6
    assert all(p.get_hatch() == "//" for p in unreached)
    assert len(hatched(strip)) == 6
    assert fig.get_suptitle() == "(3, 2):(4, 2) @ 0"
    assert grid_labels(fig) == [0, 2, 4, 6, 8, 10]
    assert "not contiguous" in fig.texts[-1].get_text()


def test_transpose_labels_follow_the_strides_numpy_computes():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = st.from_numpy(a).T
    fig = st.viz.layout(t)
    assert grid_labels(fig) == a.T.ravel().astype(int).tolist()
    assert fig.get_suptitle() == "(4, 3):(1, 4) @ 0"


def test_cell_colour_is_the_colour_of_its_storage_element():
    v = st.arange(12, dtype=st.float32).reshape(3, 4)[1:, 1::2]
    fig = st.viz.layout(v)
    strip = axes(fig, "storage")
    colours = {round(p.get_x() - 1.0): p.get_facecolor() for p in patches(strip, "storage-reached")}
    for cell, label in zip(
        sorted(patches(axes(fig, "logical"), "logical-cell"), key=lambda c: (c.get_y(), c.get_x())),
        grid_labels(fig),
        strict=True,
    ):
        assert cell.get_facecolor() == colours[label]
        assert cell.get_facecolor()[:3] == pytest.approx(_rgb(element_colour(label)))


def _rgb(hex_colour: str) -> tuple[float, float, float]:
    return tuple(int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))


def test_expand_marks_self_overlap_with_counts():
    t = st.arange(3, dtype=st.float32).expand(4, 3)
    fig = st.viz.layout(t)
    strip = axes(fig, "storage")
    assert len(patches(strip, "storage-overlap")) == 3
    assert texts(strip).count("×4") == 3
    assert len(patches(axes(fig, "logical"), "logical-cell")) == 12
    assert "self-overlapping" in fig.texts[-1].get_text()


def test_offset_and_gaps_are_visible():
    base = st.arange(20, dtype=st.float32)
    v = base.as_strided((2, 3), (6, 2), 5)
    fig = st.viz.layout(v)
    assert fig.get_suptitle() == "(2, 3):(6, 2) @ 5"
    strip = axes(fig, "storage")
    assert len(patches(strip, "storage-unreached")) == 20 - 6
    assert grid_labels(fig) == [5, 7, 9, 11, 13, 15]
    assert "gap elements" in fig.texts[-1].get_text()


def test_rank_three_draws_one_small_multiple_per_leading_index():
    t = st.arange(24, dtype=st.float32).reshape(2, 3, 4)
    fig = st.viz.layout(t)
    grid = axes(fig, "logical")
    assert len(patches(grid, "logical-cell")) == 24
    assert "[0, :, :]" in texts(grid) and "[1, :, :]" in texts(grid)


def test_large_tensor_is_summarised_not_drawn_cell_by_cell():
    t = st.zeros((300, 400), dtype=st.float32)
    fig = st.viz.layout(t)
    grid = axes(fig, "logical")
    assert len(patches(grid, "logical-cell")) == 36  # 3 + 3 rows x 3 + 3 columns
    strip = axes(fig, "storage")
    assert len(strip.patches) == 2  # the storage bar and the span on it
    assert "summarised" in " ".join(texts(strip))


def test_scalar_and_empty_tensors_draw():
    fig = st.viz.layout(st.full((), 7.0, dtype=st.float32))
    assert fig.get_suptitle() == "():() @ 0"
    fig = st.viz.layout(st.empty((0, 3), dtype=st.float32))
    assert patches(axes(fig, "logical"), "logical-cell") == []


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(TypeError, match=r"layout\(\): expected a slimtensor.Tensor, got numpy.ndarray"):
        st.viz.layout(np.zeros(3))
    t = st.zeros((2, 2))
    with pytest.raises(ValueError, match=r"layout\(\): max_cells must be at least 1, got 0"):
        st.viz.layout(t, max_cells=0)
    with pytest.raises(TypeError, match=r"layout\(\): max_storage must be an int, got str"):
        st.viz.layout(t, max_storage="9")


def test_pictures_are_plain_figures_that_display_as_svg():
    from matplotlib.figure import Figure

    fig = st.viz.layout(st.zeros((2, 2)))
    assert isinstance(fig, Figure)
    svg = fig._repr_svg_()
    assert svg.startswith("<svg") and "(2, 2):(2, 1) @ 0" in svg
    import pickle

    assert isinstance(pickle.loads(pickle.dumps(fig)), Figure)


def test_memory_walk_goes_down_columns_after_a_transpose():
    t = st.arange(12, dtype=st.float32).reshape(3, 4)

    def walk(fig):
        lines = [ln for ln in axes(fig, "logical").lines if ln.get_gid() == "memory-walk"]
        assert len(lines) == 1
        return list(lines[0].get_xdata()), list(lines[0].get_ydata())

    xs, ys = walk(st.viz.layout(t))
    assert len(xs) == 12 and len(set(ys[:4])) == 1 and len(set(xs[:4])) == 4  # along a row first
    xs, ys = walk(st.viz.layout(t.T))
    assert len(xs) == 12 and len(set(xs[:4])) == 1 and len(set(ys[:4])) == 4  # down a column first
    xs, _ = walk(st.viz.layout(st.arange(3, dtype=st.float32).expand(4, 3)))
    assert len(xs) == 3  # shared elements are visited once


# --- readable pictures: type sizes, label fit, colours, captions -------------------------------------------


def _drawn_texts(fig):
    from matplotlib.text import Text

    renderer(fig)
    return [t for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]


@pytest.mark.parametrize(
    "make",
    [
        lambda: st.arange(12, dtype=st.float32).reshape(3, 4)[:, ::2],
        lambda: st.arange(24, dtype=st.float32).reshape(2, 3, 4).permute(2, 0, 1),
        lambda: st.arange(3, dtype=st.float32).expand(4, 3),
        lambda: st.zeros((1024, 1024), dtype=st.float32)[::2, 8:],
    ],
    ids=["slice", "rank3", "expand", "large"],
)
def test_no_text_is_smaller_than_the_readable_minimum(make):
    from slimtensor.viz._display import DISPLAY_SCALE
    from slimtensor.viz._style import MIN_PT

    fig = st.viz.layout(make())
    for t in _drawn_texts(fig):
        # at least 9 pt (12 px at 100% zoom) in the notebook, after the inline display's scale
        assert t.get_fontsize() >= MIN_PT and MIN_PT * DISPLAY_SCALE >= 9.0, (t.get_text(), t.get_fontsize())


def test_large_grid_labels_fit_inside_their_cells():
    big = st.zeros((1024, 1024), dtype=st.float32)[::2, 8:]
    fig = st.viz.layout(big)
    ax = axes(fig, "logical")
    r = renderer(fig)
    cells = patches(ax, "logical-cell")
    labels = [t for t in ax.texts if t.get_gid() == "cell-label"]
    assert len(labels) == len(cells) == 36 and max(len(t.get_text()) for t in labels) == 7  # 1047551
    for cell, label in zip(cells, labels, strict=True):
        box, text = cell.get_window_extent(r), label.get_window_extent(r)
        assert box.x0 <= text.x0 and text.x1 <= box.x1 and box.y0 <= text.y0 and text.y1 <= box.y1, (
            label.get_text()
        )


def test_element_colours_are_distinct_for_the_first_24_elements():
    from matplotlib.colors import to_rgb

    colours = [to_rgb(element_colour(e)) for e in range(24)]

    def distance(a, b):  # "redmean" colour difference on 0..255
        r = (a[0] + b[0]) / 2 * 255
        d = [(x - y) * 255 for x, y in zip(a, b, strict=True)]
        return ((2 + r / 256) * d[0] ** 2 + 4 * d[1] ** 2 + (3 - r / 256) * d[2] ** 2) ** 0.5

    worst = min(distance(a, b) for i, a in enumerate(colours) for b in colours[i + 1 :])
    assert worst > 60, worst
    assert element_colour(0) != element_colour(8) and element_colour(0) == element_colour(24)
    white = min(distance(c, (1.0, 1.0, 1.0)) for c in colours)
    assert white > 100, white  # never mistaken for a hatched (unreached) white cell


def test_a_view_borrowed_from_numpy_shows_the_whole_array_as_its_storage():
    base = np.arange(12, dtype=np.float32)
    a = base.reshape(3, 4)[:, ::2]
    t = st.from_numpy(a)
    assert t.storage().nbytes == 48 and t.storage_offset() == 0 and t.stride() == (4, 2)
    fig = st.viz.layout(t)
    assert "storage 12 elements" in fig.texts[-1].get_text()
    assert len(patches(axes(fig, "storage"), "storage-unreached")) == 6
    tail = st.from_numpy(base[5:9])
    assert tail.storage_offset() == 5 and tail.storage().nbytes == 48 and tail.tolist() == [5, 6, 7, 8]
    assert tail.data_ptr() == base[5:].ctypes.data
    tail[0] = -1.0
    assert base[5] == -1.0  # still the same memory
    ro = base[2:4]
    ro.flags.writeable = False
    assert st.from_numpy(ro).is_read_only  # a read-only view of a writable base stays read-only

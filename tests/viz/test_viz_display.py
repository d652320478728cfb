"""Rich display: the SVG picture next to the text repr, text only above the limit or when switched off."""

from __future__ import annotations

import pytest
import slimtensor as st

pytest.importorskip("matplotlib", reason="the picture is drawn with matplotlib")


@pytest.fixture(autouse=True)
def restore_display():
    before = st.set_display()
    yield
    st.set_display(before.mode, max_elements=before.max_elements, max_storage=before.max_storage)


def test_small_tensor_displays_picture_and_text():
    t = st.arange(6, dtype=st.float32).reshape(2, 3).T
    html = t._repr_html_()
    assert html is not None
    assert html.count("<svg") == 1 and "<?xml" not in html
    assert "(3, 2):(1, 3) @ 0" in html
    assert "slimtensor-repr" in html and html.index("<svg") < html.index("slimtensor-repr")


def _picture_width(html: str) -> tuple[int, float]:
    """(the picture cell's width attribute in px, the SVG's width in pt)."""
    import re

    cell = int(re.search(r'class="slimtensor-layout"[^>]*\bwidth="(\d+)"', html).group(1))
    svg = float(re.search(r'<svg[^>]*\bwidth="([\d.]+)pt"', html).group(1))
    return cell, svg


@pytest.mark.parametrize(
    "make, beside",
    [
        (lambda: st.arange(12, dtype=st.float32).reshape(3, 4), True),
        (lambda: st.arange(24, dtype=st.float32).reshape(2, 3, 4).permute(2, 0, 1), False),
    ],
    ids=["small: text beside", "wide: text below"],
)
def test_the_picture_keeps_its_width_and_wide_ones_put_the_text_below(make, beside):
    """In JupyterLab the table shrank pictures to share the row with the text (7 px labels): the picture's
    cell carries the picture's width, and a picture too wide to leave the text a column gets a row of its own."""
    from slimtensor.viz._display import MAX_BESIDE_TEXT_PX, MAX_DISPLAY_PT

    html = make()._repr_html_()
    cell, svg = _picture_width(html)
    assert cell == round(svg * 4 / 3) and svg <= MAX_DISPLAY_PT
    assert (cell <= MAX_BESIDE_TEXT_PX) == beside
    assert html.count("<tr") == (1 if beside else 2)


def test_text_mode_and_size_limit_fall_back_to_text():
    t = st.zeros((4, 4))
    st.set_display("text")
    assert t._repr_html_() is None
    st.set_display("picture", max_elements=10)
    assert t._repr_html_() is None
    assert st.zeros((2, 5))._repr_html_() is not None


def test_set_display_rejects_bad_values():
    with pytest.raises(
        ValueError, match=r"set_display\(\): mode must be one of 'picture', 'text', got 'svg'"
    ):
        st.set_display("svg")
    with pytest.raises(ValueError, match=r"set_display\(\): max_elements must be a positive int, got 0"):
        st.set_display(max_elements=0)
    with pytest.raises(TypeError, match=r"set_display\(\): mode must be a str, got bool"):
        st.set_display(False)
    with pytest.raises(TypeError, match=r"set_display\(\): max_storage must be an int, got float"):
        st.set_display(max_storage=2.5)

"""st.viz.timeline: stream work as bars against time, one row per stream, marks as labelled ticks."""

from __future__ import annotations

import pytest
import slimtensor as st

pytest.importorskip("matplotlib", reason="slimtensor.viz draws with matplotlib")


def test_one_row_per_stream_one_bar_per_span_and_the_marks():
    spans = [
        ("stream A", "upload", 0.0, 1.2),
        ("stream B", "upload", 0.1, 1.4),
        ("stream A", "transpose", 1.2, 1.6),
    ]
    fig = st.viz.timeline(spans, [("stream B", "waits", 1.6)], title="two streams")
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["stream A", "stream B"]
    bars = [p for p in ax.patches]
    assert [(round(b.get_x(), 3), round(b.get_width(), 3)) for b in bars] == [
        (0.0, 1.2),
        (0.1, 1.3),
        (1.2, 0.4),
    ]
    assert [round(b.get_y() + b.get_height() / 2) for b in bars] == [0, 1, 0]
    labels = [t.get_text().strip() for t in ax.texts]
    assert labels.count("upload") == 2 and "transpose" in labels and "waits" in labels
    assert ax.get_title(loc="left") == "two streams"


def test_bad_spans_are_refused_clearly():
    with pytest.raises(TypeError, match=r"spans\[0\] must be a tuple of 4"):
        st.viz.timeline([("s", 0.0, 1.0)])
    with pytest.raises(TypeError, match="times are numbers"):
        st.viz.timeline([("s", "x", "0", 1.0)])
    with pytest.raises(ValueError, match=r"ends at 1.0 ms, before it starts at 2.0 ms"):
        st.viz.timeline([("s", "x", 2.0, 1.0)])
    assert st.viz.timeline([]).axes[0].texts[0].get_text() == "nothing to draw"


def test_spans_too_short_for_their_label_are_numbered_and_named_below():
    spans = [("A", "a long upload", 0.0, 100.0), ("B", "tiny kernel", 50.0, 50.1)]
    fig = st.viz.timeline(spans)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert "a long upload" in labels and "tiny kernel" not in labels and "1" in labels
    assert fig.get_supxlabel() == "short spans: 1: tiny kernel (B, 0.100 ms)"

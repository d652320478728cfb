"""st.viz.benchmark(results): one bandwidth panel per layout with spread bands, and ratio bars per peer."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from slimtensor.viz.benchmark import benchmark  # noqa: E402


def test_copy_figure_has_a_panel_per_layout_and_ratio_bars(tiny_run):
    path, results, _ = tiny_run
    fig = benchmark(results)
    assert isinstance(fig, Figure)
    panels, ratio_ax = fig.axes[:-1], fig.axes[-1]
    assert [ax.get_title() for ax in panels] == ["contiguous → contiguous", "transposed source → contiguous"]
    for ax in panels:
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        labels = {line.get_label() for line in ax.get_lines()}
        assert {"slimtensor", "numpy"} <= labels
        assert any(isinstance(c, PolyCollection) for c in ax.collections), "a spread band per library"
    bars = [c for c in ratio_ax.containers if isinstance(c, BarContainer)]
    assert len(bars) >= 1 and len(bars[0]) == 2  # one bar per case and peer
    assert ratio_ax.get_yscale() == "log"
    # the same from the file
    assert len(benchmark(str(path)).axes) == len(fig.axes)


def test_conversion_and_call_figures(tiny_run):
    _, results, _ = tiny_run
    fig = benchmark(results, dtype="float32-bfloat16")
    assert [ax.get_title() for ax in fig.axes[:-1]] == ["transposed source → contiguous"]
    calls = benchmark(results, kind="call")
    bars = [c for c in calls.axes[0].containers if isinstance(c, BarContainer)]
    assert len(bars) >= 2 and len(bars[0]) == 2  # slimtensor and numpy, for item and permute


def test_bad_arguments_say_what_is_available(tiny_run):
    _, results, _ = tiny_run
    with pytest.raises(ValueError, match="float32-float32"):
        benchmark(results, dtype="int64-float32")
    with pytest.raises(ValueError, match="kind must be"):
        benchmark(results, kind="pie")
    with pytest.raises(TypeError, match="expected the results dict"):
        benchmark([1, 2, 3])


def _without(results, lib):
    import copy

    data = copy.deepcopy(results)
    for case in data["cases"]:
        case["results"].pop(lib, None)
        case["ratios"].pop(lib, None)
    return data


def test_legends_list_only_the_libraries_drawn_in_their_colours(tiny_run):
    from slimtensor.viz.benchmark import LIB_COLOURS

    _, results, _ = tiny_run
    no_torch = _without(results, "torch")
    for fig in (benchmark(no_torch), benchmark(no_torch, kind="call")):
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None:
                continue
            names = [t.get_text() for t in legend.get_texts()]
            assert "torch" not in names and "vs torch" not in names, names
            for name, handle in zip(names, legend.legend_handles, strict=True):
                lib = name.removeprefix("vs ")
                colour = handle.get_color() if hasattr(handle, "get_color") else handle.get_facecolor()
                from matplotlib.colors import to_hex

                assert to_hex(colour) == LIB_COLOURS[lib], (name, colour)


def test_every_plot_says_what_it_measures_in_readable_type(tiny_run):
    _, results, _ = tiny_run
    for fig in (benchmark(results), benchmark(results, kind="call")):
        assert fig.get_suptitle()
        assert fig.get_figwidth() <= 9.6  # a notebook's output area crops wider pictures
        for ax in fig.axes:
            assert ax.get_title() and ax.get_ylabel(), ax
            for label in [
                *ax.get_xticklabels(),
                *ax.get_yticklabels(),
                ax.xaxis.label,
                ax.yaxis.label,
                ax.title,
            ]:
                if label.get_text():
                    assert label.get_fontsize() >= 8, (label.get_text(), label.get_fontsize())

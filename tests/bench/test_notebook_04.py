"""notebooks/04_benchmarks: paired with its .ipynb, runs the quick suite and draws the quick and stored results."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "04_benchmarks"


def test_percent_source_and_ipynb_are_in_sync():
    jupytext = pytest.importorskip("jupytext", reason="pairing is checked with jupytext")
    py, ipynb = jupytext.read(f"{NOTEBOOK}.py"), jupytext.read(f"{NOTEBOOK}.ipynb")
    assert [(c.cell_type, c.source.strip()) for c in py.cells] == [
        (c.cell_type, c.source.strip()) for c in ipynb.cells
    ], "notebooks/04_benchmarks.py and .ipynb differ: run `jupytext --sync notebooks/04_benchmarks.py`"
    assert ipynb.metadata.get("kernelspec", {}).get("name") == "slimtensor"


@pytest.mark.slow
def test_notebook_runs_and_draws(tmp_path):
    pytest.importorskip("nbclient", reason="executing notebooks needs nbclient (requirements/test.txt)")
    pytest.importorskip("ipykernel", reason="executing notebooks needs ipykernel (requirements/test.txt)")
    from tests.notebooks._kernel import execute, install_kernel_spec

    nb = execute(Path(f"{NOTEBOOK}.ipynb"), tmp_path, install_kernel_spec(tmp_path / "jupyter"))
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert [o for o in outputs if o.get("output_type") == "error"] == []
    pictures = sum(
        1 for o in outputs if "image/svg+xml" in o.get("data", {}) or "image/png" in o.get("data", {})
    )
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "call/permute" in text  # the quick run's table
    stored = "no stored results found" not in text
    assert pictures >= (4 if stored else 2)

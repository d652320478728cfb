"""Every teaching notebook runs in quick mode on the slimtensor kernel and shows the pictures it promises."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ._kernel import execute, install_kernel_spec

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
OURS = [
    "01_strides_and_views",
    "02_memory_lifetimes",
    "03_devices_and_plugins",
    "05_aoti_without_libtorch",
    "06_cuda_streams_and_events",
]

# At least this many pictures (layout SVGs through rich display, or returned Figures) per notebook.
MIN_PICTURES = {
    "01_strides_and_views": 8,
    "02_memory_lifetimes": 3,
    "03_devices_and_plugins": 1,
    "05_aoti_without_libtorch": 0,
    "06_cuda_streams_and_events": 0,  # its pictures need a GPU; elsewhere every cell says so
}


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    pytest.importorskip("nbclient", reason="executing notebooks needs nbclient (requirements/test.txt)")
    pytest.importorskip("ipykernel", reason="executing notebooks needs ipykernel (requirements/test.txt)")
    return install_kernel_spec(tmp_path_factory.mktemp("jupyter"))


@pytest.fixture(scope="module")
def executed(kernels, tmp_path_factory):
    """Execute each notebook once per test run; returns name -> executed notebook."""
    cache: dict = {}

    def run(name: str):
        if name not in cache:
            cache[name] = execute(NOTEBOOKS / f"{name}.ipynb", tmp_path_factory.mktemp(name), kernels)
        return cache[name]

    return run


def pictures(nb) -> int:
    n = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "image/svg+xml" in data or "image/png" in data or "<svg" in data.get("text/html", ""):
                n += 1
    return n


def stream_text(nb) -> str:
    return "".join(
        out.get("text", "")
        for c in nb.cells
        for out in c.get("outputs", [])
        if out.get("output_type") == "stream"
    )


@pytest.mark.parametrize("name", OURS)
def test_percent_source_and_ipynb_are_in_sync(name):
    jupytext = pytest.importorskip("jupytext", reason="pairing is checked with jupytext")
    py = jupytext.read(NOTEBOOKS / f"{name}.py")
    ipynb = jupytext.read(NOTEBOOKS / f"{name}.ipynb")
    strip = [(c.cell_type, c.source.strip()) for c in py.cells]
    assert strip == [(c.cell_type, c.source.strip()) for c in ipynb.cells], (
        f"notebooks/{name}.py and .ipynb differ: run `jupytext --sync notebooks/{name}.py`"
    )
    assert ipynb.metadata.get("kernelspec", {}).get("name") == "slimtensor"


@pytest.mark.slow
@pytest.mark.parametrize("name", OURS)
def test_notebook_runs_and_draws(name, executed):
    nb = executed(name)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    assert pictures(nb) >= MIN_PICTURES[name]
    text = stream_text(nb)
    # a cell that cannot run here says why, in one recognisable line
    for line in re.findall(r"^skipped: .*$", text, flags=re.M):
        assert len(line) > len("skipped: ") + 10, f"a skip without a reason in {name}: {line!r}"


def _html_outputs(nb) -> list[str]:
    return [o.get("data", {}).get("text/html", "") for c in nb.cells for o in c.get("outputs", [])]


@pytest.mark.slow
def test_notebook_01_pictures_hold_the_layouts(executed):
    nb = executed("01_strides_and_views")
    html = _html_outputs(nb)

    def picture(title: str) -> str:
        found = [h for h in html if "<svg" in h and title in h]
        assert found, f"no layout picture titled {title!r} in notebook 01"
        return found[0]

    # hatched (unreached) storage cells: t[:, ::2] skips 6 of 12, t[1:, 1:] skips 6 (0-4 and 8), t.T none
    assert len(re.findall(r"fill: ?url\(#h", picture("(3, 2):(4, 2) @ 0"))) == 6
    assert len(re.findall(r"fill: ?url\(#h", picture("(2, 3):(4, 1) @ 5"))) == 6
    assert len(re.findall(r"fill: ?url\(#h", picture("(4, 3):(1, 4) @ 0"))) == 0
    # expand: three storage elements, each reached four times
    assert picture("(4, 3):(0, 1) @ 0").count("×4") == 3


@pytest.mark.slow
def test_notebook_05_runs_the_model_or_says_why_not(executed):
    text = stream_text(executed("05_aoti_without_libtorch"))
    # the CUDA section (4) runs where a GPU is, and says plainly why not elsewhere
    cuda = re.search(r"CUDA section: (runs|skipped: .+)", text)
    assert cuda, text
    if cuda.group(1) == "runs":
        assert "matches torch on the GPU: True" in text and "weights the model allocated:" in text
    if "skipped: no Python with torch was found" in text:
        pass
    else:
        assert "matches torch: True" in text
        assert "torch imported in this kernel: False" in text
        assert "compiling TinyNet" in text  # long work says what it does
        assert "libtorch mapped into this kernel: none" in text and "libtorch.so" not in text
        # every handle is deleted within the run: the outputs' handles are taken back into plain tensors
        held = re.search(r"handles left after the run: (\d+) with (\d+) outputs alive", text)
        assert held and held.group(1) == "0" and int(held.group(2)) >= 1, text


def test_jupytext_sync_rewrites_no_tracked_file(tmp_path):
    """`jupytext --sync` (what an editor on the pair does) leaves both files of every pair byte for byte."""
    pytest.importorskip("jupytext", reason="pairing is checked with jupytext")
    import shutil
    import subprocess
    import sys

    for path in sorted(NOTEBOOKS.glob("*.py")) + sorted(NOTEBOOKS.glob("*.ipynb")):
        shutil.copy(path, tmp_path / path.name)
    for py in sorted(tmp_path.glob("*.py")):
        proc = subprocess.run(
            [sys.executable, "-m", "jupytext", "--sync", str(py)], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
    changed = [
        p.name for p in sorted(tmp_path.iterdir()) if p.read_bytes() != (NOTEBOOKS / p.name).read_bytes()
    ]
    assert changed == [], f"jupytext --sync rewrites {changed}: fix their jupytext header metadata"


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["02_memory_lifetimes", "03_devices_and_plugins", "06_cuda_streams_and_events"]
)
def test_cuda_sections_run_or_say_plainly_why_not(name, executed):
    import slimtensor as st

    text = stream_text(executed(name))
    cuda = next((d for d in st.devices() if d.name == "cuda"), None)
    if cuda is not None and cuda.available:
        assert "skipped: no usable CUDA device" not in text
    else:
        assert "skipped: no usable CUDA device here (" in text


def test_every_cuda_section_is_found_by_the_gpu_runner():
    from tests.notebooks.cuda_sections import cuda_section

    for name in (
        "02_memory_lifetimes",
        "03_devices_and_plugins",
        "04_benchmarks",
        "06_cuda_streams_and_events",
    ):
        code = cuda_section(NOTEBOOKS / f"{name}.py")
        assert "cuda" in code and "SLIMTENSOR_NOTEBOOK_FIGURES" in code, name


@pytest.mark.slow
def test_notebook_03_prints_the_installed_plugin_header(executed):
    text = stream_text(executed("03_devices_and_plugins"))
    assert "device_plugin.h:" in text and "struct_size" in text and "skipped: slimtensor/c" not in text

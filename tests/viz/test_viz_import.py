"""slimtensor.viz costs nothing at import: matplotlib is imported on the first picture, not before."""

from __future__ import annotations

import subprocess
import sys


def test_import_slimtensor_does_not_import_matplotlib():
    code = (
        "import sys, slimtensor as st\n"
        "assert 'matplotlib' not in sys.modules, 'import slimtensor imported matplotlib'\n"
        "assert callable(st.viz.layout) and callable(st.trace) and callable(st.set_display)\n"
        "assert st.Tensor._repr_html_ is not None\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr

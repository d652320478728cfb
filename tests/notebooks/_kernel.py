"""Run a notebook on the project's Jupyter kernel ("slimtensor") bound to the interpreter running pytest."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

KERNEL_NAME = "slimtensor"


def install_kernel_spec(root: Path, display_name: str = "Python (slimtensor, tests)") -> Path:
    """Write a "slimtensor" kernel spec that starts this very interpreter; returns the kernels dir.

    The tests do not depend on `make lab` having registered the kernel in the user's Jupyter dirs, so a
    fresh clone runs its notebooks on the test environment.
    """
    kernels = root / "kernels"
    spec = kernels / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": display_name,
                "language": "python",
                "env": {"SLIMTENSOR_QUICK": "1", "MPLBACKEND": "Agg", "PYDEVD_DISABLE_FILE_VALIDATION": "1"},
            }
        )
    )
    return kernels


def execute(path: Path, workdir: Path, kernels: Path, timeout: int = 300):
    """Execute the notebook at ``path`` (.ipynb) and return the executed nbformat node."""
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    ksm = KernelSpecManager(kernel_dirs=[str(kernels)])
    km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=ksm)
    env = dict(os.environ, SLIMTENSOR_QUICK="1")
    client = NotebookClient(
        nb, km=km, timeout=timeout, kernel_name=KERNEL_NAME, resources={"metadata": {"path": str(workdir)}}
    )
    client.execute(env=env)
    return nb

"""Fixtures of tests/aoti: the compiled test models and libslimtensor through ctypes."""

from __future__ import annotations

import pytest

from ._helpers import EXTRA_NAMES, MODEL_NAMES, TORCH_VERSION, compile_models, have_torch


@pytest.fixture(scope="session")
def model_dir():
    """The folder of the compiled test models (compiled once per torch version and model source)."""
    if not have_torch():
        pytest.skip(
            f"needs torch=={TORCH_VERSION} (pip install -r requirements/test.txt) to compile the test models"
        )
    return compile_models(MODEL_NAMES + EXTRA_NAMES)


@pytest.fixture(scope="session")
def shim():
    """libslimtensor through ctypes (slimtensor.aoti._lib)."""
    from slimtensor.aoti import _lib

    return _lib.lib()

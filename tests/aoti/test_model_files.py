"""Hostile model files (issue 14): a .pt2 whose weights blob or metadata was tampered with, a directory."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from ._helpers import load_reference


def _rewrite(src, dst, change):
    """Copies the zip src to dst, passing each member's (name, bytes) through change (None drops it)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info))
            if data is not None:
                zout.writestr(info.filename, data)


@pytest.mark.parametrize(
    "how",
    [
        ("emptied", lambda b: b""),
        ("cut short", lambda b: b[: len(b) // 2]),
        ("cut by one byte", lambda b: b[:-1]),
        ("grown", lambda b: b + b"\0" * 64),
        ("replaced by another model's", lambda b: b"\0" * 7),
    ],
    ids=lambda h: h[0],
)
def test_tampered_weights_blob_is_refused(model_dir, tmp_path, how):
    """Issue 14: such a blob loaded and ran with wrong weights (an emptied one was read past its end)."""
    from slimtensor import aoti

    _, cut = how
    bad = tmp_path / "bad.pt2"
    _rewrite(f"{model_dir}/linear_blob.pt2", bad, lambda n, b: cut(b) if n.endswith("_weights.blob") else b)
    before = aoti.live_handles()
    with pytest.raises(
        ValueError, match=r"weights blob .* has \d+ bytes but the model's constants need exactly 512"
    ):
        aoti.load(bad)
    assert aoti.live_handles() == before  # the container made before the check was deleted


def test_intact_weights_blob_still_loads(model_dir):
    from slimtensor import aoti

    inputs, expected = load_reference(model_dir, "linear_blob")[0]
    with aoti.load(f"{model_dir}/linear_blob.pt2") as m:
        np.testing.assert_allclose(m.run_numpy(*inputs)[0], expected[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "meta, words",
    [
        (b"[1, 2, 3]", ["must be a JSON object", "list"]),
        (b'"cpu"', ["must be a JSON object", "str"]),
        (b'{"AOTI_DEVICE_KEY": 5}', ["AOTI_DEVICE_KEY", "must be strings"]),
        (b"{not json", ["not valid JSON"]),
    ],
)
def test_bad_metadata_is_a_clear_error(model_dir, tmp_path, meta, words):
    """Issue 14: metadata that is a JSON list gave AttributeError: 'list' object has no attribute 'get'."""
    from slimtensor import aoti

    bad = tmp_path / "bad.pt2"
    _rewrite(f"{model_dir}/linear.pt2", bad, lambda n, b: meta if n.endswith("wrapper_metadata.json") else b)
    with pytest.raises(ValueError) as e:
        aoti.load(bad)
    for w in ["slimtensor.aoti.load()", "damaged", *words]:
        assert w in str(e.value), str(e.value)


def test_loading_a_directory_says_what_to_pass(tmp_path):
    from slimtensor import aoti

    with pytest.raises(IsADirectoryError, match=r"is a directory; pass the \.pt2 file"):
        aoti.load(tmp_path)

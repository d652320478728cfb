"""slimtensor.bench's AOTI cases need nothing from a checkout (Note [AOTI bench inputs] in bench/cases_aoti.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CODE = r"""
import json, os, sys
from slimtensor.bench import cases_aoti
from slimtensor.bench._case import Libs
cs = cases_aoti.cases(Libs.load(with_torch=False), quick=True)
print(json.dumps({c.id: c.skipped for c in cs}))
"""


def _cases(cwd, env_extra):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SLIMTENSOR_BENCH_AOTI_MODELS", "SLIMTENSOR_BENCH_AOTI_ZOO")
    }
    env.update(env_extra)
    # -I: no current folder, no user site: only the installed package
    proc = subprocess.run(
        [sys.executable, "-I", "-c", CODE], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    import json

    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_cases_outside_a_checkout_ship_their_harness_and_say_why_models_are_absent(tmp_path):
    cases = _cases(str(tmp_path), {})
    shim = [i for i in cases if i.startswith("aoti/shim")]
    assert shim and all(cases[i] is None for i in shim if i != "aoti/shim_calls"), cases
    assert "SLIMTENSOR_BENCH_AOTI_MODELS" in cases["aoti/call"]
    assert cases["aoti/model_latency"]  # skipped with a reason (no torch here, or no models)


def test_models_come_from_the_named_folder(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    CACHE = os.path.join(root, ".cache", "aoti-models")
    folders = (
        sorted(
            p
            for p in (os.path.join(CACHE, d) for d in os.listdir(CACHE))
            if os.path.isfile(os.path.join(p, "pointwise.pt2"))
        )
        if os.path.isdir(CACHE)
        else []
    )
    if not folders:
        pytest.skip("the AOTI tests have not compiled their models here")
    cases = _cases(str(tmp_path), {"SLIMTENSOR_BENCH_AOTI_MODELS": folders[-1]})
    assert cases.get("aoti/call/pointwise", "absent") is None, cases
    missing = _cases(str(tmp_path), {"SLIMTENSOR_BENCH_AOTI_MODELS": str(tmp_path / "nowhere")})
    assert "is not a folder" in missing["aoti/call"]

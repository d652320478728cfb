"""slimtensor on a real MPS device (a Mac with Metal). Skipped with the device's reason elsewhere; under
SLIMTENSOR_REQUIRE_MPS=1 (the self-hosted macOS CI job) they fail instead. Never run so far: no Mac was
available where the plugin was written (docs/plugins.md, "Metal"). The device-parametrised core tests
(tests/core/test_device_tensors.py) also run on "mps:0" when it is available or required."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import slimtensor as st

pytestmark = pytest.mark.needs_mps


def _metal_stats() -> dict[str, int]:
    import slimtensor_metal

    return slimtensor_metal.memory_stats()


def test_round_trip_and_views_alias() -> None:
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = st.from_numpy(a).to("mps")
    assert str(t.device) == "mps:0"
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    v = t[1:, ::2]  # a view at an offset: the same MTLBuffer, a byte offset beside it
    assert v.storage().id == t.storage().id
    np.testing.assert_array_equal(v.cpu().numpy(), a[1:, ::2])
    v.fill_(7.0)
    b = a.copy()
    b[1:, ::2] = 7.0
    np.testing.assert_array_equal(t.cpu().numpy(), b)
    with pytest.raises(RuntimeError):
        t.data_ptr()  # an MTLBuffer handle is not an address


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32", "int64", "bool", "float64"])
def test_strided_copy_converts_like_the_cpu(dtype: str) -> None:
    a = (np.arange(60, dtype=np.float32).reshape(3, 4, 5) - 30) / 7
    src = st.from_numpy(a).to("mps").permute(2, 0, 1)
    got = src.to(dtype=getattr(st, dtype)).cpu()
    want = st.from_numpy(a).permute(2, 0, 1).to(dtype=getattr(st, dtype))
    np.testing.assert_array_equal(got.to(dtype=st.float64).numpy(), want.to(dtype=st.float64).numpy())


def test_memory_returns_to_baseline_and_cache_empties() -> None:
    gc.collect()
    before = st.memory_stats("mps")["live_bytes"]
    ts = [st.empty((1024,), device="mps") for _ in range(8)]
    assert st.memory_stats("mps")["live_bytes"] > before
    del ts
    gc.collect()
    assert st.memory_stats("mps")["live_bytes"] == before
    st.synchronize("mps")
    import slimtensor_metal

    slimtensor_metal.empty_cache()
    assert _metal_stats()["cached_bytes"] == 0


@pytest.mark.needs_torch
def test_dlpack_round_trip_with_torch_mps(torch) -> None:
    if not torch.backends.mps.is_available():
        pytest.fail("slimtensor sees an MPS device but torch.backends.mps.is_available() is False")
    x = torch.arange(12, dtype=torch.float32, device="mps").reshape(3, 4)[1:]
    t = st.from_dlpack(x)
    assert str(t.device) == "mps:0"
    np.testing.assert_array_equal(t.cpu().numpy(), x.cpu().numpy())
    back = torch.from_dlpack(t)
    assert back.device.type == "mps"
    torch.testing.assert_close(back.cpu(), x.cpu())

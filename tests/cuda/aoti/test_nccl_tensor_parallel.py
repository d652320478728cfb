"""A compiled tensor-parallel transformer block (tests/aoti/tensor_parallel_zoo.py) on CUDA with NCCL, world
size 1: its two all_reduce calls go through the c10d shims to the NCCL group "0", and its output equals the
unsharded block's (torch eager on the same GPU, recorded at compile time). Two ranks: test_nccl_two_gpus.py."""

from __future__ import annotations

import gc
import tempfile

import numpy as np
import pytest

pytestmark = pytest.mark.needs_cuda

TOL = (5e-3, 1e-3)  # float32 with matrix products (cuBLASLt picks other algorithms than eager)


def test_tp_block_world_size_1_matches_the_unsharded_block(cuda_models, tmp_path):
    import slimtensor as st
    import slimtensor.distributed as dist
    import slimtensor_cuda as stc
    from slimtensor import _C, aoti
    from slimtensor.aoti import _elf, _package
    from slimtensor_cuda import _nccl

    try:
        _nccl.version()
    except RuntimeError as exc:
        pytest.skip(f"NCCL is not usable here: {exc}")
    m = cuda_models("tp_block_0of1")["tp_block_0of1"]
    with tempfile.TemporaryDirectory() as d:
        called = set(_elf.undefined_symbols(_package.open_model_files(m.path, d).so_path))
    assert {"aoti_torch_cpu__c10d_functional_wait_tensor"} <= called
    assert called & {
        "aoti_torch_cpu__c10d_functional_all_reduce",
        "aoti_torch_cpu__c10d_functional_all_reduce_",
    }
    gc.collect()
    stc.synchronize()
    before = (st.memory_stats("cuda").get("live_bytes", 0), stc.memory_allocated(), aoti.live_handles())
    dist.init_process_group("nccl", rank=0, world_size=1, init_method=f"file://{tmp_path}", timeout=60)
    try:
        with aoti.load(m.path, device="cuda") as model:
            x = st.asarray(m.inputs[0]).to("cuda")
            for _ in range(2):  # a second run reuses the group
                outs = model(x)
                y = outs[0] if isinstance(outs, (tuple, list)) else outs
                np.testing.assert_allclose(y.cpu().numpy(), m.outputs[0], rtol=TOL[0], atol=TOL[1])
            assert _C._collective_counts() == (1, 0), "every all_reduce was waited for"
            del x, y, outs
    finally:
        dist.destroy_process_group()
    gc.collect()
    stc.synchronize()
    assert _C._collective_counts() == (0, 0)
    assert _nccl.live_communicators() == 0
    after = (st.memory_stats("cuda").get("live_bytes", 0), stc.memory_allocated(), aoti.live_handles())
    assert after == before, "no device memory or handle left behind"

"""Real AOTInductor models (compiled by torch in a subprocess, cached) run on slimtensor and match eager."""

from __future__ import annotations

import numpy as np
import pytest

from ._helpers import MODEL_NAMES, load_reference, tolerance


def _compare(got, expected, name, i):
    got = np.asarray(got)
    assert got.shape == expected.shape, f"{name} output {i}: shape {got.shape} != {expected.shape}"
    assert got.dtype == expected.dtype, f"{name} output {i}: dtype {got.dtype} != {expected.dtype}"
    tol = tolerance(expected.dtype)
    g, e = got.astype(np.float64), expected.astype(np.float64)
    if tol == 0:
        np.testing.assert_array_equal(g, e, err_msg=f"{name} output {i}")
    else:
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=f"{name} output {i}")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_matches_eager_numpy_path(model_dir, name):
    from slimtensor import aoti

    before = aoti.live_handles()
    with aoti.load(f"{model_dir}/{name}.pt2") as model:
        for inputs, expected in load_reference(model_dir, name):
            outs = model.run_numpy(*inputs)
            assert len(outs) == len(expected)
            for i, (g, e) in enumerate(zip(outs, expected, strict=True)):
                _compare(g, e, name, i)
    assert aoti.live_handles() == before


def _run_and_compare(st, model, inputs, expected, name):
    outs = model(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    assert all(isinstance(o, st.Tensor) for o in outs)
    for i, (g, e) in enumerate(zip(outs, expected, strict=True)):
        _compare(g.numpy(), e, name, i)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_matches_eager_tensors(model_dir, name):
    import slimtensor as st
    from slimtensor import aoti

    before_h = aoti.live_handles()
    before = st.memory_stats("cpu")
    with aoti.load(f"{model_dir}/{name}.pt2") as model:
        assert model.num_inputs == len(load_reference(model_dir, name)[0][0])
        for inputs, expected in load_reference(model_dir, name):
            _run_and_compare(st, model, inputs, expected, name)
    after = st.memory_stats("cpu")
    assert aoti.live_handles() == before_h
    for key in ("live_storages", "live_tensors", "live_bytes"):
        assert after[key] == before[key], (key, before, after)


def test_names_constants_and_repr(model_dir):
    from slimtensor import aoti

    with aoti.load(f"{model_dir}/mlp.pt2") as m:
        assert (m.num_inputs, m.num_outputs) == (1, 1)
        assert len(m.input_names) == 1 and len(m.output_names) == 1
        consts = m.constants
        # data sizes are padded to 64-byte multiples by the model
        assert [c["nbytes"] for c in consts] == [64 * 32 * 4, 64 * 4, 10 * 64 * 4, 64]
        assert [c["fqn"] for c in consts] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
        assert all(c["dtype"] == 6 for c in consts)
        assert "1 inputs" in repr(m)
    assert "closed" in repr(m)
    with pytest.raises(RuntimeError, match="closed"):
        m.run_numpy(np.zeros((5, 32), np.float32))


def test_wrong_inputs_are_clear_errors(model_dir):
    from slimtensor import aoti

    before = aoti.live_handles()
    with aoti.load(f"{model_dir}/mlp.pt2") as m:
        with pytest.raises(ValueError, match="takes 1 inputs"):
            m.run_numpy(np.zeros((5, 32), np.float32), np.zeros(3, np.float32))
        with pytest.raises(aoti.AOTIError, match="dim"):
            m.run_numpy(np.zeros((5, 31), np.float32))
        with pytest.raises(aoti.AOTIError, match="dtype"):
            m.run_numpy(np.zeros((5, 32), np.float64))
        # still usable after failures; the failed runs' input handles were released exactly once
        out = m.run_numpy(np.ones((5, 32), np.float32))
        assert out[0].shape == (5, 10)
    assert aoti.live_handles() == before


@pytest.mark.parametrize("path", ["numpy", "tensors"])
def test_a_failed_run_does_not_repeat_an_earlier_shim_error(model_dir, path):
    """Note [Fresh shim errors]: a shim call that failed before the run (here a null handle) is not reported
    as the last shim error of a run that fails for another reason (a wrong input shape)."""
    import ctypes

    import slimtensor as st
    from slimtensor import aoti
    from slimtensor.aoti import _lib

    assert _lib.lib().aoti_torch_get_dim(None, ctypes.byref(ctypes.c_int64())) != 0
    earlier = _lib.last_error()
    assert earlier.startswith("aoti_torch_get_dim()"), earlier
    x = np.zeros((5, 31), np.float32)
    with aoti.load(f"{model_dir}/mlp.pt2") as m:
        with pytest.raises(aoti.AOTIError, match="dim") as failed:
            m.run_numpy(x) if path == "numpy" else m(st.asarray(x))
    assert "aoti_torch_get_dim" not in str(failed.value), str(failed.value)


def test_dynamic_batch(model_dir):
    from slimtensor import aoti

    with aoti.load(f"{model_dir}/mlp_dynamic.pt2") as m:
        for b in (2, 3, 17):
            assert m.run_numpy(np.ones((b, 32), np.float32))[0].shape == (b, 10)


def test_outputs_alias_inputs_keep_memory(model_dir):
    import slimtensor as st
    from slimtensor import aoti

    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    with aoti.load(f"{model_dir}/alias_input.pt2") as m:
        t, tail = m(st.asarray(x.copy()))
    np.testing.assert_array_equal(t.numpy(), x.T)
    np.testing.assert_array_equal(tail.numpy(), x[1:])


def test_noncontiguous_input_is_made_contiguous(model_dir):
    import slimtensor as st
    from slimtensor import aoti

    x = np.arange(80, dtype=np.float32).reshape(16, 5)
    with aoti.load(f"{model_dir}/linear.pt2") as m:
        ref = m.run_numpy(np.ascontiguousarray(x.T[:4]))[0]
        got = m(st.asarray(x).T[:4])
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-6)


def test_bare_so_and_foreign_files(model_dir, tmp_path):
    import zipfile

    from slimtensor import aoti

    with zipfile.ZipFile(f"{model_dir}/linear.pt2") as z:
        so = [n for n in z.namelist() if n.endswith(".so")][0]
        (tmp_path / "m.so").write_bytes(z.read(so))
    inputs, expected = load_reference(model_dir, "linear")[0]
    with aoti.load(tmp_path / "m.so") as m:
        np.testing.assert_allclose(m.run_numpy(*inputs)[0], expected[0], rtol=1e-5, atol=1e-5)
    (tmp_path / "junk.pt2").write_bytes(b"hello world, not a model")
    with pytest.raises(ValueError, match="neither"):
        aoti.load(tmp_path / "junk.pt2")
    data = (tmp_path / "m.so").read_bytes()
    (tmp_path / "trunc.so").write_bytes(data[:200])
    with pytest.raises((ValueError, aoti.AOTIError)):
        aoti.load(tmp_path / "trunc.so")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as z:
        z.writestr("a/b.txt", "x")
        z.writestr("../../evil.so", "x")
    with pytest.raises(ValueError, match="not an AOTInductor package"):
        aoti.load(tmp_path / "other.zip")
    (tmp_path / "broken.pt2").write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(ValueError, match="damaged"):
        aoti.load(tmp_path / "broken.pt2")
    with pytest.raises(FileNotFoundError):
        aoti.load(tmp_path / "missing.pt2")
    import glob

    # A 64-bit library of this machine's own (a multilib /lib32 copy would be refused earlier, as 32-bit ELF).
    foreign = glob.glob("/usr/lib/x86_64-linux-gnu/libm.so.6") + glob.glob("/lib64/libm.so.6")
    if foreign:
        with pytest.raises(ValueError, match="not an AOTInductor model"):
            aoti.load(foreign[0])


def test_missing_shim_symbols_are_listed(model_dir, tmp_path):
    """A model needing a shim slimtensor lacks is refused before dlopen, naming the functions."""
    import zipfile

    from slimtensor import aoti

    with zipfile.ZipFile(f"{model_dir}/linear.pt2") as z:
        so = [n for n in z.namelist() if n.endswith(".so")][0]
        data = bytearray(z.read(so))
    # rename one undefined import in .dynstr to a same-length name slimtensor does not export
    old = b"aoti_torch_cpu_addmm_out\x00"
    new = b"aoti_torch_cpu_xxxxx_out\x00"
    assert data.count(old) >= 1
    data = data.replace(old, new, 1)
    (tmp_path / "m.so").write_bytes(bytes(data))
    with pytest.raises(aoti.AOTIError, match="aoti_torch_cpu_xxxxx_out"):
        aoti.load(tmp_path / "m.so")


def test_isa_check(model_dir, monkeypatch):
    from slimtensor.aoti import _package

    files = _package.ModelFiles(so_path="x", metadata={"AOTI_DEVICE_KEY": "cpu", "AOTI_CPU_ISA": "AVX512"})
    monkeypatch.setattr(_package, "cpu_flags", lambda: {"avx2", "fma", "sse2"})
    with pytest.raises(RuntimeError, match="avx512"):
        _package.check_metadata(files, "cpu")
    files.metadata["AOTI_CPU_ISA"] = "AVX2"
    _package.check_metadata(files, "cpu")
    files.metadata["AOTI_DEVICE_KEY"] = "cuda"
    with pytest.raises(ValueError, match="compiled for"):
        _package.check_metadata(files, "cpu")


def test_outputs_of_a_model_returning_its_buffer_outlive_close(model_dir):
    """A model returning (a view of) its own buffer: the output stays valid after close()."""
    import gc

    import slimtensor as st
    from slimtensor import aoti
    from slimtensor.aoti import _lib

    before_h = aoti.live_handles()
    before = st.memory_stats("cpu")
    table = np.arange(32, dtype=np.float32).reshape(4, 8)
    m = aoti.load(f"{model_dir}/const_alias.pt2")
    owner = m._owner
    y, view = m(st.asarray(np.ones((4, 8), np.float32)))
    np.testing.assert_array_equal(view.numpy(), table[1:])
    # torch 2.13's generated code clones an output that views a constant (aoti_torch_clone), so nothing pins
    # the model here; test_model_owner_pins_constants checks the pinning itself.
    assert _lib.lib().slimtensor_aoti_owner_refs(owner) == 1
    m.close()
    junk = [np.full(1 << 16, 7.0) for _ in range(8)]  # reuse freed memory, were it freed
    np.testing.assert_array_equal(view.numpy(), table[1:])
    np.testing.assert_array_equal(y.numpy(), table + 1)
    del y, view, junk
    gc.collect()
    assert aoti.live_handles() == before_h
    after = st.memory_stats("cpu")
    assert after["live_storages"] == before["live_storages"]
    assert after["live_bytes"] == before["live_bytes"]


def test_model_owner_pins_constants():
    """Note [Model owner] at the C level: an adopted output over constants defers the container delete."""
    import ctypes

    from slimtensor.aoti import _lib
    from slimtensor.aoti._numpy import array_from_handle

    L = _lib.lib()
    before = _lib.live_handles()
    released = []
    cb = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(lambda c: released.append(c) or 0)
    blob = np.arange(12, dtype=np.float32)
    owner = L.slimtensor_aoti_owner_new(ctypes.cast(cb, ctypes.c_void_p).value, None)
    L.slimtensor_aoti_owner_set_container(owner, 1234)
    L.slimtensor_aoti_owner_enter(owner)
    const = ctypes.c_void_p()
    sizes = (ctypes.c_int64 * 1)(12)
    assert (
        L.aoti_torch_create_tensor_from_blob_v2(
            blob.ctypes.data, 1, sizes, None, 0, 6, 0, 0, ctypes.byref(const), 0, None, 0
        )
        == 0
    )
    L.slimtensor_aoti_owner_enter(None)
    f = L.aoti_torch__reinterpret_tensor
    f.restype, f.argtypes = (
        ctypes.c_int32,
        [
            ctypes.c_void_p,
            ctypes.c_int64,
            ctypes.POINTER(ctypes.c_int64),
            ctypes.POINTER(ctypes.c_int64),
            ctypes.c_int64,
            ctypes.POINTER(ctypes.c_void_p),
        ],
    )
    out, other = ctypes.c_void_p(), ctypes.c_void_p()
    assert f(const, 1, (ctypes.c_int64 * 1)(4), None, 8, ctypes.byref(out)) == 0
    assert L.slimtensor_aoti_owner_adopt_output(owner, out) == 1
    other_data = np.zeros(3, np.float32)
    assert (
        L.aoti_torch_create_tensor_from_blob_v2(
            other_data.ctypes.data,
            1,
            (ctypes.c_int64 * 1)(3),
            None,
            0,
            6,
            0,
            0,
            ctypes.byref(other),
            0,
            None,
            0,
        )
        == 0
    )
    assert L.slimtensor_aoti_owner_adopt_output(owner, other) == 0  # not the model's memory
    assert L.slimtensor_aoti_owner_refs(owner) == 2
    L.aoti_torch_delete_tensor_object(const)  # what the container's delete would do...
    L.slimtensor_aoti_owner_release(owner)  # ...the host closes the model
    assert released == []  # the adopted output still pins it
    np.testing.assert_array_equal(array_from_handle(out.value), [8, 9, 10, 11])
    L.aoti_torch_delete_tensor_object(out)
    assert released == [1234]  # last reference gone: the container is deleted, once
    L.aoti_torch_delete_tensor_object(other)
    assert _lib.live_handles() == before


def test_sleef_model(model_dir):
    """A model compiled for this machine's ISA calls Sleef_* (no DT_NEEDED): slimtensor provides libsleef."""
    import json
    import zipfile

    from slimtensor import aoti
    from slimtensor.aoti import _elf, _package, _runtime

    with zipfile.ZipFile(f"{model_dir}/pointwise_native.pt2") as z:
        md = json.loads(z.read([n for n in z.namelist() if n.endswith("wrapper_metadata.json")][0]))
    try:
        _package.check_metadata(_package.ModelFiles(so_path="", metadata=md), "cpu")
    except RuntimeError as e:
        pytest.skip(f"this CPU cannot run the native build: {e}")
    inputs, expected = load_reference(model_dir, "pointwise_native")[0]
    try:
        m = aoti.load(f"{model_dir}/pointwise_native.pt2")
    except RuntimeError as e:
        if "libsleef" in str(e):
            pytest.skip(str(e))
        raise
    with m:
        np.testing.assert_allclose(m.run_numpy(*inputs)[0], expected[0], rtol=1e-5, atol=1e-5)
        needed = {n for n in _elf.undefined_symbols(m._files.so_path) if n.startswith("Sleef_")}
    if needed:
        assert _runtime.sleef_path() is not None


def test_libsleef_has_every_x86_name_torch_kernels_use():
    import glob
    import importlib.util
    import os
    import re

    from slimtensor.aoti import _elf, _runtime

    spec = importlib.util.find_spec("torch")
    if spec is None:
        pytest.skip("needs torch's headers to list the Sleef_* names its kernels use")
    vec = os.path.join(list(spec.submodule_search_locations)[0], "include", "ATen", "cpu", "vec")
    names = set()
    for sub in ("vec256", "vec512"):
        for f in glob.glob(os.path.join(vec, sub, "*.h")):  # x86 only (vsx/zarch/sve/neon live in subfolders)
            names |= set(re.findall(r"Sleef_\w+", open(f).read()))
    path = next((p for p in _runtime._sleef_candidates() if os.path.exists(p)), None)
    if path is None:
        pytest.skip("libsleef3 is not installed (apt-get install libsleef3)")
    assert len(names) > 50
    assert sorted(names - _elf.defined_symbols(path)) == []


def test_concurrent_runs(model_dir):
    """num_models=2: runs from two threads overlap; results stay right and every handle is released."""
    import threading

    from slimtensor import aoti

    inputs, expected = load_reference(model_dir, "mlp")[0]
    before = aoti.live_handles()
    errors = []
    with aoti.load(f"{model_dir}/mlp.pt2", num_models=2) as m:

        def work():
            try:
                for _ in range(50):
                    np.testing.assert_allclose(m.run_numpy(*inputs)[0], expected[0], rtol=2e-5, atol=2e-5)
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[0]
    assert aoti.live_handles() == before


def test_close_while_other_threads_run(model_dir):
    """close() waits for the runs in flight, then releases the model; later runs are refused as closed, none
    crashes, and every handle is released (Note [Concurrent runs])."""
    import threading

    import slimtensor as st
    from slimtensor import aoti

    inputs, expected = load_reference(model_dir, "mlp")[0]
    before = aoti.live_handles()
    m = aoti.load(f"{model_dir}/mlp.pt2", num_models=2)
    xs = [st.asarray(a) for a in inputs]
    runs, errors, started = [0], [], threading.Barrier(3)

    def work():
        started.wait()
        try:
            while True:
                np.testing.assert_allclose(m(*xs).numpy(), expected[0], rtol=2e-5, atol=2e-5)
                runs[0] += 1
        except RuntimeError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    started.wait()
    while runs[0] < 10:
        pass
    m.close()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert len(errors) == 2 and all("closed" in e for e in errors), errors
    assert aoti.live_handles() == before

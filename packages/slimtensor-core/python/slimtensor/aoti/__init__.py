"""slimtensor.aoti: run AOTInductor models (built with aot_inductor.link_libtorch=False) without libtorch.

    model = st.aoti.load("model.pt2")          # or a bare model .so
    y = model(x)                               # tensors, numpy arrays or DLPack objects in; tensors out
    model.close()                              # or: with st.aoti.load(...) as model: ...

See docs/aoti.md for the ownership rules and what differs from libtorch.
"""

from __future__ import annotations

from ._lib import last_error, library_path, live_handles
from ._model import AOTIError, AOTIModel

__all__ = ["AOTIError", "AOTIModel", "last_error", "library_path", "live_handles", "load", "set_num_threads"]


def load(
    path,
    device: str = "cpu",
    *,
    model_name: str | None = None,
    num_models: int = 1,
    check_inputs: bool = True,
) -> AOTIModel:
    """Loads a ``.pt2`` package or a bare model ``.so`` to run on slimtensor's shims.

    ``check_inputs`` sets ``AOTI_RUNTIME_CHECK_INPUTS=1`` (unless already set) so the model checks every
    input's dtype, shape, strides and device and names the wrong one (read once per process and model).
    """
    return AOTIModel(path, device, model_name=model_name, num_models=num_models, check_inputs=check_inputs)


def set_num_threads(n: int) -> None:
    """Threads for the BLAS and oneDNN behind the CPU fallbacks and for the models' OpenMP kernels.

    The C functions behind the BLAS and oneDNN parts are ``slimtensor_blas_set_num_threads`` and
    ``slimtensor_onednn_set_num_threads`` (slimtensor/c/shim_cpu.h).
    """
    from . import _lib as l
    from . import _runtime

    l.lib().slimtensor_blas_set_num_threads(int(n))
    l.lib().slimtensor_onednn_set_num_threads(int(n))
    _runtime.set_openmp_threads(int(n))

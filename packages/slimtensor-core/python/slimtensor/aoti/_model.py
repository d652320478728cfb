"""AOTIModel: a loaded AOTInductor model .so running on slimtensor's shims (st.aoti.load returns one).

Note [Binding the model to slimtensor]
The model's ``aoti_torch_*`` calls are undefined symbols. We copy the model into a private directory and bind
the copy to slimtensor before opening it:
  - Linux (ELF): the copy gets a ``DT_NEEDED`` on libslimtensor's soname (``_elf.add_needed``) and is opened
    ``RTLD_LOCAL | RTLD_DEEPBIND``: the model then looks symbols up in itself and its own dependencies first,
    where libslimtensor (already loaded, found by soname) provides them, and only then in the global scope;
  - macOS (Mach-O): torch links models with ``-undefined dynamic_lookup``, so the shims are flat-namespace
    imports; the copy gets an ``LC_LOAD_DYLIB`` on libslimtensor's path (and on the device plugin's shim image)
    and each of those imports becomes a two-level import of the image that defines it
    (``_macho.bind_flat_imports``, Note [Binding a Mach-O model] there); it is opened ``RTLD_LOCAL``.
So a libtorch in the process (imported before or after) keeps its own shims, and a stock torch AOTI model
still binds to libtorch. libslimtensor itself is never put in the global scope (on macOS: Note [Out of the
flat namespace] in _macho.py).

Note [Model capture]
``capture(*example_inputs)`` records one run into a CUDA graph (any device whose plugin offers ``graphs``,
Note [Device support for AOTI models]): static input buffers are cloned from the examples, the model runs
once eagerly on a private stream (loading its kernels), then once under capture on that stream; the
plugin keeps what that run allocates in a graph pool until the graph is released (Note [Graph pools]), and
the run's outputs become the static outputs. The graph's first nodes copy into the static inputs:
``replay(*inputs)`` points them at the new inputs and launches the graph on the caller's stream, in one call
into slimtensor._C (Note [Graph replay from Python]), and returns the static outputs, which the next replay
overwrites (as with torch's CUDA graphs: clone what you keep). Capturing again or closing the model
releases the graph, once no replay is in flight. A model whose run cannot be captured is refused by CUDA; capture() says so.

Note [Input handles]
``AOTInductorModelContainerRun`` steals the input handles it gets past its input check and nulls their
slots. After every run, success or failure, we delete exactly the slots that are still non-NULL. Output
slots start NULL; every non-NULL output is ours and becomes a tensor (or is deleted on an error path).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import sys
import tempfile
import threading
from ctypes import POINTER, c_char_p, c_int32, c_size_t, c_uint8, c_void_p

from . import _device_support, _elf, _lib, _macho, _package, _runtime

_TORCH_ABI = "2.13"


# A model calls aoti_torch_proxy_executor_call_function for the ops torch declares no C shim for, run by
# libtorch's proxy executor; the collectives other than all_reduce are among them (docs/distributed.md).
_PROXY_EXECUTOR_HINT = (
    " It calls ops through libtorch's proxy executor, which slimtensor does not provide: among them the "
    "collectives all_gather, reduce_scatter and broadcast (torch's headers declare C shims only for "
    "all_reduce, all_reduce_ and wait_tensor, which slimtensor implements over slimtensor.distributed)."
)


class AOTIError(RuntimeError):
    """A model failed to load or run."""


def _check_inputs_env() -> None:
    # The model reads AOTI_RUNTIME_CHECK_INPUTS once, at its first run: with it, it checks the dtype, sizes,
    # strides and device of every input and says which one is wrong instead of reading out of bounds.
    os.environ.setdefault("AOTI_RUNTIME_CHECK_INPUTS", "1")


def bind_macho_model(so_path: str, source: str, providers: list[tuple[str, set[str]]]) -> dict[str, str]:
    """The Mach-O binding step of ``st.aoti.load`` (all but the dlopen): binds the model's flat-lookup shims
    to ``providers`` (absolute paths of loaded images, with the names they export; Note [Binding a Mach-O
    model] in _macho.py) and checks that every ``aoti_torch_*`` import now goes to one of them. Returns
    {name: provider path} of what was rebound."""
    undefined = _macho.undefined_symbols(so_path)
    sleef = sorted(n for n in undefined if n.startswith("Sleef_"))
    if sleef:
        raise AOTIError(
            f"slimtensor.aoti.load(): {source!r} uses SLEEF vector math ({', '.join(sleef[:3])}, ...), which "
            "slimtensor provides on Linux only (Note [SLEEF]); compile the model with cpp.simdlen=0"
        )
    try:
        rebound = _macho.bind_flat_imports(so_path, providers)
        bound = _macho.bindings(so_path)
    except _macho.MachOError as e:
        raise AOTIError(f"slimtensor.aoti.load(): cannot bind {source!r} to slimtensor: {e}") from e
    ours = {lib for lib, _ in providers}
    elsewhere = {n: sorted(w - ours) for n, w in bound.items() if n.startswith("aoti_torch_") and w - ours}
    if elsewhere:
        name, where = sorted(elsewhere.items())[0]
        raise AOTIError(
            f"slimtensor.aoti.load(): {source!r} binds {len(elsewhere)} shim(s) to other libraries, e.g. {name} "
            f"to {where}: it was linked against them (compiled with aot_inductor.link_libtorch=True?); compile "
            "it with aot_inductor.link_libtorch=False"
        )
    return rebound


class AOTIModel:
    """A model from ``torch._inductor.aoti_compile_and_package`` (``aot_inductor.link_libtorch=False``)."""

    def __init__(
        self,
        path: str,
        device: str = "cpu",
        *,
        model_name: str | None = None,
        num_models: int = 1,
        check_inputs: bool = True,
    ):
        self._closed = True
        self._owner = None
        self._dir = tempfile.mkdtemp(prefix="slimtensor-aoti-")
        # Note [Concurrent runs]: runs may overlap (the container serves num_models of them at once and
        # makes the others wait); close() waits for runs in flight and refuses new ones. A plain Lock: the
        # counting is on every run's path, and a Condition's own lock is an RLock, dearer to take in Python.
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._inflight = 0
        self._draining = 0  # threads in _drain(): only then does leaving a run notify
        self._graph = None  # the captured CUDA graph (Note [Model capture])
        try:
            self._open(os.fspath(path), device, model_name, num_models, check_inputs)
        except BaseException:
            self._cleanup_files()
            raise

    # ---- loading --------------------------------------------------------------------------------------
    def _open(self, path, device, model_name, num_models, check_inputs):
        if not sys.platform.startswith(("linux", "darwin")):
            raise AOTIError(
                f"slimtensor.aoti.load(): binding a model to slimtensor's shims is written for ELF (Linux) and "
                f"Mach-O (macOS) models (Note [Binding the model to slimtensor]), not for {sys.platform}"
            )
        if not isinstance(device, str):
            raise TypeError(
                f"slimtensor.aoti.load(): device must be a string ('cpu', 'cuda', 'cuda:1'), not {device!r}"
            )
        self.path = path
        self._device_type = device.split(":")[0]
        # Note [Device support for AOTI models] (_device_support.py): CPU models bind to libslimtensor, the
        # others to their plugin's shim library, which brings libslimtensor with it.
        self._support = (
            None if self._device_type == "cpu" else _device_support.device_support(self._device_type)
        )
        self._index = 0 if self._support is None else self._support.device_index(device)
        # Note [Fresh shim errors]: what _start_clean calls (clear_last_error is optional for plugins).
        plugin_clear = getattr(self._support, "clear_last_error", None)
        self._error_clears = (_lib.lib().slimtensor_clear_last_error,) + (
            (plugin_clear,) if plugin_clear else ()
        )
        self.device = device if self._support is None else f"{self._device_type}:{self._index}"
        files = _package.open_model_files(path, self._dir, model_name)
        _package.check_metadata(files, device)
        self._files = files
        _lib.lib()  # loads libslimtensor (the same copy as slimtensor._C's)
        libpath = os.path.realpath(_lib.library_path())
        if sys.platform == "darwin":
            self._dll = self._open_macho(files, path, libpath)
        else:
            self._dll = self._open_elf(files, path, libpath)
        self._bind()
        if check_inputs:
            _check_inputs_env()
        self._create(num_models, self.device)

    def _check_names(self, files, path, undefined, have, defined):
        """Refuses a model that calls a shim neither the core nor the plugin defines, or is no AOTI model."""
        missing = sorted(n for n in undefined if n.startswith("aoti_torch_") and n not in have)
        if missing:
            raise AOTIError(
                f"slimtensor.aoti.load(): {path!r} calls {len(missing)} shim function(s) slimtensor does "
                f"not implement: {', '.join(missing)}. slimtensor implements torch {_TORCH_ABI}'s shims "
                "for tensors and the op fallbacks that 'slimtensor info --ops' lists as implemented; a "
                "model from another torch version, or one using other fallback ops, needs them added."
                + _PROXY_EXECUTOR_HINT
                * ("aoti_torch_proxy_executor_call_function" in missing)
            )
        if "AOTInductorModelContainerCreateWithDevice" not in defined:
            raise ValueError(
                f"slimtensor.aoti.load(): {path!r} is a shared library but not an AOTInductor model "
                "(no AOTInductorModelContainerCreateWithDevice)"
            )
        if self._support is not None:
            self._support.check_model(files.so_path, files.metadata, self._index, path)

    def _open_elf(self, files, path, libpath):
        """Linux: a DT_NEEDED on the core or the plugin's shim library, then RTLD_LOCAL | RTLD_DEEPBIND
        (Note [Binding the model to slimtensor])."""
        try:
            undefined = _elf.undefined_symbols(files.so_path)
        except _elf.ElfError as e:
            raise ValueError(f"slimtensor.aoti.load(): {path!r}: {e}") from e
        have = _elf.defined_symbols(libpath)
        if self._support is not None:
            have |= _elf.defined_symbols(self._support.shim_library)
        self._check_names(files, path, undefined, have, _elf.defined_symbols(files.so_path))
        _runtime.ensure_sleef({n for n in undefined if n.startswith("Sleef_")}, path)
        if self._support is None:
            soname = _elf.soname(libpath) or os.path.basename(libpath)
        else:
            soname = self._support.soname
        try:
            _elf.add_needed(files.so_path, soname)
        except _elf.ElfError as e:
            raise AOTIError(f"slimtensor.aoti.load(): cannot bind {path!r} to slimtensor: {e}") from e
        try:
            return ctypes.CDLL(files.so_path, mode=_runtime.model_dlopen_mode())  # Note [Sanitizer binding]
        except OSError as e:
            msg = str(e)
            hint = ""
            if "libgomp" in msg:
                hint = " The model uses OpenMP: install it ('apt-get install libgomp1')."
            raise AOTIError(
                f"slimtensor.aoti.load(): the dynamic loader refused {path!r}: {msg}.{hint}"
            ) from e

    def _open_macho(self, files, path, libpath):
        """macOS: the model's flat-lookup shims bound two-level to the core and the plugin's shim image, then
        RTLD_LOCAL (Note [Binding a Mach-O model] in _macho.py)."""
        try:
            undefined = _macho.undefined_symbols(files.so_path)
            defined = _macho.defined_symbols(files.so_path)
        except _macho.MachOError as e:
            raise ValueError(f"slimtensor.aoti.load(): {path!r}: {e}") from e
        providers = [(libpath, _macho.defined_symbols(libpath))]
        if self._support is not None:
            shim = os.path.realpath(self._support.shim_library)
            providers.append((shim, _macho.defined_symbols(shim)))
        self._check_names(files, path, undefined, set().union(*(n for _, n in providers)), defined)
        bind_macho_model(files.so_path, path, providers)
        try:
            return ctypes.CDLL(files.so_path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        except OSError as e:
            raise AOTIError(f"slimtensor.aoti.load(): dyld refused {path!r}: {e}") from e

    def _fn(self, name, res, *args):
        f = getattr(self._dll, name)
        f.restype, f.argtypes = res, list(args)
        return f

    def _bind(self):
        H, C = c_void_p, c_void_p
        self._create_fn = self._fn(
            "AOTInductorModelContainerCreateWithDevice", c_int32, POINTER(C), c_size_t, c_char_p, c_char_p
        )
        self._delete_fn = self._fn("AOTInductorModelContainerDelete", c_int32, C)
        self._run_fn = self._fn(
            "AOTInductorModelContainerRun",
            c_int32,
            C,
            POINTER(H),
            c_size_t,
            POINTER(H),
            c_size_t,
            c_void_p,
            c_void_p,
        )
        self._n_in_fn = self._fn("AOTInductorModelContainerGetNumInputs", c_int32, C, POINTER(c_size_t))
        self._n_out_fn = self._fn("AOTInductorModelContainerGetNumOutputs", c_int32, C, POINTER(c_size_t))
        self._in_name_fn = self._fn(
            "AOTInductorModelContainerGetInputName", c_int32, C, c_size_t, POINTER(c_char_p)
        )
        self._out_name_fn = self._fn(
            "AOTInductorModelContainerGetOutputName", c_int32, C, c_size_t, POINTER(c_char_p)
        )
        self._n_const_fn = self._fn("AOTInductorModelContainerGetNumConstants", c_int32, C, POINTER(c_size_t))
        self._const_name_fn = self._fn(
            "AOTInductorModelContainerGetConstantName", c_int32, C, c_size_t, POINTER(c_char_p)
        )
        self._const_fqn_fn = self._fn(
            "AOTInductorModelContainerGetConstantOriginalFQN", c_int32, C, c_size_t, POINTER(c_char_p)
        )
        self._const_dtype_fn = self._fn(
            "AOTInductorModelContainerGetConstantDtype", c_int32, C, c_size_t, POINTER(c_int32)
        )
        self._const_size_fn = self._fn(
            "AOTInductorModelContainerGetConstantDataSize", c_int32, C, c_size_t, POINTER(c_size_t)
        )
        # The model container's own last error: newer torch versions export it (2.13 does), older ones
        # (2.11's CUDA models) do not; the shim's and the plugin's messages are reported either way.
        try:
            self._last_error_fn = self._fn("AOTInductorGetLastError", c_int32, POINTER(c_char_p))
        except AttributeError:
            self._last_error_fn = None
        try:
            self._blob_fn = self._fn("AOTInductorModelUpdateConstantsFromBlob", c_int32, C, POINTER(c_uint8))
        except AttributeError:
            self._blob_fn = None

    def _constant_layout(self, container) -> list[tuple[str, int, int, bool]]:
        """(name, nbytes, dtype code, from folded) of each constant, for _package.check_weights_blob."""
        folded_fn = self._fn(
            "AOTInductorModelContainerGetConstantFromFolded",
            c_int32,
            c_void_p,
            c_size_t,
            POINTER(ctypes.c_bool),
        )
        n, out = c_size_t(), []
        self._start_clean()
        if self._n_const_fn(container, ctypes.byref(n)) != 0:
            raise self._model_error("slimtensor.aoti.load(): reading the model's constants failed")
        for i in range(n.value):
            s, d, z, f = c_char_p(), c_int32(), c_size_t(), ctypes.c_bool()
            if (
                self._const_name_fn(container, i, ctypes.byref(s))
                or self._const_dtype_fn(container, i, ctypes.byref(d))
                or self._const_size_fn(container, i, ctypes.byref(z))
                or folded_fn(container, i, ctypes.byref(f))
            ):
                raise self._model_error(f"slimtensor.aoti.load(): reading constant {i} of the model failed")
            out.append(((s.value or b"").decode("utf-8", "replace"), z.value, d.value, f.value))
        return out

    def _start_clean(self) -> None:
        """Empties the shims' last errors before a call into the container (Note [Fresh shim errors])."""
        for clear in self._error_clears:
            clear()

    def _model_error(self, what: str) -> AOTIError:
        # Note [Fresh shim errors]
        # A failed container call says little itself ("AOTI_TORCH_ERROR_CODE_CHECK failed"), so the message
        # adds the last error of the core's shims and of the device plugin's. Those are thread-local and, like
        # errno, left alone by calls that succeed (the generated code's cleanup after a failing shim must not
        # wipe its message), so each container call is preceded by _start_clean(): what is added was said
        # during that call, never by an earlier, unrelated failure.
        msg = c_char_p()
        text = ""
        if self._last_error_fn is not None and self._last_error_fn(ctypes.byref(msg)) == 0 and msg.value:
            text = msg.value.decode("utf-8", "replace").strip()
        shim = _lib.last_error()
        support = getattr(self, "_support", None)
        plugin = support.last_error() if support is not None else ""
        names = getattr(self, "input_names", [])

        def name_input(m):
            i = int(m.group(1))
            return f"input {i} ({names[i]})" if i < len(names) and names[i] else f"input {i}"

        text = re.sub(r"input_handles\[(\d+)\]", name_input, text)
        detail = text or "no message"
        if shim and shim not in detail:
            detail += f" (last slimtensor shim error: {shim})"
        if plugin and plugin not in detail:
            detail += f" (last {self._device_type} shim error: {plugin})"
        return AOTIError(f"{what}: {detail}")

    def _create(self, num_models, device):
        lib = _lib.lib()
        # Note [Model owner] (src/aoti/model_owner.h): constants made while the owner is entered belong to it.
        # The owner calls the container's delete function itself (a C pointer: the library stays mapped).
        self._owner = lib.slimtensor_aoti_owner_new(ctypes.cast(self._delete_fn, c_void_p).value, None)
        if not self._owner:
            raise MemoryError("slimtensor.aoti.load(): out of memory")
        container = c_void_p()
        lib.slimtensor_aoti_owner_enter(self._owner)
        try:
            self._start_clean()
            rc = self._create_fn(ctypes.byref(container), num_models, device.encode(), None)
            if rc == 0 and self._files.weights_path:
                if self._blob_fn is None:
                    raise AOTIError(
                        "slimtensor.aoti.load(): the package has a separate weights blob but the model "
                        "has no AOTInductorModelUpdateConstantsFromBlob"
                    )
                with open(self._files.weights_path, "rb") as f:
                    self._blob = bytearray(f.read())
                try:
                    _package.check_weights_blob(self.path, len(self._blob), self._constant_layout(container))
                except BaseException:
                    lib.slimtensor_aoti_owner_set_container(self._owner, container)
                    lib.slimtensor_aoti_owner_release(self._owner)  # deletes the container
                    self._owner = None
                    raise
                buf = (c_uint8 * len(self._blob)).from_buffer(self._blob)
                self._start_clean()
                rc2 = self._blob_fn(container, buf)
                if rc2 != 0:
                    err = self._model_error("slimtensor.aoti.load(): loading the weights blob failed")
                    lib.slimtensor_aoti_owner_set_container(self._owner, container)
                    lib.slimtensor_aoti_owner_release(self._owner)  # deletes the container
                    self._owner = None
                    raise err
        finally:
            lib.slimtensor_aoti_owner_enter(None)
        if rc != 0:
            err = self._model_error(f"slimtensor.aoti.load(): creating the model from {self.path!r} failed")
            lib.slimtensor_aoti_owner_release(self._owner)  # nothing to delete: container is NULL
            self._owner = None
            raise err
        self._container = container
        self._container_address = container.value
        self._run_address = ctypes.cast(self._run_fn, c_void_p).value
        lib.slimtensor_aoti_owner_set_container(self._owner, container)
        self._closed = False
        n = c_size_t()
        self._n_in_fn(container, ctypes.byref(n))
        self.num_inputs = n.value
        self._n_out_fn(container, ctypes.byref(n))
        self.num_outputs = n.value
        s = c_char_p()
        self.input_names = [self._name(self._in_name_fn, i, s) for i in range(self.num_inputs)]
        self.output_names = [self._name(self._out_name_fn, i, s) for i in range(self.num_outputs)]

    def _name(self, fn, i, s):
        return s.value.decode() if fn(self._container, i, ctypes.byref(s)) == 0 and s.value else ""

    @property
    def constants(self) -> list[dict]:
        """name, original FQN, dtype code and byte size of each constant (weights and buffers)."""
        self._check_open()
        n = c_size_t()
        self._n_const_fn(self._container, ctypes.byref(n))
        out = []
        for i in range(n.value):
            s, d, z = c_char_p(), c_int32(), c_size_t()
            self._const_name_fn(self._container, i, ctypes.byref(s))
            name = s.value.decode() if s.value else ""
            self._const_fqn_fn(self._container, i, ctypes.byref(s))
            fqn = s.value.decode() if s.value else ""
            self._const_dtype_fn(self._container, i, ctypes.byref(d))
            self._const_size_fn(self._container, i, ctypes.byref(z))
            out.append({"name": name, "fqn": fqn, "dtype": d.value, "nbytes": z.value})
        return out

    # ---- running ------------------------------------------------------------------------------------------
    def _check_open(self):
        if self._closed:
            raise RuntimeError("slimtensor.aoti: the model is closed; load it again")

    def _stream(self, stream) -> int:
        """The stream handle a run passes to the container: 0 on the CPU; on a device, ``stream`` or the
        thread's current stream of the model's device (so no run synchronises the device)."""
        if self._support is None:
            if stream is not None:
                raise ValueError("slimtensor.aoti: stream= is for device models; CPU models take no stream")
            return 0
        return self._support.stream_handle(self._index, stream)

    def run_handles(self, handles: list[int], stream=None) -> list[int]:
        """Runs on AOTI handles (stolen, whatever happens); returns new output handles (the caller's)."""
        lib = _lib.lib()
        ins = (c_void_p * max(1, len(handles)))(*handles)
        outs = (c_void_p * max(1, self.num_outputs))()
        entered = False
        try:
            self._enter_run()
            entered = True
            if len(handles) != self.num_inputs:
                raise ValueError(
                    f"the model takes {self.num_inputs} inputs ({', '.join(self.input_names)}) but got "
                    f"{len(handles)}"
                )
            # ctypes releases the GIL for the call.
            stream_handle = self._stream(stream) or None
            self._start_clean()
            rc = self._run_fn(self._container, ins, len(handles), outs, self.num_outputs, stream_handle, None)
            if rc != 0:
                raise self._model_error("model run failed")
            results = []
            for i in range(self.num_outputs):
                h = outs[i]
                if h and lib.slimtensor_aoti_owner_adopt_output(self._owner, h) < 0:
                    raise AOTIError(f"output {i}: {_lib.last_error()}")
                results.append(h)
            return results
        except BaseException:
            for i in range(self.num_outputs):
                if outs[i]:
                    lib.aoti_torch_delete_tensor_object(outs[i])
            raise
        finally:
            for i in range(len(handles)):  # Note [Input handles]
                if ins[i]:
                    lib.aoti_torch_delete_tensor_object(ins[i])
            if entered:
                self._leave_run()

    def _enter_run(self):
        with self._lock:
            self._check_open()
            self._inflight += 1

    def _leave_run(self):
        with self._lock:
            self._inflight -= 1
            if self._draining:
                self._cv.notify_all()

    def _drain(self):
        """Waits, holding self._lock, until no run or replay is in flight."""
        self._draining += 1
        try:
            while self._inflight:
                self._cv.wait()
        finally:
            self._draining -= 1

    def __call__(self, *inputs, stream=None):
        """Runs the model on slimtensor tensors, numpy arrays or DLPack objects; returns slimtensor tensors.

        A device model runs on ``stream`` (a slimtensor_cuda.Stream, a torch or cupy stream, or a handle as an
        int) or else on the calling thread's current stream of its device, asynchronously: the outputs are
        ready for work queued later on that stream, and nothing waits for the device.

        Inputs are passed without copies when they are contiguous tensors on the model's device (else as a
        contiguous copy); any other DLPack producer comes in through slimtensor.from_dlpack. Outputs share
        memory with the model's buffers (and with inputs or constants when it returns views). The handles are
        made and taken back by slimtensor._C (Note [AOTI calls from Python] in src/python/aoti_bridge.cpp).
        """
        self._check_open()
        if len(inputs) != self.num_inputs:
            raise ValueError(
                f"slimtensor.aoti: the model takes {self.num_inputs} inputs "
                f"({', '.join(self.input_names)}) but got {len(inputs)}"
            )
        tensors = [self._input(x, i) for i, x in enumerate(inputs)]
        handle = self._stream(stream)
        self._enter_run()
        try:
            self._start_clean()
            rc, results = _tensor_module()._aoti_run(
                self._run_address, self._container_address, tensors, self.num_outputs, self._owner, handle
            )
        finally:
            self._leave_run()
        if rc != 0:
            raise self._model_error("model run failed")
        return results[0] if len(results) == 1 else tuple(results)

    def _on_device(self, x, i):
        """Input ``i`` as a slimtensor tensor (no copy), refused when it is not on the model's device."""
        t = _to_tensor(x, i)
        if t.device.type != self._device_type or (
            self._support is not None and t.device.index != self._index
        ):
            raise ValueError(
                f"slimtensor.aoti: input {i} ({self.input_names[i]}) is on {t.device} but the model runs on "
                f"{self.device}; move it with .to({self.device!r})"
            )
        return t

    def _input(self, x, i):
        t = self._on_device(x, i)
        return t if t.is_contiguous() else t.contiguous()

    def run_numpy(self, *arrays):
        """Runs on numpy arrays without slimtensor's Python module; returns numpy arrays (copies)."""
        import numpy as np

        from ._numpy import array_from_handle, handle_from_array

        self._check_open()
        arrays = [np.ascontiguousarray(a) for a in arrays]
        handles = []
        try:
            for a in arrays:
                handles.append(handle_from_array(a))
        except BaseException:
            for h in handles:
                _lib.lib().aoti_torch_delete_tensor_object(h)
            raise
        outs = self.run_handles(handles)
        try:
            return [array_from_handle(h).copy() if h else None for h in outs]
        finally:
            for h in outs:
                if h:
                    _lib.lib().aoti_torch_delete_tensor_object(h)

    # ---- CUDA graphs (Note [Model capture]) --------------------------------------------------------------
    def _graphs(self):
        graphs = getattr(self._support, "graphs", None) if self._support is not None else None
        if graphs is None:
            raise NotImplementedError(
                f"slimtensor.aoti: capture() records a device graph; models on {self.device} cannot be captured"
            )
        return graphs

    def capture(self, *example_inputs, stream=None) -> None:
        """Records one run on ``example_inputs`` into a CUDA graph for replay() (Note [Model capture])."""
        self._check_open()
        graphs = self._graphs()
        self._release_graph()
        if len(example_inputs) != self.num_inputs:
            raise ValueError(
                f"slimtensor.aoti: capture() takes the model's {self.num_inputs} inputs "
                f"({', '.join(self.input_names)}) but got {len(example_inputs)}"
            )
        sup, index = self._support, self._index
        caller = self._stream(stream)
        static = [self._input(x, i).clone() for i, x in enumerate(example_inputs)]
        private = sup.private_stream(index)
        s = private.cuda_stream
        sup.wait_stream(index, s, caller)  # the static inputs are written on the caller's stream
        self(*static, stream=s)  # warm-up: loads the kernels, allocates what a first run does
        sup.synchronize_stream(index, s)
        graph = graphs.begin(index, s, static)  # the graph's first nodes copy replay()'s inputs into static
        outs = failure = None
        try:
            outs = self(*static, stream=s)
        except BaseException as e:
            failure = e
        try:
            graphs.end(graph, s)
        except RuntimeError as e:
            del outs
            raise AOTIError(
                f"slimtensor.aoti: capture() of {os.path.basename(self.path)!r} failed: {e}"
            ) from (failure or e)
        if failure is not None:
            graphs.destroy(graph)
            raise AOTIError(
                f"slimtensor.aoti: capture() of {os.path.basename(self.path)!r} failed: the model's run cannot be "
                f"captured into a CUDA graph: {failure}"
            ) from failure
        sup.wait_stream(index, caller, s)
        self._graph = _CapturedGraph(graph, graphs.replay_fn, tuple(static), outs, private)

    def replay(self, *inputs, stream=None):
        """Copies ``inputs`` into the captured run's static inputs and replays it on ``stream`` (or the current
        stream); returns the static outputs, which the next replay overwrites."""
        self._enter_run()  # close() and capture() wait for it before they destroy the graph
        try:
            g = self._graph
            if g is None:
                raise RuntimeError(
                    "slimtensor.aoti: replay() needs a graph: call capture(*example_inputs) first"
                )
            handle = self._stream(stream)
            rc = _tensor_module()._aoti_graph_replay(g.replay_fn, g.handle, handle, inputs, g.static)
            if rc == -1:  # Note [Graph replay from Python]: an input to convert, or to refuse with the reason
                rc = self._replay_checked(g, inputs, handle)
        finally:
            self._leave_run()
        if rc != 0:
            raise AOTIError(
                f"slimtensor.aoti: replay() of {os.path.basename(self.path)!r} failed: {self._support.last_error()}"
            )
        return g.outs

    def _replay_checked(self, g, inputs, handle) -> int:
        """replay() for inputs that are not dense slimtensor tensors matching the static inputs: DLPack
        producers come in without a copy, a strided view is copied into its static input on the replay's
        stream (the graph then copies nothing for it); anything else is refused, saying what is wrong."""
        if len(inputs) != len(g.static):
            raise ValueError(f"slimtensor.aoti: replay() takes {len(g.static)} inputs but got {len(inputs)}")
        sources = []  # alive until the launch is queued
        for i, (x, dst) in enumerate(zip(inputs, g.static, strict=True)):
            src = self._on_device(x, i)
            if src.dtype != dst.dtype or tuple(src.shape) != tuple(dst.shape):
                raise ValueError(
                    f"slimtensor.aoti: replay() input {i} ({self.input_names[i]}) is {src.dtype.name}"
                    f"{list(src.shape)} but the graph was captured with {dst.dtype.name}{list(dst.shape)}; "
                    "capture() again for other shapes"
                )
            if not src.is_contiguous():
                with self._support.current_stream(self._index, handle):
                    dst.copy_(src, non_blocking=True)
                src = dst
            sources.append(src)
        rc = _tensor_module()._aoti_graph_replay(g.replay_fn, g.handle, handle, tuple(sources), g.static)
        if rc == -1:
            raise RuntimeError(
                "slimtensor.aoti: replay(): dense inputs matching the static inputs were refused (a bug in "
                "slimtensor; please report it)"
            )
        return rc

    def _release_graph(self):
        """Destroys the captured graph once no run or replay is in flight."""
        with self._lock:
            self._drain()
            g, self._graph = self._graph, None
        if g is not None:
            self._graphs().destroy(g.handle)

    # ---- closing ------------------------------------------------------------------------------------
    def close(self) -> None:
        """Releases the model. Outputs that alias its constants stay valid (Note [Model owner])."""
        with self._lock:
            closing, self._closed = not self._closed, True
        if closing:  # nothing enters now; the graph goes once the runs in flight are done, then the model
            self._release_graph()
            _lib.lib().slimtensor_aoti_owner_release(self._owner)
            self._owner = None
        self._cleanup_files()

    def _cleanup_files(self):
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        state = "closed" if self._closed else f"{self.num_inputs} inputs, {self.num_outputs} outputs"
        return f"<slimtensor.aoti.AOTIModel {os.path.basename(self.path)!r} on {self.device}: {state}>"


class _CapturedGraph:
    """What capture() made (Note [Model capture]): the plugin's graph, the plugin's replay function for
    slimtensor._C._aoti_graph_replay, the static inputs and outputs, and the private stream of the capture."""

    __slots__ = ("handle", "replay_fn", "static", "outs", "stream")

    def __init__(self, handle: int, replay_fn: int, static: tuple, outs, stream):
        self.handle, self.replay_fn, self.static = handle, replay_fn, static
        self.outs, self.stream = outs, stream


def _tensor_module():
    """slimtensor._C, imported on the first call (run_handles and run_numpy work without it)."""
    global _C
    if _C is None:
        from slimtensor import _C as module

        _C = module
    return _C


_C = None


def _to_tensor(x, i):
    import slimtensor as st

    if isinstance(x, st.Tensor):
        return x
    try:
        import numpy as np

        if isinstance(x, np.ndarray) or np.isscalar(x):
            return st.asarray(x)
    except ImportError:
        pass
    if hasattr(x, "__dlpack__"):
        return st.from_dlpack(x)  # the one DLPack codec, any registered device
    raise TypeError(
        f"slimtensor.aoti: input {i} is a {type(x).__name__}; pass a slimtensor tensor, a numpy array "
        "or an object with __dlpack__"
    )

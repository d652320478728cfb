"""Tensor methods written in Python: repr, numpy interop, tolist, to(), cuda(), iteration, pickling, CAI."""

from __future__ import annotations

import builtins
import opcode
import sys
from typing import Any

import numpy as np

from . import _C, _cai
from ._dtypes import _NUMPY_NATIVE, to_numpy_dtype

Tensor = _C.Tensor

_RAW_VIEW = {n: _C._dtype_table()[f"uint{8 * n}"] for n in (1, 2, 4, 8)}


def layout_string(t: Tensor) -> str:
    """CuTe-style layout: ``(2, 3):(3, 1) @ 0`` (sizes:strides @ storage offset, in elements)."""

    def tup(v: tuple[int, ...]) -> str:
        return "(" + ", ".join(map(str, v)) + ("," if len(v) == 1 else "") + ")"

    return f"{tup(t.shape)}:{tup(t.stride())} @ {t.storage_offset()}"


# slimtensor dtype -> (numpy dtype, None when the buffer protocol gives it directly, else the unsigned dtype
# of the same size to export and reinterpret: bfloat16 and float8 have no buffer format).
_NUMPY_OF: dict[_C.dtype, tuple[np.dtype, _C.dtype | None]] = {}


def _numpy(self: Tensor) -> np.ndarray:
    """A numpy array sharing this tensor's memory (CPU only; bfloat16 and float8 through ml_dtypes)."""
    # The common case costs one dict lookup and the buffer export; the device is looked at only when the
    # export fails, to say why.
    entry = _NUMPY_OF.get(self.dtype)
    if entry is None:
        _require_cpu(self)
        npdt = to_numpy_dtype(self.dtype)  # TypeError where numpy has no such type
        raw = None if self.dtype.name in _NUMPY_NATIVE else _RAW_VIEW[self.itemsize]
        entry = _NUMPY_OF[self.dtype] = (npdt, raw)
    npdt, raw = entry
    try:
        if raw is None:
            return np.asarray(memoryview(self))
        return np.asarray(memoryview(self.view(raw))).view(npdt)
    except BufferError:
        _require_cpu(self)
        raise


def _require_cpu(self: Tensor) -> None:
    if self.device.type != "cpu":
        raise TypeError(f"numpy(): the tensor is on {self.device}; copy it first with .cpu()")


def _array(self: Tensor, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    if self.device.type != "cpu":
        # As torch: no silent device-to-host copies.
        raise TypeError(f"__array__(): the tensor is on {self.device}; copy it to the host first with .cpu()")
    arr = _numpy(self)
    if dtype is not None and np.dtype(dtype) != arr.dtype:
        if copy is False:
            raise ValueError("__array__(): converting the dtype needs a copy but copy=False")
        return arr.astype(dtype)
    return arr.copy() if copy else arr


def _plain_array(self: Tensor) -> np.ndarray:
    """Values as a numpy array of a type that prints and converts to Python numbers."""
    t = self if self.device.type == "cpu" else self.cpu()
    if t.dtype.name == "complex32":
        t = t._to(None, "complex64", False)
    arr = _numpy(t)
    if arr.dtype.kind == "V" or arr.dtype.name not in np.sctypeDict:
        arr = arr.astype(np.float32)
    return arr


def _tolist(self: Tensor) -> Any:
    return _plain_array(self).tolist()


def _repr(self: Tensor) -> str:
    prefix = "tensor("
    try:
        arr = _plain_array(self)
        body = np.array2string(arr, separator=", ", prefix=prefix, threshold=200, edgeitems=3)
    except (TypeError, ValueError) as exc:  # float4 and other types without values to show
        body = f"<{self.dtype.name} values not shown: {exc}>"
    extras = [f"dtype={self.dtype.name}"]
    if self.device.type != "cpu":
        extras.append(f"device='{self.device}'")
    extras.append(f"layout={layout_string(self)}")
    return f"{prefix}{body}, " + ", ".join(extras) + ")"


def _to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """to(device), to(dtype), to(device, dtype), to(other), with keywords device=, dtype=, copy=, non_blocking=.

    non_blocking=True lets a copy between host and device memory return before it has finished (as in torch):
    synchronize the device (st.synchronize) before the host memory is read, reused or freed."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    copy = builtins.bool(kwargs.pop("copy", False))
    non_blocking = builtins.bool(kwargs.pop("non_blocking", False))
    if kwargs:
        raise TypeError(f"to(): unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, _C.dtype):
            dtype = arg
        elif isinstance(arg, str | _C.Device):
            device = arg
        else:
            raise TypeError(f"to(): expected a device, a dtype or a tensor but got {type(arg).__name__}")
    return self._to(device, dtype, copy, non_blocking)


def _iter(self: Tensor):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    for i in range(self.shape[0]):
        yield self[i]


def _rebuild(data: bytes, shape: tuple[int, ...], dtype_name: str, device: str) -> Tensor:

    table = _C._dtype_table()
    dtype = table.get(dtype_name) if isinstance(dtype_name, str) else None
    if dtype is None:
        raise ValueError(
            f"slimtensor: cannot unpickle a tensor of dtype {dtype_name!r}: no such slimtensor dtype (known: "
            f"{', '.join(sorted(table))}); the pickle is damaged or was written by another slimtensor version"
        )
    raw = _C._from_buffer(bytearray(data))
    t = raw.view(dtype) if raw.numel() else _C.empty(0, dtype=dtype)
    return t.reshape(shape)._to(device, None, False)


def _reduce(self: Tensor) -> tuple[Any, ...]:
    """Pickles by value: the bytes of a contiguous CPU copy, the shape, the dtype and the device."""
    dense = self.cpu().contiguous()
    flat = dense.reshape(-1)
    data = memoryview(flat.view("uint8")).tobytes() if dense.numel() else b""
    return (_rebuild, (data, tuple(self.shape), self.dtype.name, str(self.device)))


def _scalar(kind: type) -> Any:
    def convert(self: Tensor) -> Any:
        if self.numel() != 1:
            raise TypeError(
                f"only one-element tensors can be converted to Python scalars (numel={self.numel()})"
            )
        return kind(self.item())

    return convert


Tensor.numpy = _numpy
Tensor.__array__ = _array
Tensor.tolist = _tolist
Tensor.__repr__ = _repr
Tensor.__str__ = _repr
Tensor.to = _to
Tensor.cpu = lambda self: self._to("cpu", None, False)
Tensor.__iter__ = _iter
Tensor.__reduce__ = _reduce
Tensor.__bool__ = _scalar(builtins.bool)
Tensor.__float__ = _scalar(builtins.float)
Tensor.__int__ = _scalar(builtins.int)
Tensor.__complex__ = _scalar(builtins.complex)
Tensor.layout = property(layout_string, doc="sizes:strides @ offset, e.g. '(2, 3):(3, 1) @ 0'")


# --- torch habits ----------------------------------------------------------------------------------------
# Note [Torch habits]
# Users arrive from torch. The dtype shorthands and .cuda() exist and behave as torch's (the tensor itself
# when nothing changes). Comparisons raise: slimtensor does no elementwise arithmetic, and the default
# `==` of an object compares identity, which would silently answer False for two equal tensors; use
# st.equal / t.equal for values and `is` for identity. Hashing stays by identity (sets, dict keys).
# Membership is by identity too: `t in items` (a list, tuple or deque) asks "is this object in there?",
# as it did before __eq__ was defined. Python's containers answer `x in items` with `e is x or e == x`
# for each element, through the same __eq__ that `t == u` calls, with nothing in the call telling the
# two apart except the instruction that asked: __eq__ looks at its caller's frame, and when that frame is
# executing CONTAINS_OP (`in`, `not in`) it returns NotImplemented, which makes Python fall back to
# identity (False for a different tensor). Any other caller (`==`, `[t] == [u]`, `items.index(t)`,
# operator.eq, assertEqual) raises as before, so no spelling of `==` silently answers by identity.
# co_code is the unspecialised bytecode in CPython 3.11+ (specialised and instrumented forms of the
# instruction read back as CONTAINS_OP), and f_lasti is the instruction being executed.
# Arithmetic names (t + 1, t.sum(), st.cat) raise an error that says where to do the math instead; the
# methods are properties raising AttributeError, so hasattr() stays False and numpy's functions
# (np.sum(t)) still take the array path through __array__.


def _dtype_method(dtype_name: str, torch_name: str):
    def convert(self: Tensor) -> Tensor:
        return self._to(None, dtype_name, False)

    convert.__name__ = torch_name
    convert.__doc__ = (
        f"This tensor as {dtype_name} (a copy; the tensor itself when it already is {dtype_name})."
    )
    return convert


_DTYPE_METHODS = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "bfloat16": "bfloat16",
    "int": "int32",
    "long": "int64",
    "short": "int16",
    "char": "int8",
    "byte": "uint8",
    "bool": "bool",
    "cfloat": "complex64",
    "cdouble": "complex128",
}
for _method, _dtype_name in _DTYPE_METHODS.items():
    setattr(Tensor, _method, _dtype_method(_dtype_name, _method))


def _device_method(kind: str):
    def move(self: Tensor, device: int | str | None = None, non_blocking: bool = False) -> Tensor:
        if device is None:
            target = kind
        elif isinstance(device, builtins.int) and not isinstance(device, builtins.bool):
            target = f"{kind}:{device}"
        else:
            target = str(device)
        if not target.split(":")[0] == kind:
            raise ValueError(f"{kind}(): expected a {kind} device (an index or '{kind}:N'), got {device!r}")
        try:
            return self._to(target, None, False, builtins.bool(non_blocking))
        except RuntimeError as exc:  # name the call the user wrote
            message = str(exc)
            raise RuntimeError(f"{kind}(): {message.removeprefix('to(): ')}") from None

    move.__name__ = kind
    move.__doc__ = f"This tensor on a {kind} device (a copy; the tensor itself when it is already there)."
    return move


Tensor.cuda = _device_method("cuda")
Tensor.is_cuda = property(
    lambda self: self.device.type == "cuda", doc="True when the tensor is on a CUDA device"
)
Tensor.is_cpu = property(lambda self: self.device.type == "cpu", doc="True when the tensor is on the CPU")


def equal(a: Tensor, b: Tensor) -> builtins.bool:
    """True when ``a`` and ``b`` have the same shape and the same values (torch.equal; NaN != NaN).

    dtypes may differ (values are compared after numpy's promotion); tensors on a device are copied to
    the host to compare.
    """
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"equal(): {name} must be a slimtensor.Tensor, got {type(t).__name__}")
    if tuple(a.shape) != tuple(b.shape):
        return False
    return builtins.bool(np.array_equal(_plain_array(a), _plain_array(b)))


_CONTAINS_OP = opcode.opmap["CONTAINS_OP"]


def _asked_by_membership_test() -> builtins.bool:
    """True when the running __eq__ was called for `x in items` (see Note [Torch habits])."""
    try:
        caller = sys._getframe(2)  # 0: this function, 1: __eq__, 2: the code that asked
    except ValueError:  # called from C with no Python code above: not a membership test we can see
        return False
    return caller.f_code.co_code[caller.f_lasti] == _CONTAINS_OP


def _no_comparison(op: str):
    def compare(self: Tensor, other: object) -> Any:
        if op == "==" and _asked_by_membership_test():
            return NotImplemented  # Python then answers `in` by identity
        raise TypeError(
            f"Tensor {op} {type(other).__name__}: slimtensor compares no values elementwise, and will not "
            f"silently compare identity. Use st.equal(a, b) or a.equal(b) for same shape and values, "
            f"`a is b` for the same object, or numpy for elementwise results: np.asarray(a) {op} "
            f"np.asarray(b). (Tensors hash by identity, and `t in items` tests identity: sets, dict keys "
            f"and membership work; to find a tensor's position, use next(i for i, x in "
            f"enumerate(items) if x is t).)"
        )

    return compare


_ARITHMETIC_HINT = (
    "slimtensor does no arithmetic (it is a runtime for layouts, copies and compiled models). Hand the data "
    "to numpy, zero-copy on the CPU: a = np.asarray(t) (or t.numpy()), or to torch: torch.from_dlpack(t); "
    "bring a result back with st.asarray(result) or st.from_dlpack(result)."
)


def _no_operator(symbol: str):
    def operator(self: Tensor, *args: object) -> Any:
        raise TypeError(f"Tensor {symbol}: {_ARITHMETIC_HINT}")

    return operator


def _no_method(name: str) -> property:
    def getter(self: Tensor) -> Any:
        raise AttributeError(f"Tensor has no method {name}(): {_ARITHMETIC_HINT}")

    return property(getter, doc=f"not provided: {_ARITHMETIC_HINT}")


for _op, _symbol in (
    ("__eq__", "=="),
    ("__ne__", "!="),
    ("__lt__", "<"),
    ("__le__", "<="),
    ("__gt__", ">"),
    ("__ge__", ">="),
):
    setattr(Tensor, _op, _no_comparison(_symbol))
Tensor.__hash__ = object.__hash__  # identity, as before __eq__ was defined
Tensor.equal = lambda self, other: equal(self, other)
Tensor.equal.__doc__ = equal.__doc__

_OPERATORS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "pow": "**",
    "matmul": "@",
    "and": "&",
    "or": "|",
    "xor": "^",
    "lshift": "<<",
    "rshift": ">>",
}
for _name, _symbol in _OPERATORS.items():
    for _form in (f"__{_name}__", f"__r{_name}__", f"__i{_name}__"):
        setattr(Tensor, _form, _no_operator(_symbol))
for _form, _symbol in (
    ("__neg__", "unary -"),
    ("__pos__", "unary +"),
    ("__abs__", "abs()"),
    ("__invert__", "~"),
):
    setattr(Tensor, _form, _no_operator(_symbol))

# torch method names that compute values (each a property raising AttributeError, see Note [Torch habits]).
ARITHMETIC_METHODS = (
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "std",
    "var",
    "norm",
    "cumsum",
    "add",
    "sub",
    "mul",
    "div",
    "matmul",
    "mm",
    "bmm",
    "dot",
    "pow",
    "exp",
    "log",
    "sqrt",
    "abs",
    "neg",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "softmax",
    "clamp",
    "round",
    "floor",
    "ceil",
    "sign",
    "flip",
    "roll",
    "sort",
    "argsort",
    "topk",
    "all",
    "any",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "where",
    "masked_fill",
    "add_",
    "sub_",
    "mul_",
    "div_",
    "clamp_",
)
for _name in ARITHMETIC_METHODS:
    setattr(Tensor, _name, _no_method(_name))
Tensor.__cuda_array_interface__ = property(
    _cai.export, doc="The __cuda_array_interface__ (v3) of a CUDA tensor; AttributeError on other devices."
)

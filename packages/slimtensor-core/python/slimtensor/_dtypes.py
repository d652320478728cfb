"""The dtype objects (slimtensor.float32, ...), their torch-style aliases, and the numpy mapping."""

from __future__ import annotations

import numpy as np

from . import _C

_TABLE = _C._dtype_table()

uint8 = _TABLE["uint8"]
int8 = _TABLE["int8"]
int16 = _TABLE["int16"]
int32 = _TABLE["int32"]
int64 = _TABLE["int64"]
float16 = _TABLE["float16"]
float32 = _TABLE["float32"]
float64 = _TABLE["float64"]
complex32 = _TABLE["complex32"]
complex64 = _TABLE["complex64"]
complex128 = _TABLE["complex128"]
bool = _TABLE["bool"]  # noqa: A001  (torch's name)
bfloat16 = _TABLE["bfloat16"]
uint16 = _TABLE["uint16"]
uint32 = _TABLE["uint32"]
uint64 = _TABLE["uint64"]
float8_e5m2 = _TABLE["float8_e5m2"]
float8_e4m3fn = _TABLE["float8_e4m3fn"]
float8_e5m2fnuz = _TABLE["float8_e5m2fnuz"]
float8_e4m3fnuz = _TABLE["float8_e4m3fnuz"]
float8_e8m0fnu = _TABLE["float8_e8m0fnu"]
float4_e2m1fn_x2 = _TABLE["float4_e2m1fn_x2"]

half = float16
float = float32  # noqa: A001
double = float64
short = int16
int = int32  # noqa: A001
long = int64
cfloat = complex64
cdouble = complex128
chalf = complex32

__all__ = [
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
    "complex32",
    "complex64",
    "complex128",
    "bool",
    "bfloat16",
    "uint16",
    "uint32",
    "uint64",
    "float8_e5m2",
    "float8_e4m3fn",
    "float8_e5m2fnuz",
    "float8_e4m3fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    "half",
    "float",
    "double",
    "short",
    "int",
    "long",
    "cfloat",
    "cdouble",
    "chalf",
]

_ALL = [globals()[n] for n in __all__[:22]]


def dtype_from_code(code: int) -> _C.dtype:
    """The dtype with a c10 ScalarType code (how dtypes unpickle)."""
    return _C._dtype_by_code(code)


def dtypes() -> list[_C.dtype]:
    """Every dtype slimtensor can hold, in c10 code order."""
    return sorted(_ALL, key=lambda d: d.code)


# numpy has no bfloat16/float8: those come from ml_dtypes, imported only when first needed.
_NUMPY_NATIVE = {
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "bool",
}
_ML_DTYPES = {
    "bfloat16",
    "float8_e5m2",
    "float8_e4m3fn",
    "float8_e5m2fnuz",
    "float8_e4m3fnuz",
    "float8_e8m0fnu",
}


def to_numpy_dtype(dt: _C.dtype) -> np.dtype:
    """The numpy dtype of a slimtensor dtype; raises TypeError where numpy has none (complex32, float4)."""
    if dt.name in _NUMPY_NATIVE:
        return np.dtype(dt.name)
    if dt.name in _ML_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, dt.name))
    raise TypeError(
        f"numpy(): {dt.name} has no numpy equivalent; convert first, e.g. t.to(dtype=slimtensor.complex64)"
    )


def from_numpy_dtype(npdt: np.dtype) -> _C.dtype:
    """The slimtensor dtype of a numpy dtype; raises TypeError for unsupported ones."""
    name = np.dtype(npdt).name
    if name in _NUMPY_NATIVE or name in _ML_DTYPES:
        return globals()[name]
    raise TypeError(
        f"from_numpy(): numpy dtype {name!r} is not supported; supported: bool, (u)int8..64, float16/32/64, "
        "complex64/128, and ml_dtypes' bfloat16 and float8 types"
    )

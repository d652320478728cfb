"""slimtensor's C++ core, bound with nanobind."""

from collections.abc import Sequence
import enum
from typing import Any, SupportsIndex, overload


import types
import typing
import numpy as _np

# What the factories and conversions accept for a dtype: a slimtensor dtype, its name ("float32"), a
# Python type (float, int, bool, complex) or a numpy dtype; and for a device: a Device or "cuda:1".
DTypeLike: typing.TypeAlias = "dtype | str | type | _np.dtype[typing.Any]"
DeviceLike: typing.TypeAlias = "Device | str"
_Index: typing.TypeAlias = "typing.SupportsIndex | slice | None | types.EllipsisType"
IndexKey: typing.TypeAlias = "_Index | tuple[_Index, ...]"
_DType: typing.TypeAlias = "dtype"  # inside class Tensor, `dtype` is the property

class dtype:
    """An element type: c10's code, torch's name and the size of one element."""

    @property
    def code(self) -> int:
        """c10 ScalarType code"""

    @property
    def name(self) -> str: ...

    @property
    def itemsize(self) -> int:
        """bytes per element"""

    @property
    def is_floating_point(self) -> bool: ...

    @property
    def is_complex(self) -> bool: ...

    @property
    def is_signed(self) -> bool: ...

    def __repr__(self) -> str: ...

    def __reduce__(self) -> tuple: ...

    def __hash__(self) -> int: ...

    def __eq__(self, arg: object, /) -> bool: ...

class Device:
    """A device: a type ('cpu', 'cuda', a plugin's name) and an index."""

    def __init__(self, type: str | Device, index: int | None = None) -> None: ...

    @property
    def type(self) -> str: ...

    @property
    def index(self, /) -> int | None: ...

    @property
    def code(self) -> int:
        """c10 DeviceType code"""

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

    def __hash__(self) -> int: ...

    def __eq__(self, arg: object, /) -> bool: ...

    def __reduce__(self) -> tuple: ...

class memory_format(enum.Enum):
    """Layout orders for contiguous() and clone()"""

    contiguous_format = 0

    preserve_format = 1

    channels_last = 2

    channels_last_3d = 3

class Storage:
    """The memory under one or more tensors (shared by views)."""

    @property
    def nbytes(self) -> int: ...

    @property
    def data_ptr(self) -> int:
        """
        the address of the storage's first byte (an error for device memory that is not addressable)
        """

    @property
    def device(self) -> Device: ...

    @property
    def is_owning(self) -> bool:
        """
        True when slimtensor allocated the memory; False when it borrows someone else's
        """

    @property
    def is_read_only(self) -> bool: ...

    @property
    def use_count(self) -> int:
        """
        references to the storage: tensors, views, AOTI handles and this Storage object itself
        """

    @property
    def id(self) -> int:
        """unique for the process, never reused"""

    @property
    def owner(self) -> object:
        """the Python object that keeps borrowed memory alive, or None"""

    def __repr__(self) -> str: ...

class Tensor:
    """A strided view over a storage: sizes, strides, offset, dtype, device."""

    def __init__(self, *args, **kwargs) -> None:
        """
        Tensor(data): a float32 copy of a sequence, array or tensor (torch's legacy constructor); st.tensor(data, dtype=...) for other dtypes, st.empty(...) for an uninitialised tensor.
        """

    @property
    def shape(self, /) -> tuple[int, ...]: ...

    @property
    def ndim(self) -> int: ...

    @property
    def dtype(self, /) -> dtype: ...

    @property
    def device(self) -> Device: ...

    @property
    def nbytes(self) -> int: ...

    @property
    def itemsize(self) -> int: ...

    @property
    def is_read_only(self) -> bool: ...

    @property
    def T(self) -> Tensor: ...

    @property
    def mT(self) -> Tensor: ...

    @overload
    def size(self) -> tuple[int, ...]: ...

    @overload
    def size(self, dim: SupportsIndex) -> int: ...

    @overload
    def stride(self) -> tuple[int, ...]: ...

    @overload
    def stride(self, dim: SupportsIndex) -> int: ...

    def storage_offset(self) -> int: ...

    def numel(self) -> int: ...

    def dim(self) -> int: ...

    def element_size(self) -> int: ...

    def data_ptr(self) -> int:
        """
        the address of element 0 (an error for device memory that is not addressable)
        """

    def storage(self) -> Storage: ...

    def is_contiguous(self, memory_format: memory_format | None = None) -> bool: ...

    def __len__(self) -> int: ...

    def as_strided(self, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None) -> Tensor: ...

    def permute(self, *dims: int | Sequence[int]) -> Tensor: ...

    def transpose(self, dim0: int, dim1: int) -> Tensor: ...

    def t(self) -> Tensor: ...

    def select(self, dim: int, index: int) -> Tensor: ...

    def narrow(self, dim: int, start: int, length: int) -> Tensor: ...

    def unsqueeze(self, dim: int) -> Tensor: ...

    def squeeze(self, dim: int | None = None) -> Tensor: ...

    def expand(self, *sizes: int | Sequence[int]) -> Tensor: ...

    def reshape(self, *shape: int | Sequence[int]) -> Tensor: ...

    def view(self, *shape: int | Sequence[int] | _DType | str) -> Tensor: ...

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor: ...

    def contiguous(self, memory_format: memory_format | None = None) -> Tensor: ...

    def clone(self, memory_format: memory_format | None = None) -> Tensor: ...

    def item(self) -> int | float | bool:
        """
        The value of a one-element tensor as a Python number (complex for complex dtypes; typed as torch types it)
        """

    def __getitem__(self, key: IndexKey, /) -> Tensor: ...

    def __setitem__(self, key: IndexKey, value: Tensor | bool | int | float | complex | Any, /) -> None: ...

    def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None, dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> object:
        """
        Exports a DLPack capsule (versioned when max_version >= (1, 0)). The tensor stays alive while the capsule or its consumer holds it. stream follows the DLPack rules for the tensor's device.
        """

    def __dlpack_device__(self) -> tuple[int, int]: ...

    def record_stream(self, stream: object) -> None:
        """
        Marks the tensor's memory as used on `stream` (a stream of its device), as torch's record_stream: the allocator will not reuse it before the work queued on that stream has finished, even once the tensor is freed. `stream`: a stream object (torch.cuda.Stream, slimtensor_cuda.Stream, anything with an int stream_handle) or the device's DLPack stream number. Does nothing for borrowed memory (DLPack, from_blob).
        """

    def pin_memory(self, device: object | None = None) -> object:
        """
        A copy of this CPU tensor in pinned (page-locked) host memory, or the tensor itself when it is pinned already. `device`: the device whose plugin pins it (default: the first available one that can).
        """

    def is_pinned(self, device: object | None = None) -> bool:
        """
        Whether the tensor's memory is pinned host memory (of `device`'s plugin, or of any plugin).
        """

    def numpy(self) -> "_np.ndarray[typing.Any, typing.Any]": ...
    def __array__(self, dtype: object = None, copy: bool | None = None) -> "_np.ndarray[typing.Any, typing.Any]": ...
    def tolist(self) -> typing.Any: ...
    @typing.overload
    def to(self, device: DeviceLike | None = None, dtype: DTypeLike | None = None, *, copy: bool = False, non_blocking: bool = False) -> Tensor: ...
    @typing.overload
    def to(self, dtype: DTypeLike, *, copy: bool = False, non_blocking: bool = False) -> Tensor: ...
    @typing.overload
    def to(self, other: Tensor, *, copy: bool = False, non_blocking: bool = False) -> Tensor: ...
    def cpu(self) -> Tensor: ...
    def cuda(self, device: int | str | None = None, non_blocking: bool = False) -> Tensor: ...
    @property
    def is_cuda(self) -> bool: ...
    @property
    def is_cpu(self) -> bool: ...
    def equal(self, other: Tensor) -> bool: ...
    def __eq__(self, other: object) -> typing.NoReturn:
        """Raises TypeError: use st.equal / t.equal for values, `is` for identity."""
    def __ne__(self, other: object) -> typing.NoReturn:
        """Raises TypeError: use st.equal / t.equal for values, `is` for identity."""
    def __hash__(self) -> int: ...
    @property
    def __cuda_array_interface__(self) -> dict[str, object]: ...
    def __iter__(self) -> "typing.Iterator[Tensor]": ...
    def __reduce__(self) -> tuple[typing.Any, ...]: ...
    def __bool__(self) -> bool: ...
    def __float__(self) -> float: ...
    def __int__(self) -> int: ...
    def __complex__(self) -> complex: ...
    @property
    def layout(self) -> str: ...
    # The dtype shorthands come last: in a stub, mypy reads `int` after `def int` as the method.
    def float(self) -> Tensor: ...
    def double(self) -> Tensor: ...
    def half(self) -> Tensor: ...
    def bfloat16(self) -> Tensor: ...
    def int(self) -> Tensor: ...
    def long(self) -> Tensor: ...
    def short(self) -> Tensor: ...
    def char(self) -> Tensor: ...
    def byte(self) -> Tensor: ...
    def bool(self) -> Tensor: ...
    def cfloat(self) -> Tensor: ...
    def cdouble(self) -> Tensor: ...

def from_dlpack(obj: object) -> Tensor:
    """
    A tensor sharing the memory of any DLPack producer (an object with __dlpack__, or a capsule), or of a buffer-protocol object (bytes, bytearray, memoryview). Legacy (unversioned) capsules import read-only unless the producer is known to be writable (slimtensor, numpy, torch).
    """

def empty(*size: int | Sequence[int], dtype: DTypeLike | None = None, device: DeviceLike | None = None, pin_memory: bool = False) -> Tensor:
    """
    An uninitialized contiguous tensor: empty(2, 3) or empty((2, 3)). pin_memory=True: in pinned host memory.
    """

def zeros(*size: int | Sequence[int], dtype: DTypeLike | None = None, device: DeviceLike | None = None, pin_memory: bool = False) -> Tensor: ...

def ones(*size: int | Sequence[int], dtype: DTypeLike | None = None, device: DeviceLike | None = None, pin_memory: bool = False) -> Tensor: ...

def full(size: int | Sequence[int], fill_value: bool | int | float | complex, *, dtype: DTypeLike | None = None, device: DeviceLike | None = None, pin_memory: bool = False) -> Tensor: ...

def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: DTypeLike | None = None, device: DeviceLike | None = None, pin_memory: bool = False) -> Tensor: ...

def empty_like(other: Tensor, *, dtype: DTypeLike | None = None, device: DeviceLike | None = None) -> Tensor: ...

def from_blob(ptr: int, shape: Sequence[int], strides: Sequence[int] | None = None, dtype: DTypeLike | None = None, device: DeviceLike | None = None, storage_offset: int = 0, owner: object | None = None, read_only: bool = False) -> Tensor:
    """
    A tensor over memory slimtensor does not own. `ptr` is the storage base; the view starts storage_offset elements after it. `owner` is kept alive until the last tensor over the memory is gone.
    """

def synchronize(device: object | None = None) -> None:
    """
    Waits until all work queued on a device (every stream) has finished: `device` ('cuda', 'cuda:1'), or None for the current device of every plugin device type. A no-op for the CPU.
    """

def current_device(type: object) -> int:
    """
    The calling thread's current device index of a device type ('cuda'): 0 for the CPU.
    """

def set_device(device: object) -> None:
    """
    Sets the calling thread's current device of that type: set_device('cuda:1').
    """

def reset_peak_memory_stats(device: DeviceLike | None = None) -> None: ...

def set_num_threads(n: int) -> None:
    """Threads slimtensor's own kernels (large copies and fills) may use."""

def get_num_threads() -> int: ...

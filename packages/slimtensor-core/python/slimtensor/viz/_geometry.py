"""Layout arithmetic behind the pictures: which storage element each logical index of a view reaches."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass

EXACT_LIMIT = 1 << 16  # for spans up to this many elements, overlap is decided by counting


@dataclass(frozen=True)
class Layout:
    """What a picture needs to know about one tensor: its layout, not its values.

    Units are elements of the tensor's dtype (as ``t.stride()`` and ``t.storage_offset()`` are);
    ``storage_elements`` is the storage's byte size divided by the tensor's itemsize.
    """

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    itemsize: int
    dtype: str
    device: str
    storage_elements: int
    storage_id: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def notation(self) -> str:
        """The CuTe-style ``shape:strides @ offset`` notation, e.g. ``(2, 3):(3, 1) @ 0``."""
        return f"{_tuple(self.shape)}:{_tuple(self.strides)} @ {self.offset}"

    def element(self, index: tuple[int, ...]) -> int:
        """The storage element that logical ``index`` maps to: offset + sum(index[d] * strides[d])."""
        return self.offset + sum(i * s for i, s in zip(index, self.strides, strict=True))

    def indices(self):
        """Every logical index, in row-major order."""
        return itertools.product(*(range(n) for n in self.shape))

    def span(self) -> tuple[int, int]:
        """The half-open range [lo, hi) of storage elements the view can reach (mdspan's required span).

        Empty views reach nothing: (offset, offset).
        """
        if self.numel == 0:
            return (self.offset, self.offset)
        hi = self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.strides, strict=True)) + 1
        return (self.offset, hi)

    def hits(self) -> Counter[int]:
        """How many logical elements reach each storage element (more than 1 means self-overlap).

        Computed one dimension at a time over the reached set, so its cost follows the span, not numel:
        an ``expand`` of one element to a million is cheap.
        """
        if self.numel == 0:
            return Counter()
        counts: Counter[int] = Counter({self.offset: 1})
        for n, s in zip(self.shape, self.strides, strict=True):
            if n == 1:
                continue
            if s == 0:
                counts = Counter({e: c * n for e, c in counts.items()})
                continue
            grown: Counter[int] = Counter()
            for e, c in counts.items():
                for i in range(n):
                    grown[e + i * s] += c
            counts = grown
        return counts

    def is_contiguous(self) -> bool:
        """Row-major contiguity, with PyTorch's rule that dimensions of size 1 may have any stride."""
        expected = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if n == 1:
                continue
            if s != expected:
                return False
            expected *= n
        return True

    def is_unique(self) -> bool:
        """No two logical elements share a storage element (mdspan's is_unique).

        Exact (counted) for spans up to ``EXACT_LIMIT`` elements; above it a sufficient stride test
        decides, which may call some unusual unique layouts overlapping.
        """
        if self.numel == 0:
            return True
        lo, hi = self.span()
        if hi - lo <= EXACT_LIMIT:
            return len(self.hits()) == self.numel
        reach = 0  # the largest distance covered by the dimensions with smaller strides
        for s, n in sorted((s, n) for n, s in zip(self.shape, self.strides, strict=True) if n > 1):
            if s <= reach:
                return False
            reach += (n - 1) * s
        return True

    def is_exhaustive(self) -> bool:
        """The view reaches every element of its span exactly once (mdspan's is_exhaustive)."""
        lo, hi = self.span()
        return self.is_unique() and hi - lo == self.numel

    def describe(self) -> str:
        """One line of plain words: contiguity, self-overlap and gaps."""
        words = [f"{self.dtype}", f"{self.device}"]
        words.append("contiguous" if self.is_contiguous() else "not contiguous")
        if not self.is_unique():
            words.append("self-overlapping")
        lo, hi = self.span()
        if self.numel and self.is_unique() and hi - lo > self.numel:
            words.append(f"{hi - lo - self.numel} gap elements in its span")
        words.append(f"storage {self.storage_elements} elements")
        return ", ".join(words)


def _tuple(values: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(v) for v in values) + ("," if len(values) == 1 else "") + ")"


def describe_tensor(t, *, function: str) -> Layout:
    """Read a tensor's layout through its public API; ``function`` names the caller in error messages."""
    missing = [
        name for name in ("shape", "stride", "storage_offset", "storage", "dtype") if not hasattr(t, name)
    ]
    if missing:
        raise TypeError(
            f"{function}(): expected a slimtensor.Tensor, got {type(t).__module__}."
            f"{type(t).__qualname__} (it has no {', '.join(missing)})"
        )
    shape = tuple(int(n) for n in t.shape)
    strides = tuple(int(s) for s in t.stride())
    itemsize = int(t.dtype.itemsize)
    storage = t.storage()
    storage_nbytes = int(storage.nbytes)
    return Layout(
        shape=shape,
        strides=strides,
        offset=int(t.storage_offset()),
        itemsize=itemsize,
        dtype=str(t.dtype.name),
        device=str(t.device),
        storage_elements=storage_nbytes // itemsize if itemsize else 0,
        storage_id=int(storage.id),
    )

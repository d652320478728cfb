// layout/layout.h: questions about a strided layout (overlap, density, channels-last strides).
#pragma once

#include <cstdint>

#include "slimtensor/tensor/tensor.h"

namespace slimtensor {

// The storage offset of a view that starts `start` elements along a dim of stride `stride` (narrow, slice,
// indexing), as PyTorch: also for an empty result. Only an empty result can put start * stride past int64 (a
// size-1 dim with a huge stride, sliced at its end: every element that exists lies within the storage); it
// addresses no element, so it keeps the view's own offset rather than wrapping.
inline int64_t offset_at(int64_t offset, int64_t start, int64_t stride) {
  int64_t step = 0, out = 0;
  if (__builtin_mul_overflow(start, stride, &step) || __builtin_add_overflow(offset, step, &out)) return offset;
  return out;
}

// Bytes from a view's element 0 to the end of its last element: itemsize * (1 + sum stride*(size-1)),
// 0 when it has no elements. Fits in int64 for any view of a storage (Note [Tensor invariants]).
inline int64_t span_bytes(const int64_t* sizes, const int64_t* strides, int n, int64_t itemsize) {
  int64_t last = 0;
  for (int d = 0; d < n; ++d) {
    if (sizes[d] == 0) return 0;
    last += strides[d] * (sizes[d] - 1);
  }
  return (last + 1) * itemsize;
}

enum class Overlap { No, Yes, TooHard };

// Whether two elements of the layout share memory; TooHard only for huge layouts that no simple rule
// decides (then copy_ lets them through, as PyTorch does).
Overlap internal_overlap(const int64_t* sizes, const int64_t* strides, int ndim);
// Every element of the covered range is used exactly once (a permutation of a contiguous layout); empty
// layouts count as dense, as in PyTorch (its contiguous flag is true for them).
bool is_non_overlapping_and_dense(const int64_t* sizes, const int64_t* strides, int ndim);
// PyTorch's infer_dense_strides: dense strides that keep the order of `strides` (what preserve_format gives
// a layout that is not dense). Writes ndim strides to `out`.
void infer_dense_strides(const int64_t* sizes, const int64_t* strides, int ndim, int64_t* out);
// Strides of `format` (channels_last needs 4 dims, channels_last_3d 5) for sizes; false if not applicable.
bool memory_format_strides(const int64_t* sizes, int ndim, MemoryFormat format, int64_t* out);

}  // namespace slimtensor

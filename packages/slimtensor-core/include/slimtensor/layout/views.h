// slimtensor/layout/views.h: operations that return a new tensor over the same storage.
//
// Every view is checked against its storage (Note [Tensor invariants]). Semantics follow PyTorch, with
// the differences written here: negative strides and negative slice steps are rejected, not supported.
#pragma once

#include <optional>

#include "slimtensor/base/export.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor {

// Absolute offset (in elements from the storage base); nullopt keeps self's offset.
SLIMTENSOR_API Tensor as_strided(const Tensor& self, IntList sizes, IntList strides,
                                 std::optional<int64_t> storage_offset = std::nullopt);
SLIMTENSOR_API Tensor permute(const Tensor& self, IntList dims);
SLIMTENSOR_API Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
// Reverses all dims (t.T); for ndim <= 2 this is the matrix transpose.
SLIMTENSOR_API Tensor reverse_dims(const Tensor& self);
// Swaps the last two dims (t.mT); needs ndim >= 2.
SLIMTENSOR_API Tensor matrix_transpose(const Tensor& self);
SLIMTENSOR_API Tensor select(const Tensor& self, int64_t dim, int64_t index);
// Elements [start, start + length) of dim; start may be negative.
SLIMTENSOR_API Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length);
// Python slice semantics with step >= 1 (start/stop already clamped by the caller or here).
SLIMTENSOR_API Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop,
                            int64_t step);
SLIMTENSOR_API Tensor unsqueeze(const Tensor& self, int64_t dim);
// Removes dim if its size is 1; leaves the tensor as it is otherwise (PyTorch semantics).
SLIMTENSOR_API Tensor squeeze(const Tensor& self, int64_t dim);
SLIMTENSOR_API Tensor squeeze_all(const Tensor& self);
// -1 keeps a size; new leading dims may be added; only size-1 dims can grow (stride becomes 0).
SLIMTENSOR_API Tensor expand(const Tensor& self, IntList sizes);
// A view with another shape; throws Error(Runtime) when the layout cannot be viewed that way.
SLIMTENSOR_API Tensor view(const Tensor& self, IntList shape);
// Reinterprets the bytes as another dtype (PyTorch's view(dtype)): the last dim scales by the ratio.
SLIMTENSOR_API Tensor view_dtype(const Tensor& self, ScalarType dtype);
// A view when PyTorch's stride algorithm allows it, a contiguous copy otherwise.
SLIMTENSOR_API Tensor reshape(const Tensor& self, IntList shape);
SLIMTENSOR_API Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);

// Resolves a single -1 in `shape` for `numel` elements; throws Error(Runtime) when impossible.
SLIMTENSOR_API std::vector<int64_t> infer_shape(IntList shape, int64_t numel, const char* function);
// PyTorch's computeStride: strides to view (sizes, strides) as `shape`, or nullopt when impossible.
SLIMTENSOR_API std::optional<std::vector<int64_t>> view_strides(IntList sizes, IntList strides, IntList shape);
// The same two without allocating: `out` holds shape.size entries; view_strides_into returns false when
// the layout cannot be viewed as `shape`.
SLIMTENSOR_API void infer_shape_into(IntList shape, int64_t numel, const char* function, int64_t* out);
SLIMTENSOR_API bool view_strides_into(IntList sizes, IntList strides, IntList shape, int64_t* out);

}  // namespace slimtensor

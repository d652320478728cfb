// slimtensor/copy/copy.h: copy_ (strided, broadcasting, dtype-converting, cross-device).
#pragma once

#include "slimtensor/base/export.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor {

// Copies src into dst, broadcasting src to dst's shape and converting dtypes.
// Throws Error(Runtime) when shapes do not broadcast, dst overlaps itself (as after expand), dst and src
// partially overlap, dst is read-only, or a dtype cannot be converted (float8 and float4).
SLIMTENSOR_API void copy_(const Tensor& dst, const Tensor& src);

// Whether any two elements of t share memory (PyTorch's internal overlap, decided exactly).
SLIMTENSOR_API bool has_internal_overlap(const Tensor& t);

}  // namespace slimtensor

// slimtensor/copy/fill.h: fill_, with PyTorch's range check of the value.
#pragma once

#include "slimtensor/base/export.h"
#include "slimtensor/copy/scalar.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor {

// Writes `value` into every element (converted by the rules of copy_). Throws Error(Runtime) when the
// dtype cannot hold the value or the tensor is read-only.
SLIMTENSOR_API void fill_(const Tensor& dst, const Scalar& value);

}  // namespace slimtensor

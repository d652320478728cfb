// slimtensor/copy/item.h: item, the one element of a tensor as a Scalar.
#pragma once

#include "slimtensor/base/export.h"
#include "slimtensor/copy/scalar.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor {

// Reads the single element (numel must be 1) as a Scalar of the dtype's kind.
SLIMTENSOR_API Scalar item(const Tensor& self);

}  // namespace slimtensor

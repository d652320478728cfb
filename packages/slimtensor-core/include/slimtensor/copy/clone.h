// slimtensor/copy/clone.h: the copies that make a new tensor: clone, contiguous, to.
#pragma once

#include "slimtensor/base/export.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor {

// A new tensor with the same data; Preserve keeps dense strides and gives others dense strides in the same
// order (PyTorch's preserve_format).
SLIMTENSOR_API Tensor clone(const Tensor& self, MemoryFormat format = MemoryFormat::Preserve);
// self if it already is contiguous in `format`, else a contiguous copy.
SLIMTENSOR_API Tensor contiguous(const Tensor& self, MemoryFormat format = MemoryFormat::Contiguous);
// self when nothing changes; a copy on `device` with `dtype` otherwise. `device` may have index -1 (the
// current device of its type). non_blocking as in copy_.
SLIMTENSOR_API Tensor to(const Tensor& self, Device device, ScalarType dtype, bool copy = false,
                         bool non_blocking = false);

}  // namespace slimtensor

// slimtensor/factories.h: functions that make new tensors.
#pragma once

#include "slimtensor/copy.h"
#include "slimtensor/export.h"
#include "slimtensor/tensor.h"

namespace slimtensor {

// Uninitialized owning storage of exactly the bytes the strided layout needs (offset 0).
SLIMTENSOR_API Tensor empty_strided(IntList sizes, IntList strides, ScalarType dtype, Device device);
SLIMTENSOR_API Tensor empty(IntList sizes, ScalarType dtype, Device device);
// Same sizes, dtype and device; dense layouts keep their strides, others get the layout PyTorch's
// preserve_format suggests (channels_last when the strides look like it, else contiguous).
SLIMTENSOR_API Tensor empty_like(const Tensor& other);
SLIMTENSOR_API Tensor empty_like(const Tensor& other, ScalarType dtype, Device device);
SLIMTENSOR_API Tensor full(IntList sizes, const Scalar& value, ScalarType dtype, Device device);
// Borrowed memory: `data` is the storage base, the view starts `storage_offset` elements after it.
// The storage covers exactly the view's extent. `deleter(data, context)` runs when the last user goes.
SLIMTENSOR_API Tensor from_blob(void* data, IntList sizes, IntList strides, int64_t storage_offset,
                                ScalarType dtype, Device device, BorrowDeleter deleter, void* context,
                                bool read_only);

}  // namespace slimtensor

// slimtensor/tensor/factories.h: functions that make new tensors.
#pragma once

#include "slimtensor/base/export.h"
#include "slimtensor/copy/scalar.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor {

// Uninitialized owning storage of exactly the bytes the strided layout needs (offset 0).
// `function` names the caller in errors (zeros(), ones(), full() go through empty()).
SLIMTENSOR_API Tensor empty_strided(IntList sizes, IntList strides, ScalarType dtype, Device device,
                                    const char* function = "empty_strided()");
SLIMTENSOR_API Tensor empty(IntList sizes, ScalarType dtype, Device device, const char* function = "empty()");
// Same sizes, dtype and device; dense layouts keep their strides, others get dense strides in the same
// order (PyTorch's preserve_format).
SLIMTENSOR_API Tensor empty_like(const Tensor& other);
SLIMTENSOR_API Tensor empty_like(const Tensor& other, ScalarType dtype, Device device);
SLIMTENSOR_API Tensor full(IntList sizes, const Scalar& value, ScalarType dtype, Device device);
// Borrowed memory: `data` is the storage base, the view starts `storage_offset` elements after it.
// The storage covers exactly the view's extent. `deleter(data, context)` runs when the last user goes.
// `owner` names who owns the memory in traces ("ndarray", "bytearray"); `op` names the operation in traces
// and errors. Everything (layout, extent, a NULL `data` with elements) is checked before the storage
// exists: when this throws, the deleter was neither kept nor called, and the caller still owns the memory.
SLIMTENSOR_API Tensor from_blob(void* data, IntList sizes, IntList strides, int64_t storage_offset, ScalarType dtype,
                                Device device, BorrowDeleter deleter, void* context, bool read_only,
                                const char* owner = "from_blob", const char* op = "from_blob");

}  // namespace slimtensor

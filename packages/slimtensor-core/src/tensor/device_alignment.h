// tensor/device_alignment.h: the alignment plugin-device memory must have where a view of it is made.
//
// Note [Device element alignment]
// Device kernels load and store whole elements (CUDA's copy, conversion and fill kernels, as torch's do),
// and a GPU faults on a misaligned element (cudaErrorMisalignedAddress), which poisons the whole context.
// So memory of a plugin device is refused where a view of it is made (from_blob, DLPack, a view that changes
// the dtype) unless element 0 sits at a multiple of the element's natural alignment (the largest power of
// two dividing the itemsize, at most 16); later elements are whole strides of elements away. The CPU's
// kernels take any alignment (typed loops only over aligned pointers, memcpy otherwise), so the CPU is not
// checked.
#pragma once

#include <cstdint>

#include "slimtensor/tensor/device.h"
#include "slimtensor/tensor/scalar_type.h"

namespace slimtensor {

// Throws Error(Value) naming `function` unless `element0` is aligned for `dtype`. `element0` is element 0's
// address on an addressable device, else its byte offset from the allocation handle.
void check_device_alignment(Device device, uint64_t element0, ScalarType dtype, const char* function);

}  // namespace slimtensor

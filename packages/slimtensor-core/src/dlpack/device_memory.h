// dlpack/device_memory.h: where a tensor's memory is, as DLPack says it (data, byte_offset), both ways.
//
// Note [DLPack device memory]
// DLPack lets `data` be an opaque handle, with `byte_offset` saying where the tensor starts in it (Metal
// buffers). slimtensor exports what each consumer expects:
//   - CPU memory and devices whose memory is addressable (CUDA): data = the address of element 0,
//     byte_offset = 0 (torch and cupy read kDLCUDA this way);
//   - devices whose memory is not addressable: data = the allocation handle, byte_offset = bytes from the
//     start of the allocation to element 0 (Note [Device memory handles] in slimtensor/c/device_plugin.h).
// On import, host and addressable memory starts at data + byte_offset (the storage covers exactly the
// view); non-addressable memory is borrowed as (handle, byte_offset) and no arithmetic is done on it.
#pragma once

#include <cstdint>

#include "dlpack/dlpack.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor::dlpack {

struct DLMemory {
  void* data;
  uint64_t byte_offset;
};

// data and byte_offset for an export of t.
DLMemory export_memory(const Tensor& t) noexcept;
// A tensor of the given layout over the memory of dl on `device` (checked by the callee before the storage
// takes `release`; see decode() in dlpack/codec.h).
Tensor import_memory(const DLTensor& dl, IntList sizes, IntList strides, ScalarType dtype, Device device,
                     BorrowDeleter release, void* context, bool read_only, const char* owner, const char* function);

}  // namespace slimtensor::dlpack

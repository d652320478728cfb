// dlpack/codec.h: the one DLPack codec: Tensor -> DLManagedTensor(Versioned) and DLTensor -> Tensor.
//
// Note [DLPack codec]
// Everything slimtensor exchanges through DLPack goes through these functions: Tensor.__dlpack__ and
// from_dlpack (src/python/dlpack.cpp) and the AOTI bridge for C hosts (src/aoti/dlpack_bridge.cpp). What
// differs between the two callers is only the envelope (Python capsules and their names, or raw pointers
// handed over a C ABI) and who calls a producer's deleter (with the GIL, or directly); dtype and device
// codes, byte_offset, strides, read-only and every check are here, once.
//
// Export: the managed tensor owns one reference to the tensor (and so to its storage) until its deleter
// runs; shape and strides point into that tensor. Device memory is described per Note [DLPack device
// memory] (dlpack/device_memory.h). Import: decode() checks everything (ndim, shape pointer, dtype,
// device, negative strides, layout, extent, a NULL data pointer with elements) *before* the storage takes
// the producer's release function: when it throws, the caller still owns the producer's tensor.
#pragma once

#include <cstdint>

#include "dlpack/dlpack.h"
#include "slimtensor/base/export.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor::dlpack {

// A versioned managed tensor (version 1.1) over t with `flags` (kDLPackFlagBitmask*); the read-only bit is
// added when t is read-only. Throws Error(Buffer) naming `function` when t's dtype or device has no DLPack
// code.
SLIMTENSOR_API DLManagedTensorVersioned* encode_versioned(Tensor t, uint64_t flags, const char* function);
// A legacy managed tensor over t. A legacy tensor cannot say read-only, so a read-only t is refused with
// Error(Buffer) (the caller words the fix for its user); otherwise as encode_versioned.
SLIMTENSOR_API DLManagedTensor* encode_legacy(Tensor t, const char* function);
// Whether a managed tensor was made by encode_* (so slimtensor knows what it says, e.g. that a legacy one
// is writable).
SLIMTENSOR_API bool is_own_export(const DLManagedTensor* m) noexcept;
SLIMTENSOR_API bool is_own_export(const DLManagedTensorVersioned* m) noexcept;
// The tensor an own export holds (nullptr for a foreign one).
SLIMTENSOR_API const Tensor* exported_tensor(const DLManagedTensor* m) noexcept;

// Refuses a versioned managed tensor of a major version other than 1 (Error(Buffer)).
SLIMTENSOR_API void check_version(const DLManagedTensorVersioned& m, const char* function);
// A tensor over the memory dl describes; `release(data, context)` runs once the last tensor, view or
// handle over it is gone (the caller's way to call the producer's deleter). `owner` names the producer in
// traces. Throws (Value, Type, Buffer) naming `function` before anything is kept.
SLIMTENSOR_API Tensor decode(const DLTensor& dl, bool read_only, BorrowDeleter release, void* context,
                             const char* owner, const char* function);

}  // namespace slimtensor::dlpack

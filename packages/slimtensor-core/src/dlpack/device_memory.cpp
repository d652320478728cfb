// dlpack/device_memory.cpp: where a tensor's memory is, as DLPack says it (Note [DLPack device memory]).
#include "dlpack/device_memory.h"

#include "slimtensor/base/error.h"
#include "slimtensor/tensor/factories.h"

namespace slimtensor::dlpack {

DLMemory export_memory(const Tensor& t) noexcept { return {t.data_ptr(), 0}; }

Tensor import_memory(const DLTensor& dl, IntList sizes, IntList strides, ScalarType dtype, Device device,
                     BorrowDeleter release, void* context, bool read_only, const char* owner,
                     const char* function) {
  char* base = static_cast<char*>(dl.data);
  if (base != nullptr && dl.byte_offset != 0) {
    const auto address = reinterpret_cast<uintptr_t>(base);
    ST_CHECK(dl.byte_offset <= UINTPTR_MAX - address, Value, call_name(function), ": byte_offset ",
             dl.byte_offset, " added to the data pointer wraps around the address space; the producer is broken");
    base += dl.byte_offset;
  }
  return from_blob(base, sizes, strides, 0, dtype, device, release, context, read_only, owner, function);
}

}  // namespace slimtensor::dlpack

// dlpack/device_memory.cpp: where a tensor's memory is, as DLPack says it (Note [DLPack device memory]).
#include "dlpack/device_memory.h"

#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/tensor/factories.h"
#include "tensor/device_alignment.h"

namespace slimtensor::dlpack {

DLMemory export_memory(const Tensor& t) noexcept {
  if (t.device().is_cpu() || t.is_addressable()) return {t.data_ptr(), 0};
  const st_memory_ref ref = t.memory_ref();  // an opaque handle: the offset travels in byte_offset
  return {ref.handle, ref.byte_offset};
}

Tensor import_memory(const DLTensor& dl, IntList sizes, IntList strides, ScalarType dtype, Device device,
                     BorrowDeleter release, void* context, bool read_only, const char* owner, const char* function) {
  const DeviceEntry* e = device.is_cpu() ? nullptr : find_device(device.type);
  if (e && !(e->memory_flags & ST_DEVICE_MEMORY_ADDRESSABLE)) {
    // Not an address: borrowed as (handle, byte_offset), with no arithmetic on the handle.
    return Tensor::make_for_extent(sizes, strides, 0, dtype, function, function, [&](int64_t extent) {
      ST_CHECK(dl.data != nullptr || extent == 0, Value, call_name(function),
               ": the DLPack tensor has elements "
               "but a null data pointer; the producer is broken");
      if (extent > 0) check_device_alignment(device, dl.byte_offset, dtype, function);
      return Storage::adopt(StorageImpl::borrow_device(device, dl.data, dl.byte_offset, extent, release, context,
                                                       read_only, owner, function));
    });
  }
  char* base = static_cast<char*>(dl.data);
  if (base != nullptr && dl.byte_offset != 0) {
    const auto address = reinterpret_cast<uintptr_t>(base);
    ST_CHECK(dl.byte_offset <= UINTPTR_MAX - address, Value, call_name(function), ": byte_offset ", dl.byte_offset,
             " added to the data pointer wraps around the address space; the producer is broken");
    base += dl.byte_offset;
  }
  return from_blob(base, sizes, strides, 0, dtype, device, release, context, read_only, owner, function);
}

}  // namespace slimtensor::dlpack

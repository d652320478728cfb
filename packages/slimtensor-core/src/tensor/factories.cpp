// tensor/factories.cpp: empty_strided, empty, empty_like, full, from_blob.
#include "slimtensor/tensor/factories.h"

#include <vector>

#include "layout/layout.h"
#include "slimtensor/base/checked_math.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/fill.h"
#include "slimtensor/runtime/device_registry.h"
#include "tensor/device_alignment.h"

namespace slimtensor {

namespace {
// Owning storage of exactly the view's extent: the layout was just checked (Tensor::make_for_extent).
auto allocate_on(Device device, const char* function) {
  return [device, function](int64_t extent) { return Storage::adopt(StorageImpl::allocate(device, extent, function)); };
}
}  // namespace

Tensor empty_strided(IntList sizes, IntList strides, ScalarType dtype, Device device, const char* function) {
  return Tensor::make_for_extent(sizes, strides, 0, dtype, function, "empty_strided", allocate_on(device, function));
}

Tensor empty(IntList sizes, ScalarType dtype, Device device, const char* function) {
  ST_CHECK(sizes.size <= 64, Value, function, ": at most 64 dims are supported but got ", sizes.size);
  int64_t strides[64];
  contiguous_strides(sizes.data, static_cast<int>(sizes.size), strides);
  return Tensor::make_for_extent(sizes, IntList(strides, sizes.size), 0, dtype, function, "empty",
                                 allocate_on(device, function));
}

Tensor empty_like(const Tensor& other) { return empty_like(other, other.dtype(), other.device()); }

Tensor empty_like(const Tensor& other, ScalarType dtype, Device device) {
  const int n = other.ndim();
  if (is_non_overlapping_and_dense(other.sizes(), other.strides(), n)) {
    return empty_strided(IntList(other.sizes(), n), IntList(other.strides(), n), dtype, device);
  }
  std::vector<int64_t> strides(static_cast<size_t>(n));
  infer_dense_strides(other.sizes(), other.strides(), n, strides.data());
  return empty_strided(IntList(other.sizes(), n), strides, dtype, device);
}

Tensor full(IntList sizes, const Scalar& value, ScalarType dtype, Device device) {
  Tensor t = empty(sizes, dtype, device);
  fill_(t, value);
  return t;
}

Tensor from_blob(void* data, IntList sizes, IntList strides, int64_t storage_offset, ScalarType dtype, Device device,
                 BorrowDeleter deleter, void* context, bool read_only, const char* owner, const char* op) {
  // A device must be registered and usable before memory is called its own (as empty(device=...) checks).
  const bool device_address =
      !device.is_cpu() && (usable_device(device, op).memory_flags & ST_DEVICE_MEMORY_ADDRESSABLE) != 0;
  return Tensor::make_for_extent(sizes, strides, storage_offset, dtype, op, op, [&](int64_t extent) {
    if (device_address && extent > 0) {  // before the storage takes the deleter (Note [Device element alignment])
      check_device_alignment(
          device, reinterpret_cast<uintptr_t>(data) + static_cast<uint64_t>(storage_offset * itemsize(dtype)), dtype,
          op);
    }
    return Storage::adopt(StorageImpl::borrow(device, data, extent, deleter, context, read_only, owner, op));
  });
}

}  // namespace slimtensor

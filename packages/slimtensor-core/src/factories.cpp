// factories.cpp: empty_strided, empty, empty_like, full, from_blob.
#include "slimtensor/factories.h"

#include <vector>

#include "layout.h"
#include "slimtensor/error.h"

namespace slimtensor {

Tensor empty_strided(IntList sizes, IntList strides, ScalarType dtype, Device device, const char* function) {
  checked_numel(sizes, function);
  for (int64_t d = 0; d < strides.size; ++d) {
    ST_CHECK(strides[d] >= 0, Value, function, ": strides must be >= 0 but stride[", d, "] is ", strides[d]);
  }
  const int64_t bytes = storage_bytes_needed(sizes, strides, 0, itemsize(dtype), function);
  return Tensor::make(Storage::adopt(StorageImpl::allocate(device, bytes, function)), sizes, strides, 0, dtype,
                      "empty_strided");
}

Tensor empty(IntList sizes, ScalarType dtype, Device device, const char* function) {
  ST_CHECK(sizes.size <= 64, Value, function, ": at most 64 dims are supported but got ", sizes.size);
  checked_numel(sizes, function);
  Dims dims(static_cast<int>(sizes.size));
  for (int64_t d = 0; d < sizes.size; ++d) dims.sizes()[d] = sizes[d];
  contiguous_strides(dims.sizes(), dims.ndim(), dims.strides());
  const int64_t bytes = storage_bytes_needed(sizes, IntList(dims.strides(), sizes.size), 0, itemsize(dtype), function);
  return Tensor::make(Storage::adopt(StorageImpl::allocate(device, bytes, function)), std::move(dims), 0, dtype, "empty");
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
  ST_CHECK(storage_offset >= 0, Value, "from_blob(): storage_offset must be >= 0 but got ", storage_offset);
  for (int64_t d = 0; d < strides.size; ++d) {
    ST_CHECK(strides[d] >= 0, Value, "from_blob(): strides must be >= 0 but stride[", d, "] is ", strides[d]);
  }
  checked_numel(sizes, "from_blob()");
  const int64_t bytes = storage_bytes_needed(sizes, strides, storage_offset, itemsize(dtype), "from_blob()");
  return Tensor::make(Storage::adopt(StorageImpl::borrow(device, data, bytes, deleter, context, read_only, owner)),
                      sizes, strides, storage_offset, dtype, op);
}

}  // namespace slimtensor

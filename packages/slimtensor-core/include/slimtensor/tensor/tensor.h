// slimtensor/tensor/tensor.h: a tensor is a storage, an element offset, sizes, strides and a dtype.
//
// Note [Tensor invariants]
// For a defined tensor (storage present):
//   - ndim >= 0; every size >= 0; every stride >= 0 (negative strides are rejected, never rewritten);
//   - the product of the non-zero sizes, times the itemsize, fits in int64 (so sizes multiply in any
//     order without overflow, even for an empty tensor);
//   - the view is inside its storage: when numel > 0,
//       (offset + sum_i stride_i * (size_i - 1) + 1) * itemsize <= storage.nbytes,
//     and all of that arithmetic fits in int64 (Note [Overflow]);
//   - numel_ and contiguous_ are the cached values of the sizes and strides.
// Every constructor and every view goes through Tensor::make, which checks all of this.
// An undefined tensor (default-constructed) has no storage; only defined() may be asked of it.
#pragma once

#include <cstdint>
#include <vector>

#include "slimtensor/base/export.h"
#include "slimtensor/c/device_plugin.h"
#include "slimtensor/tensor/device.h"
#include "slimtensor/tensor/dims.h"
#include "slimtensor/tensor/scalar_type.h"
#include "slimtensor/tensor/storage.h"

namespace slimtensor {

struct IntList {
  const int64_t* data = nullptr;
  int64_t size = 0;
  IntList() = default;
  IntList(const int64_t* d, int64_t n) : data(d), size(n) {}
  IntList(const std::vector<int64_t>& v) : data(v.data()), size(static_cast<int64_t>(v.size())) {}
  int64_t operator[](int64_t i) const { return data[i]; }
};

enum class MemoryFormat : int8_t { Contiguous = 0, Preserve = 1, ChannelsLast = 2, ChannelsLast3d = 3 };

class SLIMTENSOR_API Tensor {
 public:
  Tensor() noexcept = default;
  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  // Checks Note [Tensor invariants] and builds the tensor. `op` names the caller in errors and traces.
  static Tensor make(Storage storage, IntList sizes, IntList strides, int64_t offset, ScalarType dtype, const char* op);
  // Same, with dims already in a Dims (moved in).
  static Tensor make(Storage storage, Dims dims, int64_t offset, ScalarType dtype, const char* op);
  // Checks the layout (Note [Tensor invariants] without a storage yet), then gives it the storage that
  // `make_storage(extent)` returns for its byte extent from the storage base (0 when it has no elements):
  // empty_strided allocates exactly that, from_blob borrows it. One pass over the dims in all. Errors name
  // `function`, traces name `op`.
  template <typename MakeStorage>
  static Tensor make_for_extent(IntList sizes, IntList strides, int64_t offset, ScalarType dtype, const char* function,
                                const char* op, MakeStorage&& make_storage) {
    Tensor t;
    t.set_layout(sizes, strides, offset, dtype, function);
    const int64_t extent = t.check_layout(function);
    t.storage_ = make_storage(extent);  // if this throws, t has no storage and was never counted
    t.count(op);
    return t;
  }

  bool defined() const noexcept { return static_cast<bool>(storage_); }
  const Storage& storage() const noexcept { return storage_; }
  StorageImpl* storage_impl() const noexcept { return storage_.get(); }
  int64_t storage_offset() const noexcept { return offset_; }
  ScalarType dtype() const noexcept { return dtype_; }
  int64_t itemsize() const noexcept { return slimtensor::itemsize(dtype_); }
  Device device() const noexcept { return storage_->device(); }
  int ndim() const noexcept { return dims_.ndim(); }
  const int64_t* sizes() const noexcept { return dims_.sizes(); }
  const int64_t* strides() const noexcept { return dims_.strides(); }
  const Dims& dims() const noexcept { return dims_; }
  int64_t numel() const noexcept { return numel_; }
  int64_t nbytes() const noexcept { return numel_ * itemsize(); }  // fits: checked by make()
  bool is_contiguous() const noexcept { return contiguous_; }
  bool is_contiguous(MemoryFormat format) const noexcept;
  bool is_read_only() const noexcept { return storage_->is_read_only(); }
  // Address of element 0 (storage address + offset * itemsize); nullptr for an empty storage and for
  // device memory that is not addressable (Note [Storage handles]): use memory_ref() for that.
  void* data_ptr() const noexcept {
    char* base = static_cast<char*>(storage_->address());
    return base ? base + offset_ * itemsize() : nullptr;
  }
  // Where element 0 lives, as the plugin ABI names memory: {handle, handle_offset + offset * itemsize,
  // device index}; for the CPU {base address, offset * itemsize, 0}.
  st_memory_ref memory_ref() const noexcept {
    const StorageImpl* s = storage_.get();
    return st_memory_ref{s->data(), s->handle_offset() + static_cast<uint64_t>(offset_ * itemsize()), s->device().index,
                         0};
  }
  // Whether data_ptr() is an address (the CPU, addressable devices).
  bool is_addressable() const noexcept { return storage_->is_addressable(); }
  // Size and stride of dim d (negative d counts from the end); throws Error(Index) when out of range.
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  // Identifies this tensor in traces; 0 when it was made while no trace was active.
  uint64_t trace_id() const noexcept { return id_; }

 private:
  void set_layout(IntList sizes, IntList strides, int64_t offset, ScalarType dtype, const char* op);
  // Checks sizes, strides and offset, caches numel_ and contiguous_; returns the byte extent.
  int64_t check_layout(const char* op);
  [[noreturn]] void report_bad_layout(const char* op) const;  // says which size, stride or offset is wrong
  [[noreturn]] void report_overflow(const char* op) const;    // says which quantity overflows int64
  // check_layout and the storage bound, then count; drops the storage if a check fails.
  void finish(const char* op);
  void count(const char* op) noexcept;  // counts the tensor as live and traces its creation (best effort)

  Storage storage_;
  Dims dims_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
  ScalarType dtype_ = ScalarType::Float32;
  bool contiguous_ = true;
  uint64_t id_ = 0;
};

// Wraps a possibly negative dim into [0, ndim); throws Error(Index) naming `function` when out of range.
SLIMTENSOR_API int64_t wrap_dim(int64_t dim, int64_t ndim, const char* function);
// Row-major strides for sizes (size-0 dims count as 1, as PyTorch does).
SLIMTENSOR_API void contiguous_strides(const int64_t* sizes, int ndim, int64_t* out);
// numel of sizes; throws Error(Value) on negative sizes or overflow.
SLIMTENSOR_API int64_t checked_numel(IntList sizes, const char* function);
// Bytes a view needs from its storage base: itemsize * (offset + 1 + sum stride*(size-1)), 0 if empty.
// Throws Error(Value) on overflow.
SLIMTENSOR_API int64_t storage_bytes_needed(IntList sizes, IntList strides, int64_t offset, int64_t itemsize,
                                            const char* function);

}  // namespace slimtensor

// dlpack/codec.cpp: the one DLPack codec (Note [DLPack codec]).
#include "dlpack/codec.h"

#include <new>
#include <utility>

#include "dlpack/device_memory.h"
#include "dlpack/types.h"
#include "slimtensor/base/error.h"
#include "slimtensor/tensor/dims.h"

namespace slimtensor::dlpack {
namespace {

// What an export owns: the managed struct the consumer sees, and the tensor whose sizes and strides its
// shape and strides point into (Tensor keeps them in place while it lives: Note [Inline dims]).
template <class Managed>
struct Exported {
  Managed managed{};
  Tensor tensor;
};

template <class Managed>
void delete_exported(Managed* self) {
  delete static_cast<Exported<Managed>*>(self->manager_ctx);
}

template <class Managed>
Managed* encode(Tensor t, const char* function) {
  DLDataType dtype;
  if (!to_dl_dtype(t.dtype(), &dtype)) {
    fail(ErrorKind::Buffer, call_name(function), ": ", name(t.dtype()),
         " has no DLPack type code; convert it "
         "first (t.to(dtype=...)) or view its bytes (t.view(st.uint8))");
  }
  const int32_t device_type = dl_device_type(t.device());
  if (device_type == 0) {
    fail(ErrorKind::Buffer, call_name(function), ": device ", device_string(t.device()),
         " has no DLPack device "
         "code (its plugin declares none); copy the tensor to the CPU first (t.cpu())");
  }
  auto* e = new Exported<Managed>{};
  e->tensor = std::move(t);
  const Tensor& held = e->tensor;
  const DLMemory memory = export_memory(held);
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = memory.data;
  dl.byte_offset = memory.byte_offset;
  dl.device = {device_type, held.device().index};
  dl.ndim = held.ndim();
  dl.dtype = dtype;
  dl.shape = const_cast<int64_t*>(held.sizes());
  dl.strides = const_cast<int64_t*>(held.strides());
  e->managed.manager_ctx = e;
  e->managed.deleter = &delete_exported<Managed>;
  return &e->managed;
}

}  // namespace

DLManagedTensorVersioned* encode_versioned(Tensor t, uint64_t flags, const char* function) {
  if (t.is_read_only()) flags |= kDLPackFlagBitmaskReadOnly;
  DLManagedTensorVersioned* m = encode<DLManagedTensorVersioned>(std::move(t), function);
  m->version = {kDLPackMajorVersion, kDLPackMinorVersion};
  m->flags = flags;
  return m;
}

DLManagedTensor* encode_legacy(Tensor t, const char* function) {
  ST_CHECK(!t.is_read_only(), Buffer, call_name(function),
           ": the tensor is read-only and a legacy "
           "(unversioned) DLPack tensor cannot say so");
  return encode<DLManagedTensor>(std::move(t), function);
}

bool is_own_export(const DLManagedTensor* m) noexcept { return m && m->deleter == &delete_exported<DLManagedTensor>; }
bool is_own_export(const DLManagedTensorVersioned* m) noexcept {
  return m && m->deleter == &delete_exported<DLManagedTensorVersioned>;
}
const Tensor* exported_tensor(const DLManagedTensor* m) noexcept {
  return is_own_export(m) ? &static_cast<Exported<DLManagedTensor>*>(m->manager_ctx)->tensor : nullptr;
}

void check_version(const DLManagedTensorVersioned& m, const char* function) {
  ST_CHECK(m.version.major == kDLPackMajorVersion, Buffer, call_name(function), ": DLPack major version ",
           m.version.major, " is not supported (slimtensor reads 1.x); ask the producer for max_version=(1, 1)");
}

Tensor decode(const DLTensor& dl, bool read_only, BorrowDeleter release, void* context, const char* owner,
              const char* function) {
  ST_CHECK(dl.ndim >= 0 && dl.ndim <= kMaxDims, Value, call_name(function), ": ndim must be in [0, ", kMaxDims,
           "] but the DLPack tensor says ", dl.ndim);
  ST_CHECK(dl.ndim == 0 || dl.shape != nullptr, Value, call_name(function), ": the DLPack tensor has ndim ", dl.ndim,
           " but a null shape pointer; the producer is broken");
  const ScalarType dtype = from_dl_dtype(dl.dtype, function);
  const Device device = from_dl_device(dl.device, function);
  int64_t sizes[kMaxDims], strides[kMaxDims];
  for (int d = 0; d < dl.ndim; ++d) sizes[d] = dl.shape[d];
  if (dl.strides) {
    for (int d = 0; d < dl.ndim; ++d) {
      strides[d] = dl.strides[d];
      if (strides[d] < 0) {
        // A dim of size 0 or 1 never steps, so its stride means nothing (torch exports -1 there at times).
        ST_CHECK(sizes[d] <= 1, Value, call_name(function), ": stride[", d, "] is negative (", strides[d],
                 "); slimtensor has no negative strides: export a contiguous copy");
        strides[d] = 0;
      }
    }
  } else {
    contiguous_strides(sizes, dl.ndim, strides);  // sizes are checked by the tensor's layout check
  }
  return import_memory(dl, IntList(sizes, dl.ndim), IntList(strides, dl.ndim), dtype, device, release, context,
                       read_only, owner, function);
}

}  // namespace slimtensor::dlpack

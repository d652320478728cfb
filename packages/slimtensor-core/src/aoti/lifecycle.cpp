// src/aoti/lifecycle.cpp: shims that make and release handles: empty_strided, from_blob, views, new handles, delete.
//
// Note [AOTI view offsets]
// Three shims make views with different offset conventions, all checked against the storage's bytes:
//   _reinterpret_tensor(self, ..., offset): offset is an increment on self's offset (inductor's meaning);
//   as_strided(self, sizes, strides): self's ndim and offset are kept (torch 2.13's signature has none);
//   _alloc_from_pool(self, offset_bytes, dtype, ...): a byte offset into self's storage, reinterpreted as
//   another dtype; self's offset must be 0 and offset_bytes a multiple of the new itemsize.
#include "aoti/handle.h"
#include "aoti/model_owner.h"
#include "slimtensor/base/checked_math.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

AOTITorchError empty_strided_impl(const char* fn, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
                                  int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret) {
  return guarded(fn, [&] {
    out_arg(ret, fn, "ret_new_tensor");
    const LayoutArgs layout(ndim, sizes_ptr, strides_ptr, fn);
    ScalarType st = dtype_arg(dtype, fn);
    Device device = device_arg(device_type, device_index, fn);
    *ret = emplace_handle(fn, [&] { return empty_strided(layout.sizes, layout.strides, st, device, fn); });
  });
}

AOTITorchError from_blob_impl(const char* fn, void* data, int64_t ndim, const int64_t* sizes_ptr,
                              const int64_t* strides_ptr, int64_t storage_offset, int32_t dtype, int32_t device_type,
                              int32_t device_index, AtenTensorHandle* ret) {
  return guarded(fn, [&] {
    out_arg(ret, fn, "ret");
    const LayoutArgs layout(ndim, sizes_ptr, strides_ptr, fn);
    ScalarType st = dtype_arg(dtype, fn);
    Device device = device_arg(device_type, device_index, fn);
    if (!device.is_cpu()) usable_device(device, fn);
    *ret = emplace_handle(fn, [&] {
      Tensor t = from_blob(data, layout.sizes, layout.strides, storage_offset, st, device, nullptr, nullptr, false,
                           "from_blob", fn);
      if (ModelOwner* owner = current_owner()) owner_record(owner, t.storage_impl());
      return t;
    });
  });
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
                                        int32_t dtype, int32_t device_type, int32_t device_index,
                                        AtenTensorHandle* ret_new_tensor) {
  return empty_strided_impl("aoti_torch_empty_strided", ndim, sizes_ptr, strides_ptr, dtype, device_type, device_index,
                            ret_new_tensor);
}

AOTITorchError aoti_torch_empty_strided_pinned(int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
                                               int32_t dtype, int32_t device_type, int32_t device_index,
                                               AtenTensorHandle* ret_new_tensor) {
  return empty_strided_impl("aoti_torch_empty_strided_pinned", ndim, sizes_ptr, strides_ptr, dtype, device_type,
                            device_index, ret_new_tensor);
}

AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim, const int64_t* sizes_ptr,
                                                  const int64_t* strides_ptr, int64_t storage_offset, int32_t dtype,
                                                  int32_t device_type, int32_t device_index, AtenTensorHandle* ret) {
  return from_blob_impl("aoti_torch_create_tensor_from_blob", data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype,
                        device_type, device_index, ret);
}

AOTITorchError aoti_torch_create_tensor_from_blob_v2(void* data, int64_t ndim, const int64_t* sizes_ptr,
                                                     const int64_t* strides_ptr, int64_t storage_offset, int32_t dtype,
                                                     int32_t device_type, int32_t device_index, AtenTensorHandle* ret,
                                                     int32_t layout, const uint8_t* opaque_metadata,
                                                     int64_t opaque_metadata_size) {
  const char* fn = "aoti_torch_create_tensor_from_blob_v2";
  if (layout != 0) {
    set_last_error(fn, layout == 3 ? "layout _mkldnn (3) is not supported by slimtensor; only strided (0) is"
                                   : "layout must be strided (0); slimtensor has no sparse or jagged layouts");
    return AOTI_TORCH_FAILURE;
  }
  return from_blob_impl(fn, data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype, device_type, device_index, ret);
}

AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim, const int64_t* sizes_ptr,
                                              const int64_t* strides_ptr, int64_t storage_offset,
                                              AtenTensorHandle* ret_new_tensor) {
  const char* fn = "aoti_torch__reinterpret_tensor";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(self, fn, "self");
    out_arg(ret_new_tensor, fn, "ret_new_tensor");
    const LayoutArgs layout(ndim, sizes_ptr, strides_ptr, fn);
    int64_t offset;
    if (add_overflows(t.storage_offset(), storage_offset, &offset) || offset < 0) {
      fail(ErrorKind::Value, fn, "(): self's offset ", t.storage_offset(), " + storage_offset ", storage_offset,
           " must be a non-negative int64");
    }
    *ret_new_tensor = emplace_handle(
        fn, [&] { return Tensor::make(t.storage(), layout.sizes, layout.strides, offset, t.dtype(), fn); });
  });
}

AOTITorchError aoti_torch_as_strided(AtenTensorHandle self, const int64_t* sizes_ptr, const int64_t* strides_ptr,
                                     AtenTensorHandle* ret) {
  const char* fn = "aoti_torch_as_strided";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(self, fn, "self");
    out_arg(ret, fn, "ret");
    IntList sizes = shape_arg(t.ndim(), sizes_ptr, fn);
    if (t.ndim() > 0 && !strides_ptr)
      fail(ErrorKind::Value, fn, "(): strides_ptr is NULL; pass ", t.ndim(), " strides");
    IntList strides(strides_ptr, t.ndim());
    *ret = emplace_handle(fn,
                          [&] { return Tensor::make(t.storage(), sizes, strides, t.storage_offset(), t.dtype(), fn); });
  });
}

AOTITorchError aoti_torch__alloc_from_pool(AtenTensorHandle self, int64_t offset_bytes, int32_t dtype, int64_t ndim,
                                           const int64_t* sizes_ptr, const int64_t* strides_ptr,
                                           AtenTensorHandle* ret_new_tensor) {
  const char* fn = "aoti_torch__alloc_from_pool";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(self, fn, "self");
    out_arg(ret_new_tensor, fn, "ret_new_tensor");
    if (t.storage_offset() != 0) {
      fail(ErrorKind::Value, fn, "(): self must have storage offset 0 (a pool buffer) but has ", t.storage_offset());
    }
    ScalarType st = dtype_arg(dtype, fn);
    const LayoutArgs layout(ndim, sizes_ptr, strides_ptr, fn);
    int64_t item = itemsize(st);
    if (offset_bytes < 0 || offset_bytes % item != 0) {
      fail(ErrorKind::Value, fn, "(): offset_bytes must be a non-negative multiple of ", item, " (the itemsize of ",
           name(st), ") but is ", offset_bytes);
    }
    *ret_new_tensor = emplace_handle(
        fn, [&] { return Tensor::make(t.storage(), layout.sizes, layout.strides, offset_bytes / item, st, fn); });
  });
}

AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle, AtenTensorHandle* new_handle) {
  const char* fn = "aoti_torch_new_tensor_handle";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(orig_handle, fn, "orig_handle", false);
    out_arg(new_handle, fn, "new_handle");
    *new_handle = emplace_handle(fn, [&] { return Tensor(t); });
  });
}

AOTITorchError aoti_torch_new_uninitialized_tensor(AtenTensorHandle* ret) {
  const char* fn = "aoti_torch_new_uninitialized_tensor";
  return guarded(fn, [&] {
    out_arg(ret, fn, "ret");
    *ret = emplace_handle(fn, [] { return Tensor(); });
  });
}

AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor) {
  const char* fn = "aoti_torch_delete_tensor_object";
  return guarded(fn, [&] {
    check_handle(tensor, fn, "tensor");
    delete_handle(tensor);
  });
}

}  // extern "C"

// src/aoti/getters.cpp: the tensor metadata getters (handle-checked, a few ns each; see Note [Handle checks]).
#include <cstdio>

#include <string>

#include "aoti/handle.h"
#include "slimtensor/c/device_plugin.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

// Note [Getter fast path]
// A getter is the handle check (one table load and one compare, Note [Handle checks]), a NULL test of the
// out-pointer and one load; the message is built out of line only on failure.
[[gnu::cold, gnu::noinline]] AOTITorchError null_arg(const char* fn, const char* arg) {
  char msg[160];
  std::snprintf(msg, sizeof(msg), "%s is NULL; pass a live handle and the address of a result variable", arg);
  set_last_error(fn, msg);
  return AOTI_TORCH_FAILURE;
}

[[gnu::cold, gnu::noinline]] AOTITorchError dead_arg(const char* fn, AtenTensorHandle h) {
  if (h == nullptr) return null_arg(fn, "tensor");
  char msg[200];
  std::snprintf(msg, sizeof(msg),
                "tensor = %p is not a live slimtensor handle (already deleted, or made by another library); "
                "pass a handle returned by an aoti_torch_* function and not yet deleted",
                static_cast<const void*>(h));
  set_last_error(fn, msg);
  return AOTI_TORCH_FAILURE;
}

[[gnu::cold, gnu::noinline]] AOTITorchError undefined_arg(const char* fn) {
  set_last_error(fn, "tensor is undefined (made by aoti_torch_new_uninitialized_tensor); assign a tensor first");
  return AOTI_TORCH_FAILURE;
}

// Note [Device memory handles] (c/device_plugin.h): an opaque handle is never handed out as an address.
[[gnu::cold, gnu::noinline]] AOTITorchError not_addressable(const Tensor& t) {
  const std::string msg = "the tensor is on " + device_string(t.device()) +
                          ", whose memory is an opaque handle, "
                          "not an address; read it with slimtensor_aoti_get_memory_ref (handle, byte offset)";
  set_last_error("aoti_torch_get_data_ptr", msg.c_str());
  return AOTI_TORCH_FAILURE;
}

}  // namespace

// Declares `self`, the handle object of the live handle h.
#define ST_GETTER_ARGS(fn, h, out)                                  \
  AtenTensorOpaque* const self = live_opaque(h);                    \
  if (__builtin_expect(self == nullptr, 0)) return dead_arg(fn, h); \
  if (__builtin_expect(out == nullptr, 0)) return null_arg(fn, #out)

#define ST_NEEDS_DEFINED(fn, h) \
  if (__builtin_expect(!self->tensor.defined(), 0)) return undefined_arg(fn)

extern "C" {

AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret_data_ptr) {
  ST_GETTER_ARGS("aoti_torch_get_data_ptr", tensor, ret_data_ptr);
  ST_NEEDS_DEFINED("aoti_torch_get_data_ptr", tensor);
  if (__builtin_expect(!self->tensor.is_addressable(), 0)) return not_addressable(self->tensor);
  *ret_data_ptr = self->tensor.data_ptr();
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError slimtensor_aoti_get_memory_ref(AtenTensorHandle tensor, st_memory_ref* ret_memory_ref) {
  ST_GETTER_ARGS("slimtensor_aoti_get_memory_ref", tensor, ret_memory_ref);
  ST_NEEDS_DEFINED("slimtensor_aoti_get_memory_ref", tensor);
  *ret_memory_ref = self->tensor.memory_ref();
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret_size) {
  ST_GETTER_ARGS("aoti_torch_get_storage_size", tensor, ret_size);
  ST_NEEDS_DEFINED("aoti_torch_get_storage_size", tensor);
  *ret_size = self->tensor.storage_impl()->nbytes();
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_storage_numel(AtenTensorHandle tensor, int64_t* ret_numel) {
  ST_GETTER_ARGS("aoti_torch_get_storage_numel", tensor, ret_numel);
  ST_NEEDS_DEFINED("aoti_torch_get_storage_numel", tensor);
  *ret_numel = self->tensor.storage_impl()->nbytes() / self->tensor.itemsize();
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret_dim) {
  ST_GETTER_ARGS("aoti_torch_get_dim", tensor, ret_dim);
  *ret_dim = self->tensor.ndim();
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret_numel) {
  ST_GETTER_ARGS("aoti_torch_get_numel", tensor, ret_numel);
  *ret_numel = self->tensor.numel();
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret_sizes) {
  ST_GETTER_ARGS("aoti_torch_get_sizes", tensor, ret_sizes);
  *ret_sizes = const_cast<int64_t*>(self->tensor.sizes());
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret_strides) {
  ST_GETTER_ARGS("aoti_torch_get_strides", tensor, ret_strides);
  *ret_strides = const_cast<int64_t*>(self->tensor.strides());
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret_size) {
  const char* fn = "aoti_torch_get_size";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(tensor, fn, "tensor", false);
    *out_arg(ret_size, fn, "ret_size") = t.sizes()[wrap_dim(d, t.ndim(), fn)];
  });
}

AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret_stride) {
  const char* fn = "aoti_torch_get_stride";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(tensor, fn, "tensor", false);
    *out_arg(ret_stride, fn, "ret_stride") = t.strides()[wrap_dim(d, t.ndim(), fn)];
  });
}

AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret_dtype) {
  ST_GETTER_ARGS("aoti_torch_get_dtype", tensor, ret_dtype);
  *ret_dtype = static_cast<int32_t>(self->tensor.dtype());
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret_device_type) {
  ST_GETTER_ARGS("aoti_torch_get_device_type", tensor, ret_device_type);
  ST_NEEDS_DEFINED("aoti_torch_get_device_type", tensor);
  *ret_device_type = self->tensor.storage_impl()->device().type;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret_device_index) {
  ST_GETTER_ARGS("aoti_torch_get_device_index", tensor, ret_device_index);
  ST_NEEDS_DEFINED("aoti_torch_get_device_index", tensor);
  *ret_device_index = self->tensor.storage_impl()->device().index;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret_layout) {
  ST_GETTER_ARGS("aoti_torch_get_layout", tensor, ret_layout);
  *ret_layout = 0;  // strided: the only layout slimtensor has
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret_storage_offset) {
  ST_GETTER_ARGS("aoti_torch_get_storage_offset", tensor, ret_storage_offset);
  *ret_storage_offset = self->tensor.storage_offset();
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret_is_contiguous) {
  ST_GETTER_ARGS("aoti_torch_is_contiguous", tensor, ret_is_contiguous);
  *ret_is_contiguous = self->tensor.is_contiguous();
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret_is_defined) {
  ST_GETTER_ARGS("aoti_torch_is_defined", tensor, ret_is_defined);
  *ret_is_defined = self->tensor.defined();
  return AOTI_TORCH_SUCCESS;
}

}  // extern "C"

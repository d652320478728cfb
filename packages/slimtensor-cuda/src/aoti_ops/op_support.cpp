// op_support.cpp: Note [Op fallback errors] and the tensor plumbing of op_support.h.
#include "aoti_ops/op_support.h"

#include <cstdio>

#include "device/streams.h"

namespace slimtensor_cuda::aoti_ops {

const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case kFloat16: return "float16";
    case kFloat32: return "float32";
    case kFloat64: return "float64";
    case kBFloat16: return "bfloat16";
    case kInt64: return "int64";
    default: return "a dtype other than float32/bfloat16/float16";
  }
}

int64_t dtype_size(int32_t dtype) { return static_cast<int64_t>(aoti_torch_dtype_element_size(dtype)); }

bool is_matmul_dtype(int32_t dtype) { return dtype == kFloat32 || dtype == kBFloat16 || dtype == kFloat16; }

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t i = 0; i < ndim; ++i) n *= sizes[i];
  return n;
}

bool TensorInfo::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t i = ndim - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

std::string shape_text(const TensorInfo& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.ndim; ++i) s += (i ? ", " : "") + std::to_string(t.sizes[i]);
  return s + "]";
}

int read_tensor(const char* op, const char* what, AtenTensorHandle handle, TensorInfo* out) {
  if (handle == nullptr) return fail("%s(): %s is a null AtenTensorHandle; pass a tensor", op, what);
  TensorInfo t;
  t.handle = handle;
  int32_t device_type = -1;
  int64_t* sizes = nullptr;
  int64_t* strides = nullptr;
  if (aoti_torch_get_device_type(handle, &device_type) || aoti_torch_get_dim(handle, &t.ndim) ||
      aoti_torch_get_dtype(handle, &t.dtype) || aoti_torch_get_sizes(handle, &sizes) ||
      aoti_torch_get_strides(handle, &strides))
    return fail("%s(): %s is not a valid tensor handle: %s", op, what, slimtensor_last_error());
  if (device_type != aoti_torch_device_type_cuda())
    return fail("%s(): %s must be a CUDA tensor, got one on device type %d; move it to the GPU first", op, what,
                device_type);
  if (t.ndim > kMaxOpDims)
    return fail("%s(): %s has %lld dims; at most %d are supported", op, what, static_cast<long long>(t.ndim),
                kMaxOpDims);
  for (int64_t i = 0; i < t.ndim; ++i) {
    t.sizes[i] = sizes[i];
    t.strides[i] = strides[i];
  }
  if (aoti_torch_get_device_index(handle, &t.device) || aoti_torch_get_data_ptr(handle, &t.data))
    return fail("%s(): %s: %s", op, what, slimtensor_last_error());
  *out = t;
  return 0;
}

int new_tensor(const char* op, int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
               int32_t device, AtenTensorHandle* out) {
  int64_t contiguous[kMaxOpDims];
  if (strides == nullptr) {
    int64_t s = 1;
    for (int64_t i = ndim - 1; i >= 0; --i) {
      contiguous[i] = s;
      s *= sizes[i] > 0 ? sizes[i] : 1;
    }
    strides = contiguous;
  }
  if (aoti_torch_empty_strided(ndim, sizes, strides, dtype, aoti_torch_device_type_cuda(), device, out))
    return fail("%s(): allocating its %s output on cuda:%d failed: %s", op, dtype_name(dtype), device,
                slimtensor_last_error());
  return 0;
}

int new_cpu_tensor(const char* op, int64_t ndim, const int64_t* sizes, int32_t dtype, AtenTensorHandle* out) {
  int64_t sz[kMaxOpDims] = {}, strides[kMaxOpDims] = {};  // never null, also for 0 dims
  int64_t s = 1;
  for (int64_t i = ndim - 1; i >= 0; --i) {
    sz[i] = sizes[i];
    strides[i] = s;
    s *= sizes[i];
  }
  if (aoti_torch_empty_strided(ndim, sz, strides, dtype, aoti_torch_device_type_cpu(), 0, out) ||
      aoti_torch_zero_(*out)) {
    release(*out);
    *out = nullptr;
    return fail("%s(): allocating a CPU placeholder failed: %s", op, slimtensor_last_error());
  }
  return 0;
}

void release(AtenTensorHandle handle) {
  if (handle != nullptr) aoti_torch_delete_tensor_object(handle);
}

int copy_into(const char* op, AtenTensorHandle dst, AtenTensorHandle src) {
  if (aoti_torch_copy_(dst, src, /*non_blocking=*/1))
    return fail("%s(): copying an operand on the GPU failed: %s", op, slimtensor_last_error());
  return 0;
}

int contiguous_copy(const char* op, const TensorInfo& src, TensorInfo* copy, AtenTensorHandle* owned) {
  AtenTensorHandle h = nullptr;
  if (new_tensor(op, src.ndim, src.sizes, nullptr, src.dtype, src.device, &h)) return 1;
  if (copy_into(op, h, src.handle) || read_tensor(op, "a contiguous copy", h, copy)) {
    release(h);
    return 1;
  }
  *owned = h;
  return 0;
}

cudaStream_t op_stream(int32_t device) { return current_stream(device); }

int check_device_guard(const char* op, const DeviceGuard& guard) {
  if (guard.status() != cudaSuccess) return fail_cuda(op, "cudaSetDevice", guard.status());
  return 0;
}

}  // namespace slimtensor_cuda::aoti_ops

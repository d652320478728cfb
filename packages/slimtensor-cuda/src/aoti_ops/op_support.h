// op_support.h: what every CUDA op fallback needs: reading an AtenTensorHandle through the core's C ABI,
// errors in the AOTI style, device outputs, contiguous copies and the current stream.
//
// Note [Op fallback errors]
// An op fallback returns AOTI_TORCH_FAILURE after writing one message into the plugin's last error
// (Note [Plugin errors]): "aoti_torch_cuda_mm_out(): <what was expected>, got <what was found>; <fix>".
// Nothing throws across the C ABI: each op body runs inside guarded(), which turns an escaped C++
// exception (std::bad_alloc from a descriptor cache, say) into that error too.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "device/error.h"
#include "device/runtime.h"
#include "slimtensor/c/shim.h"

namespace slimtensor_cuda::aoti_ops {

inline constexpr int kMaxOpDims = 8;

// c10 dtype codes of the floating types these ops compute in.
inline constexpr int32_t kFloat16 = 5;
inline constexpr int32_t kFloat32 = 6;
inline constexpr int32_t kFloat64 = 7;
inline constexpr int32_t kBFloat16 = 15;
inline constexpr int32_t kInt64 = 4;

const char* dtype_name(int32_t dtype);
int64_t dtype_size(int32_t dtype);
// float32, bfloat16 or float16: the dtypes cuBLASLt, cuDNN and the attention kernel serve here.
bool is_matmul_dtype(int32_t dtype);

// One operand, read once: the handle's device pointer (element 0), sizes, strides (elements), dtype and
// CUDA device index.
struct TensorInfo {
  AtenTensorHandle handle = nullptr;
  void* data = nullptr;
  int32_t dtype = -1;
  int32_t device = -1;
  int64_t ndim = 0;
  int64_t sizes[kMaxOpDims] = {};
  int64_t strides[kMaxOpDims] = {};
  int64_t numel() const;
  bool is_contiguous() const;  // row-major dense (size-1 dims' strides ignored)
};

// Reads `handle` (the op's argument `what`); fails unless it is a defined CUDA tensor of at most
// kMaxOpDims dims. `op` names the fallback in the message.
int read_tensor(const char* op, const char* what, AtenTensorHandle handle, TensorInfo* out);

// A new CUDA tensor on `device`, allocated through the core (the plugin's caching allocator, on the current
// stream); strides empty = row-major contiguous. The caller owns *out (release it with release()).
int new_tensor(const char* op, int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
               int32_t device, AtenTensorHandle* out);
// A 0-dim or small CPU tensor (the philox seed/offset placeholders attention returns), zero-filled.
int new_cpu_tensor(const char* op, int64_t ndim, const int64_t* sizes, int32_t dtype, AtenTensorHandle* out);
void release(AtenTensorHandle handle);

// A row-major contiguous copy of `src` (on the current stream, through the plugin's copy kernels) in *copy;
// *owned receives the new handle (the caller releases it). Used for layouts a library cannot take.
int contiguous_copy(const char* op, const TensorInfo& src, TensorInfo* copy, AtenTensorHandle* owned);
// Copies src into dst (same sizes, any strides and dtypes) on the current stream.
int copy_into(const char* op, AtenTensorHandle dst, AtenTensorHandle src);

// Frees an owned temporary handle at scope exit.
class OwnedHandle {
 public:
  OwnedHandle() = default;
  ~OwnedHandle() { release(h_); }
  OwnedHandle(const OwnedHandle&) = delete;
  OwnedHandle& operator=(const OwnedHandle&) = delete;
  AtenTensorHandle* out() { return &h_; }
  AtenTensorHandle get() const { return h_; }
  AtenTensorHandle take() {
    AtenTensorHandle h = h_;
    h_ = nullptr;
    return h;
  }

 private:
  AtenTensorHandle h_ = nullptr;
};

// The calling thread's current stream of `device` (Note [Current streams]).
cudaStream_t op_stream(int32_t device);

// Makes `device` current (DeviceGuard), failing with the op's name when it cannot.
int check_device_guard(const char* op, const DeviceGuard& guard);

std::string shape_text(const TensorInfo& t);

// Runs `body` (returns 0 or 1) with Note [Op fallback errors]'s exception guard.
template <typename F>
AOTITorchError guarded(const char* op, F&& body) noexcept {
  try {
    return body() == 0 ? AOTI_TORCH_SUCCESS : AOTI_TORCH_FAILURE;
  } catch (const std::exception& e) {
    fail("%s(): internal error: %s", op, e.what());
  } catch (...) {
    fail("%s(): internal error (unknown exception)", op);
  }
  return AOTI_TORCH_FAILURE;
}

}  // namespace slimtensor_cuda::aoti_ops

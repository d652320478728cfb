// cuda_guards.cpp: the CUDA device and stream guards of the shim ABI (Note [CUDA guards] in cuda_shim.h).
#include <cuda_runtime_api.h>

#include <new>

#include "aoti/cuda_shim.h"
#include "device/error.h"
#include "device/runtime.h"
#include "device/streams.h"

using namespace slimtensor_cuda;

struct CUDAGuardOpaque {
  int original = -1;  // the thread's device when the guard was made (restored at delete)
};

struct CUDAStreamGuardOpaque {
  int original_device = -1;
  int device = -1;
  cudaStream_t original_stream = nullptr;  // the plugin's current stream of `device` before the guard
};

namespace {

int set_device(const char* fn, int32_t index) {
  if (check_device(fn, index)) return 1;
  ST_CUDA_TRY(fn, "cudaSetDevice", cudaSetDevice(index));
  return 0;
}

int get_device(const char* fn, int* index) {
  ST_CUDA_TRY(fn, "cudaGetDevice", cudaGetDevice(index));
  return 0;
}

}  // namespace

AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret_guard) {
  const char* fn = "aoti_torch_create_cuda_guard";
  if (ret_guard == nullptr) return fail("slimtensor_cuda %s(): ret_guard is NULL", fn);
  int original = 0;
  if (get_device(fn, &original) || set_device(fn, device_index)) return 1;
  auto* g = new (std::nothrow) CUDAGuardOpaque{original};
  if (g == nullptr) {
    cudaSetDevice(original);
    return fail("slimtensor_cuda %s(): out of host memory", fn);
  }
  *ret_guard = g;
  return 0;
}

AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard, int32_t device_index) {
  if (guard == nullptr) return fail("slimtensor_cuda aoti_torch_cuda_guard_set_index(): guard is NULL");
  return set_device("aoti_torch_cuda_guard_set_index", device_index);
}

AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard) {
  if (guard == nullptr) return fail("slimtensor_cuda aoti_torch_delete_cuda_guard(): guard is NULL");
  const int original = guard->original;
  delete guard;
  ST_CUDA_TRY("aoti_torch_delete_cuda_guard", "cudaSetDevice", cudaSetDevice(original));
  return 0;
}

AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index,
                                                   CUDAStreamGuardHandle* ret_guard) {
  const char* fn = "aoti_torch_create_cuda_stream_guard";
  if (ret_guard == nullptr) return fail("slimtensor_cuda %s(): ret_guard is NULL", fn);
  int original = 0;
  if (get_device(fn, &original) || set_device(fn, device_index)) return 1;
  auto* g = new (std::nothrow) CUDAStreamGuardOpaque{original, device_index, current_stream(device_index)};
  if (g == nullptr) {
    cudaSetDevice(original);
    return fail("slimtensor_cuda %s(): out of host memory", fn);
  }
  set_current_stream(device_index, static_cast<cudaStream_t>(stream));
  *ret_guard = g;
  return 0;
}

AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard) {
  if (guard == nullptr) return fail("slimtensor_cuda aoti_torch_delete_cuda_stream_guard(): guard is NULL");
  set_current_stream(guard->device, guard->original_stream);
  const int original = guard->original_device;
  delete guard;
  ST_CUDA_TRY("aoti_torch_delete_cuda_stream_guard", "cudaSetDevice", cudaSetDevice(original));
  return 0;
}

AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream) {
  const char* fn = "aoti_torch_get_current_cuda_stream";
  if (ret_stream == nullptr) return fail("slimtensor_cuda %s(): ret_stream is NULL", fn);
  if (check_device(fn, device_index)) return 1;
  *ret_stream = current_stream(device_index);
  return 0;
}

const char* slimtensor_cuda_aoti_last_error(void) { return last_error(); }

void slimtensor_cuda_aoti_clear_last_error(void) { clear_last_error(); }

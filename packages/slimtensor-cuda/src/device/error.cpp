// error.cpp: the thread-local last error of Note [Plugin errors].
#include "device/error.h"

#include <cstdarg>
#include <cstdio>

namespace slimtensor_cuda {
namespace {
thread_local char g_last_error[1024] = "";
}

int fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_last_error, sizeof g_last_error, format, args);
  va_end(args);
  return 1;
}

int fail_str(const std::string& message) { return fail("%s", message.c_str()); }

int fail_cuda(const char* function, const char* what, cudaError_t err) {
  const char* fix = "";
  if (err == cudaErrorMemoryAllocation) fix = "; free tensors you no longer need or call slimtensor_cuda.empty_cache()";
  if (err == cudaErrorInvalidDevice)
    fix = "; check the device index against slimtensor_cuda.device_count() and CUDA_VISIBLE_DEVICES";
  return fail("slimtensor_cuda %s(): %s failed: %s (%s)%s", function, what, cudaGetErrorName(err),
              cudaGetErrorString(err), fix);
}

const char* last_error() { return g_last_error; }

void clear_last_error() { g_last_error[0] = '\0'; }

}  // namespace slimtensor_cuda

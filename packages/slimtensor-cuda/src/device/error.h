// error.h: the plugin's thread-local last error (Note [Plugin errors]) and helpers that fill it.
//
// Note [Plugin errors]
// Every failing table function returns non-zero after writing one message here, naming the function,
// what it expected, what it found and the fix ("slimtensor_cuda copy_strided_v2(): ..."). Nothing throws
// across the C ABI and nothing aborts: CUDA errors become messages with cudaGetErrorName/String.
// Like errno, the message is only meaningful right after a failure: successful calls leave it alone (a
// model's cleanup shims run after the failing one and must not wipe its message), so it can be old. A
// caller that reads it after a failure it did not see happen here (the AOTI runner, after a model run
// failed somewhere in the generated code) clears it before that call (slimtensor_cuda_aoti_clear_last_error),
// so that what it reads afterwards was said during the call and a stale message never joins a new one.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace slimtensor_cuda {

// Formats into the calling thread's last error; returns 1 (so `return fail(...)` reads naturally).
int fail(const char* format, ...) __attribute__((format(printf, 1, 2)));
int fail_str(const std::string& message);
// "slimtensor_cuda <function>(): <what> failed: cudaErrorX (text)".
int fail_cuda(const char* function, const char* what, cudaError_t err);
const char* last_error();
// Empties the calling thread's last error (see the Note).
void clear_last_error();

#define ST_CUDA_TRY(function, what, call)                           \
  do {                                                              \
    const cudaError_t st_err_ = (call);                             \
    if (st_err_ != cudaSuccess) {                                   \
      cudaGetLastError(); /* clear the sticky-free error state */   \
      return ::slimtensor_cuda::fail_cuda(function, what, st_err_); \
    }                                                               \
  } while (0)

}  // namespace slimtensor_cuda

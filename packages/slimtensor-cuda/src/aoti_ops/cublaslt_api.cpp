// cublaslt_api.cpp: cuBLASLt opened at run time (Note [NVIDIA libraries at run time]).
#include "aoti_ops/cublaslt_api.h"

#include <mutex>

#include "aoti_ops/nvidia_library.h"
#include "device/error.h"
#include "device/runtime.h"

namespace slimtensor_cuda::aoti_ops::lt {
namespace {

const NvidiaLibrary kCublasLt = {"cuBLASLt", "libcublasLt.so.13", "nvidia-cublas", "cu13/lib:cublas/lib", nullptr};

const char* const kNames[] = {"cublasLtCreate",
                              "cublasLtGetStatusString",
                              "cublasLtMatmulDescCreate",
                              "cublasLtMatmulDescDestroy",
                              "cublasLtMatmulDescSetAttribute",
                              "cublasLtMatrixLayoutCreate",
                              "cublasLtMatrixLayoutDestroy",
                              "cublasLtMatrixLayoutSetAttribute",
                              "cublasLtMatmulPreferenceCreate",
                              "cublasLtMatmulPreferenceDestroy",
                              "cublasLtMatmulPreferenceSetAttribute",
                              "cublasLtMatmulAlgoGetHeuristic",
                              "cublasLtMatmul"};

NvidiaApi<Api> g_api(kCublasLt, kNames);  // Note [One function table per library]
std::mutex g_handles_mutex;
Handle g_handles[kMaxDevices] = {};

}  // namespace

const Api* api(const char* op) { return g_api.get(op); }

int handle(const char* op, int device, Handle* out) {
  const Api* a = api(op);
  if (a == nullptr) return 1;
  if (device < 0 || device >= kMaxDevices) return fail("%s(): device index %d is out of range", op, device);
  std::lock_guard<std::mutex> lock(g_handles_mutex);
  if (g_handles[device] == nullptr) {
    const Status st = a->Create(&g_handles[device]);
    if (st != 0) return fail("%s(): cublasLtCreate failed: %s", op, a->GetStatusString(st));
  }
  *out = g_handles[device];
  return 0;
}

}  // namespace slimtensor_cuda::aoti_ops::lt

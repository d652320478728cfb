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
                              "cublasLtMatmul",
                              nullptr};
static_assert(sizeof(Api) == (sizeof(kNames) / sizeof(kNames[0]) - 1) * sizeof(void*),
              "one name per Api member, in order");

std::mutex g_mutex;
Api g_api;
bool g_loaded = false;
Handle g_handles[kMaxDevices] = {};

}  // namespace

const Api* api(const char* op) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_loaded) return &g_api;
  void* lib = open_nvidia_library(op, kCublasLt);
  if (lib == nullptr) return nullptr;
  if (!load_symbols(op, kCublasLt, lib, kNames, reinterpret_cast<void**>(&g_api))) return nullptr;
  g_loaded = true;
  return &g_api;
}

int handle(const char* op, int device, Handle* out) {
  const Api* a = api(op);
  if (a == nullptr) return 1;
  if (device < 0 || device >= kMaxDevices) return fail("%s(): device index %d is out of range", op, device);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_handles[device] == nullptr) {
    const Status st = a->Create(&g_handles[device]);
    if (st != 0) return fail("%s(): cublasLtCreate failed: %s", op, a->GetStatusString(st));
  }
  *out = g_handles[device];
  return 0;
}

}  // namespace slimtensor_cuda::aoti_ops::lt

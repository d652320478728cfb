// cublaslt_api.cpp: cuBLASLt opened at run time (Note [NVIDIA libraries at run time]).
#include "aoti_ops/cublaslt_api.h"

#include "aoti_ops/nvidia_library.h"
#include "device/error.h"

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
DeviceHandles<Handle> g_handles;

}  // namespace

const Api* api(const char* op) { return g_api.get(op); }

int handle(const char* op, int device, Handle* out) {
  const Api* a = api(op);
  if (a == nullptr) return 1;
  return g_handles.get(
      op, device,
      [&](Handle* h) {
        const Status st = a->Create(h);
        return st == 0 ? 0 : fail("%s(): cublasLtCreate failed: %s", op, a->GetStatusString(st));
      },
      out);
}

}  // namespace slimtensor_cuda::aoti_ops::lt

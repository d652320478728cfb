// op_libraries.cpp: slimtensor_cuda_aoti_op_library_status, which reports whether an op fallback's NVIDIA
// library opens here (Note [NVIDIA libraries at run time]) without running an op or touching a GPU.
#include <cstring>

#include "aoti_ops/cublaslt_api.h"
#include "aoti_ops/cudnn_api.h"
#include "device/error.h"
#include "slimtensor/c/shim_cuda_ops.h"

extern "C" int32_t slimtensor_cuda_aoti_op_library_status(const char* library) {
  namespace ops = slimtensor_cuda::aoti_ops;
  if (library != nullptr && std::strcmp(library, "cublasLt") == 0)
    return ops::lt::api("cuBLASLt matmuls (aoti_torch_cuda_mm_out, addmm, bmm, baddbmm)") ? 0 : 1;
  if (library != nullptr && std::strcmp(library, "cudnn") == 0)
    return ops::dnn::api("aoti_torch_cuda_convolution") ? 0 : 1;
  return slimtensor_cuda::fail(
      "slimtensor_cuda_aoti_op_library_status(): unknown library %s; expected 'cublasLt' or "
      "'cudnn'",
      library ? library : "(null)");
}

// nccl_api.cpp: NCCL opened at run time (Note [NVIDIA libraries at run time]) and the dtype / reduce-op table.
#include "collectives/nccl_api.h"

#include <cstdlib>

#include "aoti_ops/nvidia_library.h"
#include "slimtensor/c/collectives.h"

namespace slimtensor_cuda::collectives::nccl {
namespace {

// pip's nvidia-nccl-cu13 puts libnccl.so.2 in site-packages/nvidia/nccl/lib.
const aoti_ops::NvidiaLibrary kNccl = {"NCCL", "libnccl.so.2", "nvidia-nccl-cu13", "nccl/lib", nullptr};

// One name per Api member, in order (Note [One function table per library]).
const char* const kNames[] = {"ncclGetVersion",        "ncclGetUniqueId",  "ncclCommInitRankConfig", "ncclAllReduce",
                              "ncclCommGetAsyncError", "ncclCommFinalize", "ncclCommDestroy",        "ncclCommAbort",
                              "ncclGetErrorString",    "ncclGetLastError"};
aoti_ops::NvidiaApi<Api> g_api(kNccl, kNames);

}  // namespace

const Api* api(const char* op) {
  // NVLink multicast (NVLS) can take a shared host's GPUs out of service: off unless the user chose, set
  // before NCCL is first opened (it reads the variable when a communicator is made).
  static const bool nvls_off = (setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0), true);
  (void)nvls_off;
  return g_api.get(op);
}

int datatype(int32_t dtype) {
  switch (dtype) {      // c10 ScalarType -> ncclDataType_t (slimtensor/tensor/scalar_type.h; nccl.h)
    case 1: return 0;   // Int8 -> ncclInt8
    case 0: return 1;   // UInt8 -> ncclUint8
    case 3: return 2;   // Int32 -> ncclInt32
    case 28: return 3;  // UInt32 -> ncclUint32
    case 4: return 4;   // Int64 -> ncclInt64
    case 29: return 5;  // UInt64 -> ncclUint64
    case 5: return 6;   // Float16 -> ncclFloat16
    case 6: return 7;   // Float32 -> ncclFloat32
    case 7: return 8;   // Float64 -> ncclFloat64
    case 15: return 9;  // BFloat16 -> ncclBfloat16
    default: return -1;
  }
}

int reduce_op(int32_t op) {
  switch (op) {                        // ST_REDUCE_* (slimtensor/c/collectives.h) -> ncclRedOp_t
    case ST_REDUCE_SUM: return 0;      // ncclSum
    case ST_REDUCE_AVG: return 4;      // ncclAvg
    case ST_REDUCE_PRODUCT: return 1;  // ncclProd
    case ST_REDUCE_MIN: return 3;      // ncclMin
    case ST_REDUCE_MAX: return 2;      // ncclMax
    default: return -1;
  }
}

const char* result_name(Result r) {
  switch (r) {
    case 0: return "ncclSuccess";
    case 1: return "ncclUnhandledCudaError";
    case 2: return "ncclSystemError";
    case 3: return "ncclInternalError";
    case 4: return "ncclInvalidArgument";
    case 5: return "ncclInvalidUsage";
    case 6: return "ncclRemoteError";
    case 7: return "ncclInProgress";
    default: return "ncclResult(unknown)";
  }
}

}  // namespace slimtensor_cuda::collectives::nccl

// nccl_api.h: the part of NCCL's C API the collectives call, declared here (Note [NVIDIA libraries at run
// time] in aoti_ops/nvidia_library.h), and the one table from slimtensor's dtypes and reduce ops to NCCL's.
//
// Values as in NCCL's nccl.h, checked against NVIDIA's API reference, "Types"
// (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/types.html: ncclResult_t 0..7,
// ncclDataType_t ncclInt8 = 0 ... ncclBfloat16 = 9, ncclRedOp_t ncclSum = 0, ncclProd = 1, ncclMax = 2,
// ncclMin = 3, ncclAvg = 4) and against nccl.h of NVIDIA/nccl (src/nccl.h.in).
//
// Note [NCCL config]
// ncclCommInitRankConfig takes a versioned ncclConfig_t: NCCL reads `size` bytes of it (at most its own
// sizeof), checks `magic`, and gives every field newer than `version` its default (NVIDIA/nccl
// src/init.cc, parseCommConfig). We declare the struct as NCCL 2.14 defined it (the first with a config)
// and say version 2.14.0, so any newer libnccl.so.2 reads exactly these fields; unset ones hold
// NCCL_CONFIG_UNDEF_INT (INT_MIN) / NULL, as NCCL_CONFIG_INITIALIZER leaves them.
#pragma once

#include <cuda_runtime_api.h>

#include <climits>
#include <cstddef>
#include <cstdint>

namespace slimtensor_cuda::collectives::nccl {

using Result = int;  // ncclResult_t
inline constexpr Result kSuccess = 0;
inline constexpr Result kInProgress = 7;
using Comm = struct ncclComm*;

struct UniqueId {  // ncclUniqueId: NCCL_UNIQUE_ID_BYTES = 128, passed by value
  char internal[128];
};

struct Config {  // ncclConfig_t as of NCCL 2.14 (Note [NCCL config])
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cga_cluster_size;
  int min_ctas;
  int max_ctas;
  const char* net_name;
};
inline constexpr unsigned int kConfigMagic = 0xcafebeef;
inline constexpr unsigned int kConfigVersion = 2 * 10000 + 14 * 100 + 0;  // NCCL_VERSION(2, 14, 0)
inline constexpr int kConfigUndefInt = INT_MIN;

struct Api {
  Result (*GetVersion)(int* version);
  Result (*GetUniqueId)(UniqueId* id);
  Result (*CommInitRankConfig)(Comm* comm, int nranks, UniqueId id, int rank, Config* config);
  Result (*AllReduce)(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op, Comm comm,
                      cudaStream_t stream);
  Result (*CommGetAsyncError)(Comm comm, Result* async_error);
  Result (*CommFinalize)(Comm comm);
  Result (*CommDestroy)(Comm comm);
  Result (*CommAbort)(Comm comm);
  const char* (*GetErrorString)(Result result);
  const char* (*GetLastError)(Comm comm);
};

// NCCL, opened and resolved once (NCCL_NVLS_ENABLE=0 put in the environment first when unset: NVLink
// multicast stays off); null with the plugin's last error naming `op` and nvidia-nccl-cu13.
const Api* api(const char* op);

// ncclDataType_t of c10 ScalarType `dtype`, or -1 when NCCL has none (complex, bool, quantized, float8).
int datatype(int32_t dtype);
// ncclRedOp_t of ST_REDUCE_* `op` (slimtensor/c/collectives.h), or -1.
int reduce_op(int32_t op);

// The enumerator's name of `r` ("ncclRemoteError"), for messages.
const char* result_name(Result r);

}  // namespace slimtensor_cuda::collectives::nccl

// cublaslt_api.h: the part of cuBLASLt's C API the matmul fallbacks call, declared here
// (Note [NVIDIA libraries at run time]); values as in NVIDIA's cublasLt.h / cublas_api.h / library_types.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace slimtensor_cuda::aoti_ops::lt {

using Status = int;  // cublasStatus_t; 0 = CUBLAS_STATUS_SUCCESS
using Handle = struct cublasLtContext*;
using MatmulDesc = void*;
using MatrixLayout = void*;
using Preference = void*;

struct Algo {  // cublasLtMatmulAlgo_t
  uint64_t data[8];
};
struct HeuristicResult {  // cublasLtMatmulHeuristicResult_t
  Algo algo;
  size_t workspace_size;
  Status state;
  float waves_count;
  int reserved[4];
};

// cudaDataType_t
inline constexpr int kR32F = 0;
inline constexpr int kR16F = 2;
inline constexpr int kR16BF = 14;
// cublasComputeType_t
inline constexpr int kCompute32F = 68;
// cublasOperation_t
inline constexpr int32_t kOpN = 0;
inline constexpr int32_t kOpT = 1;
// cublasLtMatmulDescAttributes_t
inline constexpr int kDescTransA = 3;
inline constexpr int kDescTransB = 4;
inline constexpr int kDescEpilogue = 7;
inline constexpr int kDescBiasPointer = 8;
inline constexpr int kDescBiasBatchStride = 10;
// cublasLtEpilogue_t
inline constexpr uint32_t kEpilogueDefault = 1;
inline constexpr uint32_t kEpilogueBias = 4;
// cublasLtMatrixLayoutAttribute_t
inline constexpr int kLayoutBatchCount = 5;
inline constexpr int kLayoutBatchStride = 6;
// cublasLtMatmulPreferenceAttributes_t
inline constexpr int kPrefMaxWorkspace = 1;
inline constexpr int kPrefMinAlignmentA = 5;  // then B, C, D: 6, 7, 8 (uint32_t bytes)

struct Api {
  Status (*Create)(Handle*);
  const char* (*GetStatusString)(Status);
  Status (*MatmulDescCreate)(MatmulDesc*, int compute_type, int scale_type);
  Status (*MatmulDescDestroy)(MatmulDesc);
  Status (*MatmulDescSetAttribute)(MatmulDesc, int attr, const void* buf, size_t size);
  Status (*MatrixLayoutCreate)(MatrixLayout*, int type, uint64_t rows, uint64_t cols, int64_t ld);
  Status (*MatrixLayoutDestroy)(MatrixLayout);
  Status (*MatrixLayoutSetAttribute)(MatrixLayout, int attr, const void* buf, size_t size);
  Status (*MatmulPreferenceCreate)(Preference*);
  Status (*MatmulPreferenceDestroy)(Preference);
  Status (*MatmulPreferenceSetAttribute)(Preference, int attr, const void* buf, size_t size);
  Status (*MatmulAlgoGetHeuristic)(Handle, MatmulDesc, MatrixLayout a, MatrixLayout b, MatrixLayout c, MatrixLayout d,
                                   Preference, int requested, HeuristicResult* results, int* returned);
  Status (*Matmul)(Handle, MatmulDesc, const void* alpha, const void* a, MatrixLayout a_desc, const void* b,
                   MatrixLayout b_desc, const void* beta, const void* c, MatrixLayout c_desc, void* d,
                   MatrixLayout d_desc, const Algo* algo, void* workspace, size_t workspace_size, cudaStream_t stream);
};

// cuBLASLt, opened and resolved once; null with the plugin's last error naming `op` and nvidia-cublas.
const Api* api(const char* op);
// The calling process's cuBLASLt handle for `device` (created once per device, kept for the process).
int handle(const char* op, int device, Handle* out);

}  // namespace slimtensor_cuda::aoti_ops::lt

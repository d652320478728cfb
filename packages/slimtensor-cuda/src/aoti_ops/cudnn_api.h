// cudnn_api.h: the part of cuDNN's C API that aoti_torch_cuda_convolution calls (the graph API, which torch's
// cuDNN convolutions use too), declared here (Note [NVIDIA libraries at run time]); values as in NVIDIA's
// cudnn_graph.h, whose enums are fixed across cuDNN 9.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace slimtensor_cuda::aoti_ops::dnn {

using Status = int;  // cudnnStatus_t; 0 = CUDNN_STATUS_SUCCESS
using Handle = struct cudnnContext*;
using Desc = void*;  // cudnnBackendDescriptor_t

// cudnnDataType_t
inline constexpr int kFloat = 0;
inline constexpr int kHalf = 2;
inline constexpr int kBFloat16 = 9;
// cudnnConvolutionMode_t (torch convolves by cross-correlation)
inline constexpr int kCrossCorrelation = 1;
// cudnnBackendHeurMode_t
inline constexpr int kHeurInstant = 0;

// cudnnBackendDescriptorType_t
enum DescType : int {
  kConvolutionDesc = 1,
  kEngineConfigDesc = 3,
  kEngineHeuristicsDesc = 4,
  kExecutionPlanDesc = 5,
  kConvForwardOpDesc = 10,
  kConvBackwardDataOpDesc = 12,
  kOperationGraphDesc = 15,
  kVariantPackDesc = 16,
  kTensorDesc = 17,
};

// cudnnBackendAttributeType_t
enum AttrType : int {
  kTypeHandle = 0,
  kTypeDataType = 1,
  kTypeInt64 = 3,
  kTypeFloat = 4,
  kTypeVoidPtr = 6,
  kTypeConvolutionMode = 7,
  kTypeHeurMode = 8,
  kTypeDescriptor = 15,
};

// cudnnBackendAttributeName_t
enum Attr : int {
  kConvCompType = 100,
  kConvMode = 101,
  kConvDilations = 102,
  kConvFilterStrides = 103,
  kConvPostPaddings = 104,
  kConvPrePaddings = 105,
  kConvSpatialDims = 106,
  kHeurMode = 200,
  kHeurOperationGraph = 201,
  kHeurResults = 202,
  kPlanHandle = 400,
  kPlanEngineConfig = 401,
  kPlanWorkspaceSize = 402,
  kConvFwdAlpha = 700,
  kConvFwdBeta = 701,
  kConvFwdConvDesc = 702,
  kConvFwdW = 703,
  kConvFwdX = 704,
  kConvFwdY = 705,
  kConvBwdDataAlpha = 706,
  kConvBwdDataBeta = 707,
  kConvBwdDataConvDesc = 708,
  kConvBwdDataW = 709,
  kConvBwdDataDx = 710,
  kConvBwdDataDy = 711,
  kGraphHandle = 800,
  kGraphOps = 801,
  kTensorByteAlignment = 900,
  kTensorDataType = 901,
  kTensorDimensions = 902,
  kTensorStrides = 903,
  kTensorUniqueId = 906,
  kPackUniqueIds = 1000,
  kPackDataPointers = 1001,
  kPackWorkspace = 1003,
};

struct Api {
  Status (*Create)(Handle*);
  Status (*SetStream)(Handle, cudaStream_t);
  const char* (*GetErrorString)(Status);
  void (*GetLastErrorString)(char* message, size_t max_size);
  Status (*BackendCreateDescriptor)(int type, Desc* out);
  Status (*BackendDestroyDescriptor)(Desc);
  Status (*BackendFinalize)(Desc);
  Status (*BackendSetAttribute)(Desc, int name, int type, int64_t count, const void* values);
  Status (*BackendGetAttribute)(Desc, int name, int type, int64_t requested, int64_t* count, void* values);
  Status (*BackendExecute)(Handle, Desc plan, Desc variant_pack);
};

// cuDNN, opened and resolved once; null with the plugin's last error naming `op` and nvidia-cudnn-cu13.
const Api* api(const char* op);
// The process's cuDNN handle for `device` (created once per device), bound to `stream`.
int handle(const char* op, int device, cudaStream_t stream, Handle* out);

}  // namespace slimtensor_cuda::aoti_ops::dnn

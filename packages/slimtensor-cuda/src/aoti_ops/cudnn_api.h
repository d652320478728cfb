// cudnn_api.h: the part of cuDNN's C API (the v7-style convolution calls, still in cuDNN 9) that
// aoti_torch_cuda_convolution calls, declared here (Note [NVIDIA libraries at run time]); values as in
// NVIDIA's cudnn_graph.h / cudnn_cnn.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace slimtensor_cuda::aoti_ops::dnn {

using Status = int;  // cudnnStatus_t; 0 = CUDNN_STATUS_SUCCESS
using Handle = struct cudnnContext*;
using TensorDesc = void*;
using FilterDesc = void*;
using ConvDesc = void*;

// cudnnDataType_t
inline constexpr int kFloat = 0;
inline constexpr int kHalf = 2;
inline constexpr int kBFloat16 = 9;
// cudnnTensorFormat_t
inline constexpr int kNCHW = 0;
inline constexpr int kNHWC = 1;
// cudnnConvolutionMode_t (torch convolves by cross-correlation)
inline constexpr int kCrossCorrelation = 1;
// cudnnMathType_t
inline constexpr int kDefaultMath = 0;
inline constexpr int kTensorOpMath = 1;

struct AlgoPerf {  // cudnnConvolutionFwdAlgoPerf_t and cudnnConvolutionBwdDataAlgoPerf_t have this layout
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct Api {
  Status (*Create)(Handle*);
  Status (*SetStream)(Handle, cudaStream_t);
  const char* (*GetErrorString)(Status);
  Status (*CreateTensorDescriptor)(TensorDesc*);
  Status (*SetTensorNdDescriptor)(TensorDesc, int data_type, int nb_dims, const int* dims, const int* strides);
  Status (*DestroyTensorDescriptor)(TensorDesc);
  Status (*CreateFilterDescriptor)(FilterDesc*);
  Status (*SetFilterNdDescriptor)(FilterDesc, int data_type, int format, int nb_dims, const int* dims);
  Status (*DestroyFilterDescriptor)(FilterDesc);
  Status (*CreateConvolutionDescriptor)(ConvDesc*);
  Status (*SetConvolutionNdDescriptor)(ConvDesc, int array_length, const int* pad, const int* stride,
                                       const int* dilation, int mode, int compute_type);
  Status (*SetConvolutionGroupCount)(ConvDesc, int groups);
  Status (*SetConvolutionMathType)(ConvDesc, int math_type);
  Status (*DestroyConvolutionDescriptor)(ConvDesc);
  Status (*GetConvolutionForwardAlgorithm_v7)(Handle, TensorDesc x, FilterDesc w, ConvDesc, TensorDesc y, int requested,
                                              int* returned, AlgoPerf* results);
  Status (*GetConvolutionForwardWorkspaceSize)(Handle, TensorDesc x, FilterDesc w, ConvDesc, TensorDesc y, int algo,
                                               size_t* size);
  Status (*ConvolutionForward)(Handle, const void* alpha, TensorDesc x_desc, const void* x, FilterDesc w_desc,
                               const void* w, ConvDesc, int algo, void* workspace, size_t workspace_size,
                               const void* beta, TensorDesc y_desc, void* y);
  Status (*GetConvolutionBackwardDataAlgorithm_v7)(Handle, FilterDesc w, TensorDesc dy, ConvDesc, TensorDesc dx,
                                                   int requested, int* returned, AlgoPerf* results);
  Status (*GetConvolutionBackwardDataWorkspaceSize)(Handle, FilterDesc w, TensorDesc dy, ConvDesc, TensorDesc dx,
                                                    int algo, size_t* size);
  Status (*ConvolutionBackwardData)(Handle, const void* alpha, FilterDesc w_desc, const void* w, TensorDesc dy_desc,
                                    const void* dy, ConvDesc, int algo, void* workspace, size_t workspace_size,
                                    const void* beta, TensorDesc dx_desc, void* dx);
};

// cuDNN, opened and resolved once; null with the plugin's last error naming `op` and nvidia-cudnn-cu13.
const Api* api(const char* op);
// The process's cuDNN handle for `device` (created once per device), bound to `stream`.
int handle(const char* op, int device, cudaStream_t stream, Handle* out);

}  // namespace slimtensor_cuda::aoti_ops::dnn

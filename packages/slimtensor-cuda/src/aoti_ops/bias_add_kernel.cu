// bias_add_kernel.cu: the per-channel bias add of the convolution fallback.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>

#include "aoti_ops/bias_add_kernel.h"
#include "aoti_ops/op_support.h"

namespace slimtensor_cuda::aoti_ops {
namespace {

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_float(__half v) { return __half2float(v); }
template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

// Index is 32-bit where the tensor allows: the channel of an element costs a division per element.
template <typename T, typename Index>
__global__ void channel_bias_add(T* y, const T* bias, Index numel, Index channels, Index inner) {
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += step)
    y[i] = from_float<T>(to_float(y[i]) + to_float(bias[(i / inner) % channels]));
}

template <typename T>
cudaError_t launch(void* y, const void* bias, int64_t numel, int64_t channels, int64_t inner, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((numel + kThreads - 1) / kThreads, 65536));
  if (numel <= INT32_MAX)
    channel_bias_add<T, uint32_t>
        <<<blocks, kThreads, 0, stream>>>(static_cast<T*>(y), static_cast<const T*>(bias), static_cast<uint32_t>(numel),
                                          static_cast<uint32_t>(channels), static_cast<uint32_t>(inner));
  else
    channel_bias_add<T, int64_t>
        <<<blocks, kThreads, 0, stream>>>(static_cast<T*>(y), static_cast<const T*>(bias), numel, channels, inner);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_channel_bias_add(int32_t dtype, void* y, const void* bias, int64_t numel, int64_t channels,
                                    int64_t inner, cudaStream_t stream) {
  if (numel <= 0) return cudaSuccess;
  switch (dtype) {
    case kFloat32: return launch<float>(y, bias, numel, channels, inner, stream);
    case kBFloat16: return launch<__nv_bfloat16>(y, bias, numel, channels, inner, stream);
    case kFloat16: return launch<__half>(y, bias, numel, channels, inner, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace slimtensor_cuda::aoti_ops

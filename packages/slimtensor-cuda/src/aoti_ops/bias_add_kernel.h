// bias_add_kernel.h: the per-channel bias of a convolution's output (Note [Convolution on cuDNN]).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace slimtensor_cuda::aoti_ops {

// y[i] += bias[(i / inner) % channels] for the `numel` elements of a dense y (inner = 1 for channels-last, the
// spatial size for contiguous), in float and rounded once to y's dtype (c10 code: float32, bfloat16, float16),
// queued on `stream`. cudaSuccess or the launch error.
cudaError_t launch_channel_bias_add(int32_t dtype, void* y, const void* bias, int64_t numel, int64_t channels,
                                    int64_t inner, cudaStream_t stream);

}  // namespace slimtensor_cuda::aoti_ops

// attention_kernel_f32.cu: the float instantiations of Note [Tiled attention kernel].
#include "aoti_ops/attention_kernel.cuh"

namespace slimtensor_cuda::aoti_ops {

cudaError_t launch_attention_f32(const AttentionParams& p, cudaStream_t stream) {
  return launch_dims<float>(p, stream);
}

}  // namespace slimtensor_cuda::aoti_ops

// attention_kernel_f16.cu: the __half instantiations of Note [Tiled attention kernel].
#include "aoti_ops/attention_kernel.cuh"

namespace slimtensor_cuda::aoti_ops {

cudaError_t launch_attention_f16(const AttentionParams& p, cudaStream_t stream) {
  return launch_dims<__half>(p, stream);
}

}  // namespace slimtensor_cuda::aoti_ops

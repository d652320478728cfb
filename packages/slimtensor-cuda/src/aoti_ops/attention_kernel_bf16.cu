// attention_kernel_bf16.cu: the __nv_bfloat16 instantiations of Note [Tiled attention kernel].
#include "aoti_ops/attention_kernel.cuh"

namespace slimtensor_cuda::aoti_ops {

cudaError_t launch_attention_bf16(const AttentionParams& p, cudaStream_t stream) {
  return launch_dims<__nv_bfloat16>(p, stream);
}

}  // namespace slimtensor_cuda::aoti_ops

// attention_kernel.h: slimtensor's fused attention forward (Note [Tiled attention kernel]).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace slimtensor_cuda::aoti_ops {

// One attention call: O[b, h, i, :] = softmax_j(scale * Q[b,h,i,:] . K[b,hk,j,:] + bias[b,h,i,j], masked)
// . V[b,hk,j,:], hk = h / (heads / kv_heads). Strides are in elements (any values; the kernel takes a fast
// path when the head dim is contiguous and 16-byte aligned).
struct AttentionParams {
  const void* q;
  const void* k;
  const void* v;
  const void* bias;  // null: none; same dtype as q
  void* out;
  float* lse;     // null: not wanted; else [b, h, lse_stride_h * heads ...] natural-log sum of exp per row
  int32_t dtype;  // c10 code: float32, bfloat16, float16
  int batch, heads, kv_heads, seq_q, seq_k, head_dim, value_dim;
  int64_t q_stride[4], k_stride[4], v_stride[4], o_stride[4], bias_stride[4];
  int64_t lse_stride_b, lse_stride_h;
  float scale;
  bool causal;  // top-left aligned: key j is masked for query i when j > i (torch's is_causal)
};

// The largest head dim the kernel takes.
inline constexpr int kMaxAttentionHeadDim = 128;

// Launch on `stream` (cudaSuccess or the launch error), one per dtype (attention_kernel_{f32,bf16,f16}.cu).
cudaError_t launch_attention_f32(const AttentionParams& p, cudaStream_t stream);
cudaError_t launch_attention_bf16(const AttentionParams& p, cudaStream_t stream);
cudaError_t launch_attention_f16(const AttentionParams& p, cudaStream_t stream);

}  // namespace slimtensor_cuda::aoti_ops

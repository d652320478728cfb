// attention_ops.cpp: aoti_torch_cuda__scaled_dot_product_{efficient,flash,cudnn}_attention (forward) on the
// tiled attention kernel (Note [Tiled attention kernel]).
//
// Note [Attention outputs]
// The AOTI code that consumes these outputs was generated against torch's meta functions, so each op returns
// what its meta function says, strides included (torch/_meta_registrations.py):
//   efficient: out (B, H, Sq, Dv) with the strides of a contiguous (B, Sq, H, Dv) transposed; logsumexp
//              (B, H, ceil(Sq/32)*32) float32 when compute_log_sumexp, else (B, H, 0); seed and offset 0-dim.
//   flash:     out laid out like query (torch's empty_like); logsumexp (B, H, Sq); cum_seq_q/k undefined;
//              max_q, max_k; seed (2,) and offset () uint64; debug mask empty.
//   cudnn:     out in query's dim order (alloc_with_matching_layout); logsumexp (B, H, Sq, 1); cum_seq_q/k
//              undefined; max_q, max_k; seed and offset 0-dim int64; debug mask undefined.
// seed/offset are CPU placeholders (no dropout: dropout_p must be 0, this is inference); undefined outputs
// are handles to undefined tensors, as torch's shims return. flash and cudnn take bfloat16/float16 only, as
// torch's kernels do; efficient also takes float32. Query heads may be a multiple of key/value heads.
#include <cmath>

#include "aoti_ops/attention_kernel.h"
#include "aoti_ops/op_support.h"
#include "slimtensor/c/shim_cuda_ops.h"

namespace slimtensor_cuda::aoti_ops {
namespace {

enum class Variant { kEfficient, kFlash, kCudnn };

struct Inputs {
  TensorInfo q, k, v, bias;
  bool has_bias = false;
};

int check_inputs(const char* op, Variant variant, AtenTensorHandle q_h, AtenTensorHandle k_h, AtenTensorHandle v_h,
                 AtenTensorHandle* bias_h, double dropout_p, Inputs* in) {
  if (read_tensor(op, "query", q_h, &in->q) || read_tensor(op, "key", k_h, &in->k) ||
      read_tensor(op, "value", v_h, &in->v))
    return 1;
  in->has_bias = bias_h != nullptr && *bias_h != nullptr;
  if (in->has_bias && read_tensor(op, "attn_bias", *bias_h, &in->bias)) return 1;
  const TensorInfo &q = in->q, &k = in->k, &v = in->v;
  const bool sixteen = q.dtype == kBFloat16 || q.dtype == kFloat16;
  if (!(sixteen || (q.dtype == kFloat32 && variant == Variant::kEfficient)))
    return fail("%s(): query is %s; this op takes %s", op, dtype_name(q.dtype),
                variant == Variant::kEfficient ? "float32, bfloat16 or float16" : "bfloat16 or float16");
  if (k.dtype != q.dtype || v.dtype != q.dtype || (in->has_bias && in->bias.dtype != q.dtype))
    return fail("%s(): key, value%s must share query's dtype %s", op, in->has_bias ? " and attn_bias" : "",
                dtype_name(q.dtype));
  if (k.device != q.device || v.device != q.device || (in->has_bias && in->bias.device != q.device))
    return fail("%s(): query, key, value%s must be on one GPU", op, in->has_bias ? " and attn_bias" : "");
  if (q.ndim != 4 || k.ndim != 4 || v.ndim != 4)
    return fail("%s(): expects 4-D (batch, heads, seq, head_dim) query, key and value, got %s, %s, %s", op,
                shape_text(q).c_str(), shape_text(k).c_str(), shape_text(v).c_str());
  if (k.sizes[0] != q.sizes[0] || v.sizes[0] != q.sizes[0] || k.sizes[1] != v.sizes[1] || k.sizes[2] != v.sizes[2] ||
      k.sizes[3] != q.sizes[3] || k.sizes[1] == 0 || q.sizes[1] % k.sizes[1] != 0)
    return fail(
        "%s(): shapes do not fit: query %s, key %s, value %s (batch equal, key/value heads dividing query "
        "heads, key and value sequence equal, query and key head_dim equal)",
        op, shape_text(q).c_str(), shape_text(k).c_str(), shape_text(v).c_str());
  if (q.sizes[3] > kMaxAttentionHeadDim || v.sizes[3] > kMaxAttentionHeadDim)
    return fail("%s(): head_dim %lld / value dim %lld exceeds %d, the largest this kernel takes", op,
                (long long)q.sizes[3], (long long)v.sizes[3], kMaxAttentionHeadDim);
  if (variant != Variant::kEfficient && v.sizes[3] != q.sizes[3] && variant == Variant::kFlash)
    return fail("%s(): value head_dim %lld differs from query's %lld; flash attention needs them equal", op,
                (long long)v.sizes[3], (long long)q.sizes[3]);
  for (int i = 0; i < 4; ++i)
    if (q.sizes[i] > INT32_MAX || k.sizes[i] > INT32_MAX) return fail("%s(): a dimension exceeds 2^31-1", op);
  if (dropout_p != 0.0)
    return fail("%s(): dropout_p = %g; slimtensor runs inference only, compile the model in eval mode (dropout 0)", op,
                dropout_p);
  if (in->has_bias) {
    const TensorInfo& b = in->bias;
    const int64_t want[4] = {q.sizes[0], q.sizes[1], q.sizes[2], k.sizes[2]};
    bool ok = b.ndim <= 4;
    for (int64_t i = 0; ok && i < b.ndim; ++i) {
      const int64_t s = b.sizes[b.ndim - 1 - i];
      ok = s == 1 || s == want[3 - i];
    }
    if (!ok)
      return fail("%s(): attn_bias %s does not broadcast to (batch, heads, seq_q, seq_k) = [%lld, %lld, %lld, %lld]",
                  op, shape_text(b).c_str(), (long long)want[0], (long long)want[1], (long long)want[2],
                  (long long)want[3]);
  }
  return 0;
}

// Strides (B, H, S, D order) of a new (B, H, Sq, Dv) tensor in query's dim order (torch's
// alloc_with_matching_layout; for a dense query of the same shape this is empty_like's result).
void matching_layout(const TensorInfo& q, const int64_t* sizes, int64_t* strides) {
  int order[4] = {0, 1, 2, 3};
  for (int i = 1; i < 4; ++i)  // stable sort by query stride, descending
    for (int j = i; j > 0 && q.strides[order[j]] > q.strides[order[j - 1]]; --j) std::swap(order[j], order[j - 1]);
  int64_t s = 1;
  for (int i = 3; i >= 0; --i) {
    strides[order[i]] = s;
    s *= std::max<int64_t>(sizes[order[i]], 1);
  }
}

struct Outputs {
  OwnedHandle out, lse, seed, offset, extra;  // extra: flash's debug mask
};

int run(const char* op, Variant variant, const Inputs& in, bool want_lse, bool is_causal, const double* scale,
        Outputs* res) {
  const TensorInfo &q = in.q, &k = in.k, &v = in.v;
  const int64_t B = q.sizes[0], H = q.sizes[1], Sq = q.sizes[2], D = q.sizes[3], Sk = k.sizes[2], Dv = v.sizes[3];
  DeviceGuard guard(q.device);
  if (check_device_guard(op, guard)) return 1;
  const int64_t out_sizes[4] = {B, H, Sq, Dv};
  int64_t out_strides[4];
  if (variant == Variant::kEfficient) {
    const int64_t st[4] = {Sq * H * Dv, Dv, H * Dv, 1};
    for (int i = 0; i < 4; ++i) out_strides[i] = st[i];
  } else {
    matching_layout(q, out_sizes, out_strides);
  }
  if (new_tensor(op, 4, out_sizes, out_strides, q.dtype, q.device, res->out.out())) return 1;
  // logsumexp
  int64_t lse_sizes[4] = {B, H, Sq, 1};
  int64_t lse_ndim = variant == Variant::kCudnn ? 4 : 3;
  if (variant == Variant::kEfficient) lse_sizes[2] = want_lse ? (Sq + 31) / 32 * 32 : 0;
  if (new_tensor(op, lse_ndim, lse_sizes, nullptr, kFloat32, q.device, res->lse.out())) return 1;
  const bool write_lse = variant != Variant::kEfficient || want_lse;
  // seed / offset placeholders
  if (variant == Variant::kFlash) {
    const int64_t two = 2;
    if (new_cpu_tensor(op, 1, &two, aoti_torch_dtype_uint64(), res->seed.out()) ||
        new_cpu_tensor(op, 0, nullptr, aoti_torch_dtype_uint64(), res->offset.out()))
      return 1;
    const int64_t zero = 0;
    if (new_tensor(op, 1, &zero, nullptr, q.dtype, q.device, res->extra.out())) return 1;
  } else {
    if (new_cpu_tensor(op, 0, nullptr, kInt64, res->seed.out()) ||
        new_cpu_tensor(op, 0, nullptr, kInt64, res->offset.out()))
      return 1;
  }
  if (B * H * Sq == 0 || Dv == 0) return 0;

  AttentionParams p{};
  TensorInfo out, lse;
  if (read_tensor(op, "the output", res->out.get(), &out) || read_tensor(op, "the logsumexp", res->lse.get(), &lse))
    return 1;
  p.q = q.data, p.k = k.data, p.v = v.data, p.out = out.data;
  p.lse = write_lse ? static_cast<float*>(lse.data) : nullptr;
  p.lse_stride_b = lse.strides[0];
  p.lse_stride_h = lse.strides[1];
  p.dtype = q.dtype;
  p.batch = static_cast<int>(B), p.heads = static_cast<int>(H), p.kv_heads = static_cast<int>(k.sizes[1]);
  p.seq_q = static_cast<int>(Sq), p.seq_k = static_cast<int>(Sk);
  p.head_dim = static_cast<int>(D), p.value_dim = static_cast<int>(Dv);
  for (int i = 0; i < 4; ++i) {
    p.q_stride[i] = q.strides[i], p.k_stride[i] = k.strides[i], p.v_stride[i] = v.strides[i];
    p.o_stride[i] = out.strides[i];
  }
  if (in.has_bias) {
    const TensorInfo& b = in.bias;
    p.bias = b.data;
    for (int i = 0; i < 4; ++i) p.bias_stride[i] = 0;
    for (int64_t i = 0; i < b.ndim; ++i)  // right-aligned; broadcast dims read with stride 0
      p.bias_stride[4 - b.ndim + i] = b.sizes[i] == 1 ? 0 : b.strides[i];
  }
  if (scale != nullptr && !std::isfinite(*scale)) return fail("%s(): scale = %g is not finite", op, *scale);
  p.scale = scale != nullptr ? static_cast<float>(*scale) : static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  p.causal = is_causal != 0;
  const cudaStream_t stream = op_stream(q.device);
  const cudaError_t err = q.dtype == kFloat32    ? launch_attention_f32(p, stream)
                          : q.dtype == kBFloat16 ? launch_attention_bf16(p, stream)
                                                 : launch_attention_f16(p, stream);
  if (err != cudaSuccess) return fail_cuda(op, "the attention kernel launch", err);
  return 0;
}

int undefined_tensor(const char* op, AtenTensorHandle* out) {
  if (aoti_torch_new_uninitialized_tensor(out))
    return fail("%s(): creating an undefined output failed: %s", op, slimtensor_last_error());
  return 0;
}

}  // namespace
}  // namespace slimtensor_cuda::aoti_ops

using namespace slimtensor_cuda::aoti_ops;  // NOLINT: the extern "C" bodies below

extern "C" {

AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  const char* op = "aoti_torch_cuda__scaled_dot_product_efficient_attention";
  return guarded(op, [&] {
    if (!ret0 || !ret1 || !ret2 || !ret3) return slimtensor_cuda::fail("%s(): an output pointer is null", op);
    Inputs in;
    Outputs res;
    if (check_inputs(op, Variant::kEfficient, query, key, value, attn_bias, dropout_p, &in) ||
        run(op, Variant::kEfficient, in, compute_log_sumexp != 0, is_causal != 0, scale, &res))
      return 1;
    *ret0 = res.out.take(), *ret1 = res.lse.take(), *ret2 = res.seed.take(), *ret3 = res.offset.take();
    return 0;
  });
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8) {
  const char* op = "aoti_torch_cuda__scaled_dot_product_flash_attention";
  return guarded(op, [&] {
    if (!ret0 || !ret1 || !ret2 || !ret3 || !ret4 || !ret5 || !ret6 || !ret7 || !ret8)
      return slimtensor_cuda::fail("%s(): an output pointer is null", op);
    if (return_debug_mask) return slimtensor_cuda::fail("%s(): return_debug_mask is not supported (training only)", op);
    Inputs in;
    Outputs res;
    OwnedHandle cum_q, cum_k;
    if (check_inputs(op, Variant::kFlash, query, key, value, nullptr, dropout_p, &in) ||
        run(op, Variant::kFlash, in, true, is_causal != 0, scale, &res) || undefined_tensor(op, cum_q.out()) ||
        undefined_tensor(op, cum_k.out()))
      return 1;
    *ret0 = res.out.take(), *ret1 = res.lse.take(), *ret2 = cum_q.take(), *ret3 = cum_k.take();
    *ret4 = in.q.sizes[2], *ret5 = in.k.sizes[2];
    *ret6 = res.seed.take(), *ret7 = res.offset.take(), *ret8 = res.extra.take();
    return 0;
  });
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  const char* op = "aoti_torch_cuda__scaled_dot_product_cudnn_attention";
  return guarded(op, [&] {
    if (!ret0 || !ret1 || !ret2 || !ret3 || !ret4 || !ret5 || !ret6 || !ret7 || !ret8)
      return slimtensor_cuda::fail("%s(): an output pointer is null", op);
    if (return_debug_mask) return slimtensor_cuda::fail("%s(): return_debug_mask is not supported (training only)", op);
    (void)compute_log_sumexp;  // the logsumexp is always written: it costs one store per row
    Inputs in;
    Outputs res;
    OwnedHandle cum_q, cum_k, debug;
    if (check_inputs(op, Variant::kCudnn, query, key, value, attn_bias, dropout_p, &in) ||
        run(op, Variant::kCudnn, in, true, is_causal != 0, scale, &res) || undefined_tensor(op, cum_q.out()) ||
        undefined_tensor(op, cum_k.out()) || undefined_tensor(op, debug.out()))
      return 1;
    *ret0 = res.out.take(), *ret1 = res.lse.take(), *ret2 = cum_q.take(), *ret3 = cum_k.take();
    *ret4 = in.q.sizes[2], *ret5 = in.k.sizes[2];
    *ret6 = res.seed.take(), *ret7 = res.offset.take(), *ret8 = debug.take();
    return 0;
  });
}

}  // extern "C"

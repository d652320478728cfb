// convolution_op.cpp: aoti_torch_cuda_convolution on cuDNN.
//
// Note [Convolution on cuDNN]
// One call convolves 1-3 spatial dims (1-D as 2-D with a height of 1, as torch does), with groups, stride,
// padding, dilation, and transposed convolution as cuDNN's backward-data. The output's memory format follows
// torch's cuDNN rule (channels-last when the input or the weight is channels-last, else contiguous), because
// the AOTI code that consumes it was generated for torch's strides; inputs in another layout are copied into
// that format first. Precision as torch's defaults: float32 may use TF32 (torch.backends.cudnn.allow_tf32 is
// True by default, so no engine is filtered out for its TF32 note), bfloat16/float16 use tensor cores with
// float32 accumulation. The engine is the first that cuDNN's instant heuristics rank and that plans (torch's
// default, benchmark=False), planned once per problem (Note [Convolution plans]). The bias is added by
// slimtensor's channel-bias kernel (as torch adds it: after the convolution, in float). One cuDNN handle per
// device is shared, so calls are serialised.
#include <cuda_runtime_api.h>

#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "aoti_ops/bias_add_kernel.h"
#include "aoti_ops/conv_graph.h"
#include "aoti_ops/cudnn_api.h"
#include "aoti_ops/op_support.h"
#include "slimtensor/c/shim_cuda_ops.h"

namespace slimtensor_cuda::aoti_ops {
namespace {

int cudnn_type(int32_t dtype) {
  return dtype == kFloat32 ? dnn::kFloat : dtype == kBFloat16 ? dnn::kBFloat16 : dnn::kHalf;
}

// Strides of a dense tensor of `sizes` (N, C, spatial...) in channels-last order (C fastest).
void channels_last_strides(int64_t ndim, const int64_t* sizes, int64_t* strides) {
  int64_t s = 1;
  strides[1] = s;
  s *= std::max<int64_t>(sizes[1], 1);
  for (int64_t i = ndim - 1; i >= 2; --i) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  strides[0] = s;
}

void contiguous_strides(int64_t ndim, const int64_t* sizes, int64_t* strides) {
  int64_t s = 1;
  for (int64_t i = ndim - 1; i >= 0; --i) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
}

bool has_strides(const TensorInfo& t, const int64_t* strides) {
  for (int64_t i = 0; i < t.ndim; ++i)
    if (t.sizes[i] != 1 && t.strides[i] != strides[i]) return false;
  return true;
}

// torch's suggest_memory_format: channels-last strides that are not also contiguous ones.
bool suggests_channels_last(const TensorInfo& t) {
  if (t.ndim != 4 && t.ndim != 5) return false;
  int64_t cl[kMaxOpDims], c[kMaxOpDims];
  channels_last_strides(t.ndim, t.sizes, cl);
  contiguous_strides(t.ndim, t.sizes, c);
  return has_strides(t, cl) && !has_strides(t, c);
}

// t in the given dense layout: itself, or a copy (owned by *owned).
int in_layout(const char* op, const TensorInfo& t, bool channels_last, TensorInfo* out, AtenTensorHandle* owned) {
  int64_t want[kMaxOpDims];
  if (channels_last)
    channels_last_strides(t.ndim, t.sizes, want);
  else
    contiguous_strides(t.ndim, t.sizes, want);
  if (has_strides(t, want)) {
    *out = t;
    return 0;
  }
  if (new_tensor(op, t.ndim, t.sizes, want, t.dtype, t.device, owned) || copy_into(op, *owned, t.handle) ||
      read_tensor(op, "a copy", *owned, out))
    return 1;
  return 0;
}

// cuDNN's dims for t (a height of 1 inserted for 1-D convolutions) and the dense strides of those dims in the
// chosen format: t is dense in it (in_layout), and a size-1 dim's stride, which torch leaves arbitrary, is given
// its canonical value. Returns the rank.
int cudnn_dims(const TensorInfo& t, bool one_d, bool channels_last, int64_t* dims, int64_t* strides) {
  int k = 0;
  for (int64_t i = 0; i < t.ndim; ++i) {
    if (one_d && i == 2) dims[k++] = 1;
    dims[k++] = t.sizes[i];
  }
  if (channels_last)
    channels_last_strides(k, dims, strides);
  else
    contiguous_strides(k, dims, strides);
  return k;
}

// The largest power of two up to 16 that divides p: cuDNN picks vectorised kernels by it.
int64_t alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  int64_t a = 16;
  while (a > 1 && v % static_cast<uintptr_t>(a) != 0) a /= 2;
  return a;
}

// Guards the plans and the shared cuDNN handle (cudnnSetStream and the call are not atomic).
std::mutex g_conv_mutex;
// Never destroyed: cuDNN may be unloaded before static destructors run.
auto* g_plans = new std::map<std::vector<int64_t>, std::unique_ptr<ConvGraphPlan>>;

int check_list(const char* op, const char* what, const int64_t* v, int64_t len, int64_t nsp, int64_t min) {
  if (len != nsp || (len > 0 && v == nullptr))
    return fail("%s(): %s has %lld values; this %lld-D convolution needs %lld", op, what, static_cast<long long>(len),
                static_cast<long long>(nsp), static_cast<long long>(nsp));
  for (int64_t i = 0; i < len; ++i)
    if (v[i] < min || v[i] > INT_MAX)
      return fail("%s(): %s[%lld] = %lld; expected %lld or more", op, what, static_cast<long long>(i),
                  static_cast<long long>(v[i]), static_cast<long long>(min));
  return 0;
}

int convolution(AtenTensorHandle input_h, AtenTensorHandle weight_h, AtenTensorHandle* bias_h, const int64_t* stride,
                int64_t stride_len, const int64_t* padding, int64_t padding_len, const int64_t* dilation,
                int64_t dilation_len, int32_t transposed, const int64_t* output_padding, int64_t output_padding_len,
                int64_t groups, AtenTensorHandle* ret0) {
  const char* op = "aoti_torch_cuda_convolution";
  if (ret0 == nullptr) return fail("%s(): ret0 is null; pass where to store the output handle", op);
  *ret0 = nullptr;
  TensorInfo input, weight, bias;
  const bool has_bias = bias_h != nullptr && *bias_h != nullptr;
  if (read_tensor(op, "input", input_h, &input) || read_tensor(op, "weight", weight_h, &weight) ||
      (has_bias && read_tensor(op, "bias", *bias_h, &bias)))
    return 1;
  if (!is_matmul_dtype(input.dtype))
    return fail("%s(): input is %s; supported dtypes are float32, bfloat16 and float16", op, dtype_name(input.dtype));
  if (weight.dtype != input.dtype || (has_bias && bias.dtype != input.dtype))
    return fail("%s(): weight%s must share input's dtype %s", op, has_bias ? " and bias" : "", dtype_name(input.dtype));
  if (weight.device != input.device || (has_bias && bias.device != input.device))
    return fail("%s(): input, weight and bias must be on one GPU", op);
  const int64_t nsp = input.ndim - 2;
  if (nsp < 1 || nsp > 3 || weight.ndim != input.ndim)
    return fail(
        "%s(): expects input (N, C, spatial...) with 1-3 spatial dims and a weight of the same rank, got "
        "input %s and weight %s",
        op, shape_text(input).c_str(), shape_text(weight).c_str());
  if (check_list(op, "stride", stride, stride_len, nsp, 1) || check_list(op, "padding", padding, padding_len, nsp, 0) ||
      check_list(op, "dilation", dilation, dilation_len, nsp, 1) ||
      check_list(op, "output_padding", output_padding, output_padding_len, nsp, 0))
    return 1;
  if (groups < 1 || groups > INT_MAX) return fail("%s(): groups = %lld; expected 1 or more", op, (long long)groups);
  const int64_t n = input.sizes[0], c_in = input.sizes[1];
  int64_t c_out;
  if (!transposed) {
    if (c_in != weight.sizes[1] * groups || weight.sizes[0] % groups != 0)
      return fail(
          "%s(): input has %lld channels but weight %s with groups=%lld expects %lld (and out channels "
          "divisible by groups)",
          op, (long long)c_in, shape_text(weight).c_str(), (long long)groups, (long long)(weight.sizes[1] * groups));
    c_out = weight.sizes[0];
    for (int64_t i = 0; i < nsp; ++i)
      if (output_padding[i] != 0) return fail("%s(): output_padding must be 0 for a non-transposed convolution", op);
  } else {
    if (c_in != weight.sizes[0] || weight.sizes[0] % groups != 0)
      return fail("%s(): transposed: input has %lld channels but weight %s (in, out/groups, ...) expects %lld", op,
                  (long long)c_in, shape_text(weight).c_str(), (long long)weight.sizes[0]);
    c_out = weight.sizes[1] * groups;
  }
  if (has_bias && (bias.ndim != 1 || bias.sizes[0] != c_out))
    return fail("%s(): bias must have shape [%lld], got %s", op, (long long)c_out, shape_text(bias).c_str());
  int64_t out_sizes[kMaxOpDims] = {n, c_out};
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t in = input.sizes[2 + i], k = weight.sizes[2 + i];
    const int64_t span = dilation[i] * (k - 1) + 1;
    if (!transposed) {
      const int64_t padded = in + 2 * padding[i];
      if (padded < span)
        return fail("%s(): spatial dim %lld: the input (%lld, padded %lld) is smaller than the dilated kernel (%lld)",
                    op, (long long)i, (long long)in, (long long)padded, (long long)span);
      out_sizes[2 + i] = (padded - span) / stride[i] + 1;
    } else {
      if (output_padding[i] >= std::max(stride[i], dilation[i]))
        return fail("%s(): output_padding[%lld] = %lld must be smaller than stride or dilation", op, (long long)i,
                    (long long)output_padding[i]);
      out_sizes[2 + i] = (in - 1) * stride[i] - 2 * padding[i] + span + output_padding[i];
      if (out_sizes[2 + i] <= 0)
        return fail("%s(): transposed convolution output size %lld in spatial dim %lld is not positive", op,
                    (long long)out_sizes[2 + i], (long long)i);
    }
  }

  DeviceGuard guard(input.device);
  if (check_device_guard(op, guard)) return 1;
  const bool channels_last = suggests_channels_last(input) || suggests_channels_last(weight);
  int64_t out_strides[kMaxOpDims];
  if (channels_last)
    channels_last_strides(input.ndim, out_sizes, out_strides);
  else
    contiguous_strides(input.ndim, out_sizes, out_strides);
  OwnedHandle out_h;
  if (new_tensor(op, input.ndim, out_sizes, out_strides, input.dtype, input.device, out_h.out())) return 1;
  TensorInfo out;
  if (read_tensor(op, "the output", out_h.get(), &out)) return 1;
  if (out.numel() == 0 || input.numel() == 0) {
    if (out.numel() != 0 && aoti_torch_zero_(out_h.get()))
      return fail("%s(): zeroing the output failed: %s", op, slimtensor_last_error());
    *ret0 = out_h.take();
    return 0;
  }

  OwnedHandle in_copy, w_copy;
  TensorInfo x, w;
  if (in_layout(op, input, channels_last, &x, in_copy.out()) || in_layout(op, weight, channels_last, &w, w_copy.out()))
    return 1;

  const dnn::Api* a = dnn::api(op);
  if (a == nullptr) return 1;
  std::lock_guard<std::mutex> lock(g_conv_mutex);
  dnn::Handle h = nullptr;
  if (dnn::handle(op, input.device, op_stream(input.device), &h)) return 1;
  // Note [Convolution plans]: a call's host time is what a small model's run is made of. Through the legacy calls
  // (descriptors, cudnnConvolutionForward) one call cost 34-83 us of host time on the H200 where torch's F.conv2d
  // of the same problem costs 15-38 us; so a convolution is a graph-API execution plan, made once per problem
  // (shapes, strides, dtype, alignment) and kept, and a call binds its pointers in a variant pack and executes,
  // as torch's cuDNN path does.
  const bool one_d = nsp == 1;
  ConvProblem p;
  p.type = cudnn_type(input.dtype);
  p.transposed = transposed != 0;
  p.nd = cudnn_dims(x, one_d, channels_last, p.x_dims, p.x_strides);
  cudnn_dims(w, one_d, channels_last, p.w_dims, p.w_strides);
  cudnn_dims(out, one_d, channels_last, p.y_dims, p.y_strides);
  for (int i = 0, j = 0; i < p.nd - 2; ++i) {
    if (one_d && i == 0) {
      p.pad[i] = 0, p.stride[i] = 1, p.dilation[i] = 1;
      continue;
    }
    p.pad[i] = padding[j], p.stride[i] = stride[j], p.dilation[i] = dilation[j];
    ++j;
  }
  p.x_align = alignment(x.data), p.w_align = alignment(w.data), p.y_align = alignment(out.data);
  std::vector<int64_t> key = p.key(input.device);
  auto found = g_plans->find(key);
  if (found == g_plans->end()) {
    auto plan = std::make_unique<ConvGraphPlan>(a);
    std::string why;
    if (plan->build(h, p, &why))
      return fail("%s(): cuDNN has no plan for this %s convolution (input %s, weight %s): %s", op,
                  dtype_name(input.dtype), shape_text(input).c_str(), shape_text(weight).c_str(), why.c_str());
    found = g_plans->emplace(std::move(key), std::move(plan)).first;
  }
  const ConvGraphPlan& plan = *found->second;
  OwnedHandle workspace;
  void* ws_ptr = nullptr;
  if (plan.workspace_bytes() > 0) {
    const int64_t bytes = plan.workspace_bytes();
    if (new_tensor(op, 1, &bytes, nullptr, /*uint8*/ 0, input.device, workspace.out())) return 1;
    aoti_torch_get_data_ptr(workspace.get(), &ws_ptr);
  }
  std::string why;
  if (plan.run(h, x.data, w.data, out.data, ws_ptr, &why) != 0) return fail("%s(): %s", op, why.c_str());
  if (has_bias) {  // as torch adds it: after the convolution, in float, rounded once
    OwnedHandle b_copy;
    TensorInfo b = bias;
    if (!bias.is_contiguous() && contiguous_copy(op, bias, &b, b_copy.out())) return 1;
    int64_t inner = 1;  // elements between two channels: 1 in channels-last, the spatial size otherwise
    if (!channels_last)
      for (int64_t i = 2; i < out.ndim; ++i) inner *= out.sizes[i];
    const cudaError_t err =
        launch_channel_bias_add(out.dtype, out.data, b.data, out.numel(), c_out, inner, op_stream(input.device));
    if (err != cudaSuccess) return fail("%s(): the bias kernel failed to launch: %s", op, cudaGetErrorString(err));
  }
  *ret0 = out_h.take();
  return 0;
}

}  // namespace
}  // namespace slimtensor_cuda::aoti_ops

extern "C" AOTITorchError aoti_torch_cuda_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride, int64_t stride_len_,
    const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_, int32_t transposed,
    const int64_t* output_padding, int64_t output_padding_len_, int64_t groups, AtenTensorHandle* ret0) {
  return slimtensor_cuda::aoti_ops::guarded("aoti_torch_cuda_convolution", [&] {
    return slimtensor_cuda::aoti_ops::convolution(input, weight, bias, stride, stride_len_, padding, padding_len_,
                                                  dilation, dilation_len_, transposed, output_padding,
                                                  output_padding_len_, groups, ret0);
  });
}

// convolution_op.cpp: aoti_torch_cuda_convolution on cuDNN.
//
// Note [Convolution on cuDNN]
// One call convolves 1-3 spatial dims (1-D as 2-D with a height of 1, as torch does), with groups, stride,
// padding, dilation, and transposed convolution as cuDNN's backward-data. The output's memory format follows
// torch's cuDNN rule (channels-last when the input or the weight is channels-last, else contiguous), because
// the AOTI code that consumes it was generated for torch's strides; inputs in another layout are copied into
// that format first. Precision as torch's defaults: float32 may use TF32 (torch.backends.cudnn.allow_tf32 is
// True by default: CUDNN_DEFAULT_MATH), bfloat16/float16 use tensor cores with float32 accumulation. The
// algorithm is cuDNN's heuristic choice (torch's default, benchmark=False), cached per problem with its
// descriptors (Note [Convolution plans]). The bias is added by slimtensor's channel-bias kernel (as torch adds
// it: after the convolution, in float). One cuDNN handle per device is shared, so calls are serialised.
#include <cuda_runtime_api.h>

#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "aoti_ops/bias_add_kernel.h"
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

// cuDNN's int dims for t (a height of 1 inserted for 1-D convolutions) and the dense strides of those dims in
// the chosen format: t is dense in it (in_layout), and a size-1 dim's stride, which torch leaves arbitrary, is
// given its canonical value.
bool cudnn_dims(const TensorInfo& t, bool one_d, bool channels_last, int* dims, int* strides, int* nd) {
  int64_t d64[kMaxOpDims], s64[kMaxOpDims];
  int k = 0;
  for (int64_t i = 0; i < t.ndim; ++i) {
    if (one_d && i == 2) d64[k++] = 1;
    d64[k++] = t.sizes[i];
  }
  if (channels_last)
    channels_last_strides(k, d64, s64);
  else
    contiguous_strides(k, d64, s64);
  for (int i = 0; i < k; ++i) {
    if (d64[i] > INT_MAX || s64[i] > INT_MAX) return false;
    dims[i] = static_cast<int>(d64[i]);
    strides[i] = static_cast<int>(s64[i]);
  }
  *nd = k;
  return true;
}

struct ConvDescs {
  const dnn::Api* a;
  dnn::TensorDesc x = nullptr, y = nullptr;
  dnn::FilterDesc w = nullptr;
  dnn::ConvDesc conv = nullptr;
  ~ConvDescs() {
    if (x) a->DestroyTensorDescriptor(x);
    if (y) a->DestroyTensorDescriptor(y);
    if (w) a->DestroyFilterDescriptor(w);
    if (conv) a->DestroyConvolutionDescriptor(conv);
  }
};

struct ConvPlan {
  explicit ConvPlan(const dnn::Api* api) : d{api} {}
  ConvDescs d;
  int algo = -1;
  size_t workspace_bytes = 0;
};

// Guards the plans and the shared cuDNN handle (cudnnSetStream and the call are not atomic).
std::mutex g_conv_mutex;
// Never destroyed: cuDNN may be unloaded before static destructors run.
auto* g_plans = new std::map<std::vector<int64_t>, std::unique_ptr<ConvPlan>>;

#define DNN_TRY(what, call)                                                             \
  do {                                                                                  \
    const dnn::Status st_ = (call);                                                     \
    if (st_ != 0) return fail("%s(): %s failed: %s", op, what, a->GetErrorString(st_)); \
  } while (0)

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
  const bool one_d = nsp == 1;
  const int type = cudnn_type(input.dtype);
  int xd[kMaxOpDims], xs[kMaxOpDims], yd[kMaxOpDims], ys[kMaxOpDims], wd[kMaxOpDims], ws_[kMaxOpDims], nd = 0;
  if (!cudnn_dims(x, one_d, channels_last, xd, xs, &nd) || !cudnn_dims(out, one_d, channels_last, yd, ys, &nd) ||
      !cudnn_dims(w, one_d, channels_last, wd, ws_, &nd))
    return fail("%s(): a size or stride exceeds 2^31-1, which cuDNN does not take", op);
  const int nsp_c = nd - 2;
  int pad[3], str[3], dil[3];
  for (int i = 0, j = 0; i < nsp_c; ++i) {
    if (one_d && i == 0) {
      pad[i] = 0, str[i] = 1, dil[i] = 1;
      continue;
    }
    pad[i] = static_cast<int>(padding[j]), str[i] = static_cast<int>(stride[j]), dil[i] = static_cast<int>(dilation[j]);
    ++j;
  }
  // Note [Convolution plans]: a call's host time is what a small model's run is made of, so everything
  // that depends only on the problem (the descriptors, the algorithm and its workspace size) is made once per
  // problem and kept; a call with a known problem sets the stream and convolves.
  std::vector<int64_t> key = {input.device, type, transposed, groups, channels_last, nd};
  for (int i = 0; i < nd; ++i) key.insert(key.end(), {xd[i], xs[i], yd[i], ys[i], wd[i]});
  for (int i = 0; i < nsp_c; ++i) key.insert(key.end(), {pad[i], str[i], dil[i]});
  auto found = g_plans->find(key);
  if (found == g_plans->end()) {
    auto plan = std::make_unique<ConvPlan>(a);
    ConvDescs& d = plan->d;
    DNN_TRY("cudnnCreateTensorDescriptor", a->CreateTensorDescriptor(&d.x));
    DNN_TRY("cudnnCreateTensorDescriptor", a->CreateTensorDescriptor(&d.y));
    DNN_TRY("cudnnCreateFilterDescriptor", a->CreateFilterDescriptor(&d.w));
    DNN_TRY("cudnnCreateConvolutionDescriptor", a->CreateConvolutionDescriptor(&d.conv));
    DNN_TRY("cudnnSetTensorNdDescriptor(input)", a->SetTensorNdDescriptor(d.x, type, nd, xd, xs));
    DNN_TRY("cudnnSetTensorNdDescriptor(output)", a->SetTensorNdDescriptor(d.y, type, nd, yd, ys));
    DNN_TRY("cudnnSetFilterNdDescriptor",
            a->SetFilterNdDescriptor(d.w, type, channels_last ? dnn::kNHWC : dnn::kNCHW, nd, wd));
    DNN_TRY("cudnnSetConvolutionNdDescriptor",
            a->SetConvolutionNdDescriptor(d.conv, nsp_c, pad, str, dil, dnn::kCrossCorrelation, dnn::kFloat));
    DNN_TRY("cudnnSetConvolutionGroupCount", a->SetConvolutionGroupCount(d.conv, static_cast<int>(groups)));
    DNN_TRY("cudnnSetConvolutionMathType",
            a->SetConvolutionMathType(d.conv, input.dtype == kFloat32 ? dnn::kDefaultMath : dnn::kTensorOpMath));
    dnn::AlgoPerf perf[8];
    int returned = 0;
    if (!transposed)
      DNN_TRY("cudnnGetConvolutionForwardAlgorithm_v7",
              a->GetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, 8, &returned, perf));
    else
      DNN_TRY("cudnnGetConvolutionBackwardDataAlgorithm_v7",
              a->GetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.x, d.conv, d.y, 8, &returned, perf));
    for (int i = 0; i < returned && plan->algo < 0; ++i) {
      if (perf[i].status != 0) continue;
      size_t need = 0;
      const dnn::Status st =
          !transposed ? a->GetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, perf[i].algo, &need)
                      : a->GetConvolutionBackwardDataWorkspaceSize(h, d.w, d.x, d.conv, d.y, perf[i].algo, &need);
      if (st == 0) plan->algo = perf[i].algo, plan->workspace_bytes = need;
    }
    if (plan->algo < 0)
      return fail("%s(): cuDNN has no algorithm for this %s convolution (input %s, weight %s)", op,
                  dtype_name(input.dtype), shape_text(input).c_str(), shape_text(weight).c_str());
    found = g_plans->emplace(std::move(key), std::move(plan)).first;
  }
  const ConvPlan& plan = *found->second;
  const ConvDescs& d = plan.d;
  OwnedHandle workspace;
  void* ws_ptr = nullptr;
  if (plan.workspace_bytes > 0) {
    const int64_t bytes = static_cast<int64_t>(plan.workspace_bytes);
    if (new_tensor(op, 1, &bytes, nullptr, /*uint8*/ 0, input.device, workspace.out())) return 1;
    aoti_torch_get_data_ptr(workspace.get(), &ws_ptr);
  }
  const float one = 1.0f, zero = 0.0f;
  if (!transposed)
    DNN_TRY("cudnnConvolutionForward", a->ConvolutionForward(h, &one, d.x, x.data, d.w, w.data, d.conv, plan.algo,
                                                             ws_ptr, plan.workspace_bytes, &zero, d.y, out.data));
  else
    DNN_TRY("cudnnConvolutionBackwardData",
            a->ConvolutionBackwardData(h, &one, d.w, w.data, d.x, x.data, d.conv, plan.algo, ws_ptr,
                                       plan.workspace_bytes, &zero, d.y, out.data));
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

// src/aoti/ops/rnn_layer.cpp: aoti_torch_cpu_mkldnn_rnn_layer: one LSTM layer in one direction through oneDNN's LSTM
// primitive, as torch's kernel (aten/src/ATen/native/mkldnn/RNN.cpp) computes it.
//
// Note [The mkldnn_rnn_layer contract]
// What compiled models call: torch's LSTM decomposition (torch/_decomp/decompositions.py,
// mkldnn_one_layer_lstm, taken when oneDNN is on and the LSTM is float32 or bfloat16 without
// projections) calls the op once per layer and direction, on a contiguous (T, N, I) input with (1, N, H)
// states, mode 2, num_layers 1, bidirectional/batch_first/train false and no batch_sizes; multi-layer,
// bidirectional and batch_first LSTMs are that loop. torch's kernel reads input as (T, N, I) whatever
// batch_first says and uses neither num_layers nor bidirectional (they describe the whole RNN), and so
// does this one. It differs where torch's kernel is wrong or undefined, and says so:
// - mode: torch's kernel always builds an LSTM primitive, so GRU (3) and plain RNNs (0, 1) fail there
//   ("could not create a primitive descriptor"); here they are refused up front with the reason;
// - a non-contiguous input or state: torch's kernel reads its data pointer as if contiguous (wrong
//   numbers); here it is read by its strides;
// - T == 0: torch returns uninitialised hy/cy; here hy = hx and cy = cx (no step ran);
// - batch_sizes (a packed sequence): torch ignores it; here a non-empty list is refused;
// - the workspace (ret3): torch returns one only when autograd records the call; here always an empty
//   uint8 tensor (inference only).
// has_biases false ignores weight2/weight3, as torch. float32 computes in float32; bfloat16 and float16
// compute in float32 and round the results (torch computes bfloat16 in oneDNN's bfloat16 kernels, with
// float32 accumulation; the two agree to bfloat16 precision). float64 is refused, as torch refuses it.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "aoti/ops/onednn.h"
#include "aoti/ops/op_args.h"
#include "aoti/ops/operands.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

constexpr int64_t kLstmMode = 2;  // ideep::rnn_kind::LSTM, cuDNN's CUDNN_LSTM

bool rnn_dtype(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::BFloat16 || t == ScalarType::Float16;
}

// t as a float32 tensor: t itself when it already is one (any strides), else a converted contiguous copy.
Tensor contiguous_float32(const Tensor& t) {
  if (t.dtype() == ScalarType::Float32 && t.is_contiguous()) return t;
  Tensor out = empty(IntList(t.sizes(), t.ndim()), ScalarType::Float32, kCPUDevice);
  copy_(out, t);
  return out;
}

std::string sizes_text(const Tensor& t) {
  std::string s = "(";
  for (int d = 0; d < t.ndim(); ++d) s += (d ? ", " : "") + std::to_string(t.sizes()[d]);
  return s + (t.ndim() == 1 ? ",)" : ")");
}

// A state (hx or cx) must hold N * H values laid out as (..., N, H) with leading sizes of 1.
void check_state(const Tensor& s, int64_t n, int64_t h, const char* fn, const char* arg) {
  bool ok = s.ndim() >= 2 && s.sizes()[s.ndim() - 2] == n && s.sizes()[s.ndim() - 1] == h;
  for (int d = 0; ok && d < s.ndim() - 2; ++d) ok = s.sizes()[d] == 1;
  if (!ok) {
    fail(ErrorKind::Value, fn, "(): ", arg, " must have sizes (1, ", n, ", ", h,
         ") (one layer and direction, batch, hidden_size) but has ", sizes_text(s));
  }
}

#ifdef SLIMTENSOR_HAVE_DNNL
using namespace slimtensor::aoti::onednn;

struct LstmPlan {
  PrimitiveDesc pd;
  Step lstm, r_wx, r_wh;  // r_w*: torch's (4H, I)/(4H, H) weights -> the primitive's layout
  dnnl_memory_desc_t x{}, hx{}, cx{}, wx_user{}, wh_user{}, wx{}, wh{}, bias{}, y{}, hy{}, cy{};
};

PlanCache<LstmPlan> g_plans(64);

std::shared_ptr<const LstmPlan> make_plan(int64_t t, int64_t n, int64_t i, int64_t h, bool reverse, const Tensor& w_ih,
                                          const Tensor& w_hh, const char* fn) {
  auto p = std::make_shared<LstmPlan>();
  p->x = tagged_md({t, n, i}, dnnl_f32, dnnl_tnc, fn);
  p->y = tagged_md({t, n, h}, dnnl_f32, dnnl_tnc, fn);
  p->hx = tagged_md({1, 1, n, h}, dnnl_f32, dnnl_ldnc, fn);
  p->cx = p->hx;
  p->hy = p->hx;
  p->cy = p->hx;
  p->bias = tagged_md({1, 1, 4, h}, dnnl_f32, dnnl_ldgo, fn);
  // torch's (4H, I) weight is oneDNN's ldgoi: (l, d, g, o, i) with i fastest; described by its strides.
  // (l and d have size 1: their strides only need to be valid.)
  const int64_t* si = w_ih.strides();
  const int64_t* sh = w_hh.strides();
  p->wx_user = strided_md({1, 1, i, 4, h}, {4 * h * si[0], 4 * h * si[0], si[1], h * si[0], si[0]}, dnnl_f32, fn);
  p->wh_user = strided_md({1, 1, h, 4, h}, {4 * h * sh[0], 4 * h * sh[0], sh[1], h * sh[0], sh[0]}, dnnl_f32, fn);
  dnnl_memory_desc_t wx_any = tagged_md({1, 1, i, 4, h}, dnnl_f32, dnnl_format_tag_any, fn);
  dnnl_memory_desc_t wh_any = tagged_md({1, 1, h, 4, h}, dnnl_f32, dnnl_format_tag_any, fn);
  const Api& a = *api();
  dnnl_rnn_desc_t rd;
  check(a.dnnl_lstm_forward_desc_init(&rd, dnnl_forward_inference,
                                      reverse ? dnnl_unidirectional_right2left : dnnl_unidirectional_left2right, &p->x,
                                      &p->hx, &p->cx, &wx_any, &wh_any, &p->bias, &p->y, &p->hy, &p->cy, 0),
        fn, "describe the LSTM");
  AttrGuard attr{user_scratchpad_attr(fn)};
  dnnl_primitive_desc_t pd = nullptr;
  check(a.dnnl_primitive_desc_create(&pd, &rd, attr.attr, a.engine, nullptr), fn, "create the LSTM");
  p->pd = PrimitiveDesc(pd);
  p->wx = query_md(p->pd, dnnl_query_weights_md, 0);
  p->wh = query_md(p->pd, dnnl_query_weights_md, 1);
  p->lstm = make_step(p->pd, fn, "create the LSTM");
  p->r_wx = make_reorder(p->wx_user, p->wx, fn);
  p->r_wh = make_reorder(p->wh_user, p->wh, fn);
  return p;
}

void* data(const Tensor& t) { return const_cast<void*>(static_cast<const void*>(t.data_ptr())); }

// One layer: x (T, N, I), hx/cx (N * H values), bias (4H), all float32 contiguous, weights float32 of any strides;
// writes y (T, N, H), hy and cy (N * H values), float32 contiguous.
void run_lstm(const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& bias, const Tensor& hx,
              const Tensor& cx, int64_t h, bool reverse, const Tensor& y, const Tensor& hy, const Tensor& cy,
              const char* fn) {
  const int64_t t = x.sizes()[0], n = x.sizes()[1], i = x.sizes()[2];
  const int threads = tie_threads();
  std::vector<int64_t> key = {t, n, i, h, reverse ? 1 : 0, threads};
  key.insert(key.end(), w_ih.strides(), w_ih.strides() + 2);
  key.insert(key.end(), w_hh.strides(), w_hh.strides() + 2);
  std::shared_ptr<const LstmPlan> plan =
      g_plans.get(key, [&] { return make_plan(t, n, i, h, reverse, w_ih, w_hh, fn); });
  const LstmPlan& p = *plan;
  void* wx = data(w_ih);
  void* wh = data(w_hh);
  if (p.r_wx) {
    wx = thread_buffer(0, md_bytes(p.wx));
    Memory from(p.wx_user, data(w_ih), fn), to(p.wx, wx, fn);
    execute(p.r_wx, {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}}, fn);
  }
  if (p.r_wh) {
    wh = thread_buffer(1, md_bytes(p.wh));
    Memory from(p.wh_user, data(w_hh), fn), to(p.wh, wh, fn);
    execute(p.r_wh, {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}}, fn);
  }
  Memory mx(p.x, data(x), fn), mhx(p.hx, data(hx), fn), mcx(p.cx, data(cx), fn), mwx(p.wx, wx, fn), mwh(p.wh, wh, fn),
      mb(p.bias, data(bias), fn), my(p.y, data(y), fn), mhy(p.hy, data(hy), fn), mcy(p.cy, data(cy), fn);
  execute(p.lstm,
          {{DNNL_ARG_SRC_LAYER, mx.get()},
           {DNNL_ARG_SRC_ITER, mhx.get()},
           {DNNL_ARG_SRC_ITER_C, mcx.get()},
           {DNNL_ARG_WEIGHTS_LAYER, mwx.get()},
           {DNNL_ARG_WEIGHTS_ITER, mwh.get()},
           {DNNL_ARG_BIAS, mb.get()},
           {DNNL_ARG_DST_LAYER, my.get()},
           {DNNL_ARG_DST_ITER, mhy.get()},
           {DNNL_ARG_DST_ITER_C, mcy.get()}},
          fn);
}
#endif

// The result tensor for `like`'s sizes (contiguous, `dt`).
Tensor empty_like_sizes(const Tensor& like, ScalarType dt) {
  return empty(IntList(like.sizes(), like.ndim()), dt, kCPUDevice);
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu_mkldnn_rnn_layer(AtenTensorHandle input, AtenTensorHandle weight0,
                                               AtenTensorHandle weight1, AtenTensorHandle weight2,
                                               AtenTensorHandle weight3, AtenTensorHandle hx_, AtenTensorHandle cx_,
                                               int32_t reverse, const int64_t* batch_sizes, int64_t batch_sizes_len_,
                                               int64_t mode, int64_t hidden_size, int64_t num_layers,
                                               int32_t has_biases, int32_t bidirectional, int32_t batch_first,
                                               int32_t train, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                               AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  const char* fn = "aoti_torch_cpu_mkldnn_rnn_layer";
  return guarded(fn, [&] {
    const Tensor& x = cpu_arg(input, fn, "input");
    const Tensor& w_ih = cpu_arg(weight0, fn, "weight0");
    const Tensor& w_hh = cpu_arg(weight1, fn, "weight1");
    const Tensor& hx = cpu_arg(hx_, fn, "hx_");
    const Tensor& cx = cpu_arg(cx_, fn, "cx_");
    const Tensor* b_ih = has_biases ? &cpu_arg(weight2, fn, "weight2") : nullptr;
    const Tensor* b_hh = has_biases ? &cpu_arg(weight3, fn, "weight3") : nullptr;
    out_arg(ret0, fn, "ret0");
    out_arg(ret1, fn, "ret1");
    out_arg(ret2, fn, "ret2");
    out_arg(ret3, fn, "ret3");
    if (mode != kLstmMode) {
      fail(ErrorKind::NotImplemented, fn, "(): mode ", mode,
           " is not implemented: torch's kernel computes LSTM layers only (mode 2) and fails for GRU (3) and "
           "plain RNNs (0, 1), which torch compiles without this op");
    }
    if (batch_sizes_len_ < 0 || (batch_sizes_len_ > 0 && !batch_sizes))
      fail(ErrorKind::Value, fn, "(): batch_sizes is NULL with length ", batch_sizes_len_);
    if (batch_sizes_len_ > 0) {
      fail(ErrorKind::NotImplemented, fn,
           "(): packed sequences (non-empty batch_sizes) are not implemented (torch's "
           "kernel ignores them); pass a padded (T, N, I) input");
    }
    if (hidden_size < 1) fail(ErrorKind::Value, fn, "(): hidden_size must be >= 1 but is ", hidden_size);
    check_ndim(x, 3, fn, "input");
    if (!rnn_dtype(x.dtype())) {
      fail(ErrorKind::Type, fn, "(): input has dtype ", name(x.dtype()),
           " but the oneDNN LSTM takes float32, bfloat16 or float16 (as torch's)");
    }
    const Tensor* same[] = {&w_ih, &w_hh, &hx, &cx, b_ih, b_hh};
    const char* names[] = {"weight0", "weight1", "hx_", "cx_", "weight2", "weight3"};
    for (int k = 0; k < 6; ++k)
      if (same[k]) check_same_dtype(x, *same[k], fn, "input", names[k]);
    const int64_t t = x.sizes()[0], n = x.sizes()[1], i = x.sizes()[2], h = hidden_size, g = 4 * hidden_size;
    check_ndim(w_ih, 2, fn, "weight0");
    check_ndim(w_hh, 2, fn, "weight1");
    if (w_ih.sizes()[0] != g || w_ih.sizes()[1] != i) {
      fail(ErrorKind::Value, fn, "(): weight0 (weight_ih) must be (4 * hidden_size, input_size) = (", g, ", ", i,
           ") but is ", sizes_text(w_ih));
    }
    if (w_hh.sizes()[0] != g || w_hh.sizes()[1] != h) {
      fail(ErrorKind::Value, fn, "(): weight1 (weight_hh) must be (4 * hidden_size, hidden_size) = (", g, ", ", h,
           ") but is ", sizes_text(w_hh));
    }
    for (const Tensor* b : {b_ih, b_hh}) {
      if (b && (b->ndim() != 1 || b->sizes()[0] != g)) {
        fail(ErrorKind::Value, fn, "(): the biases (weight2, weight3) must be (4 * hidden_size,) = (", g,
             ",) but one is ", sizes_text(*b));
      }
    }
    check_state(hx, n, h, fn, "hx_");
    check_state(cx, n, h, fn, "cx_");
    (void)num_layers, (void)bidirectional, (void)batch_first, (void)train;  // Note [The mkldnn_rnn_layer contract]

    Tensor y = empty(std::vector<int64_t>{t, n, h}, x.dtype(), kCPUDevice);
    Tensor hy = empty_like_sizes(hx, x.dtype()), cy = empty_like_sizes(cx, x.dtype());
    Tensor workspace = empty(std::vector<int64_t>{0}, ScalarType::UInt8, kCPUDevice);
    if (t == 0 || n == 0) {  // no step: the states pass through
      copy_(hy, hx);
      copy_(cy, cx);
    } else {
#ifdef SLIMTENSOR_HAVE_DNNL
      if (!onednn::api()) fail(ErrorKind::Runtime, fn, "(): ", onednn::unavailable_reason());
      Tensor xf = contiguous_float32(x);
      Tensor hxf = contiguous_float32(hx), cxf = contiguous_float32(cx);
      Tensor bias = empty(std::vector<int64_t>{g}, ScalarType::Float32, kCPUDevice);
      std::fill_n(static_cast<float*>(const_cast<void*>(static_cast<const void*>(bias.data_ptr()))), g, 0.0f);
      if (has_biases) {
        Tensor bi = as_dtype(*b_ih, ScalarType::Float32), bh = as_dtype(*b_hh, ScalarType::Float32);
        auto* bp = static_cast<float*>(const_cast<void*>(static_cast<const void*>(bias.data_ptr())));
        const auto* bip = static_cast<const float*>(bi.data_ptr());
        const auto* bhp = static_cast<const float*>(bh.data_ptr());
        const int64_t si = bi.strides()[0], sh = bh.strides()[0];
        for (int64_t k = 0; k < g; ++k) bp[k] = bip[k * si] + bhp[k * sh];
      }
      Tensor wi = as_dtype(w_ih, ScalarType::Float32), wh = as_dtype(w_hh, ScalarType::Float32);
      const bool f32 = x.dtype() == ScalarType::Float32;
      Tensor yf = f32 ? y : empty_like_sizes(y, ScalarType::Float32);
      Tensor hyf = f32 ? hy : empty_like_sizes(hy, ScalarType::Float32);
      Tensor cyf = f32 ? cy : empty_like_sizes(cy, ScalarType::Float32);
      run_lstm(xf, wi, wh, bias, hxf, cxf, h, reverse != 0, yf, hyf, cyf, fn);
      if (!f32) {
        copy_(y, yf);
        copy_(hy, hyf);
        copy_(cy, cyf);
      }
#else
      fail(ErrorKind::Runtime, fn, "(): ", onednn::unavailable_reason());
#endif
    }
    return_handles(fn, {&y, &hy, &cy, &workspace}, {ret0, ret1, ret2, ret3});
  });
}

}  // extern "C"

// src/aoti/ops/conv_onednn.cpp: convolution and transposed convolution through oneDNN primitives, one cached plan per
// shape, layout, dtype and thread count.
//
// Note [oneDNN convolution plans]
// A plan is what one call shape needs: the convolution (or deconvolution) primitive, its weights in the
// layout oneDNN chooses ("any"), its input and output in the layout activation_tag() picks (the caller's
// own for channels-last and pointwise calls, else oneDNN's channel-blocked one), and the reorders between
// the caller's strided tensors and the primitive's layouts. Describing the caller's
// tensors by their strides lets a non-contiguous input reach the primitive with one reorder and no copy
// of our own. float32 computes in float32; bfloat16 in oneDNN's bfloat16 kernels (float32 accumulation,
// as torch's) where it has them, else float32; float16 in float32 (the reorders convert). Plans are kept
// in a process-wide map (at most kMaxPlans, then cleared), keyed by everything that shapes the primitive,
// the thread count included (Note [oneDNN threads]); creating one costs about as much as a small
// convolution, so a model pays it once per shape. A case oneDNN has no fast primitive for (only its
// reference loops), and an ungrouped convolution below kMinMultiplyAdds, returns false: the caller takes
// the im2col path. Grouped (and depthwise) convolutions take oneDNN at every size: im2col runs one small
// GEMM per image and group, which made the zoo's mobile_block (depthwise 3x3 on 24 channels, grouped 5x5
// stride 2; 2x3x32x32) 1.23x libtorch's latency, 0.54x on oneDNN (python -m slimtensor.bench.aoti_models,
// 1 thread, docs/aoti.md "Every model at 1 and 2 threads").
#include "aoti/ops/conv_onednn.h"

#include <memory>
#include <vector>

#include "aoti/ops/onednn.h"
#include "slimtensor/base/error.h"

namespace slimtensor::aoti {

#ifdef SLIMTENSOR_HAVE_DNNL
namespace {

using namespace onednn;

constexpr size_t kMaxPlans = 512;
// Below this many multiply-adds the im2col path is faster: a oneDNN call costs a few microseconds more
// (plan lookup, reorders, memory objects). Measured with `python -m slimtensor.bench.aoti_models` on
// 2-D convolutions of 1e4-2e6 multiply-adds (docs/aoti.md, "Convolution").
constexpr int64_t kMinMultiplyAdds = int64_t{1} << 17;

int64_t multiply_adds(const ConvGeometry& g) {
  const int64_t spatial = g.transposed ? g.in_len() : g.out_len();  // a transposed conv's input is its "output"
  const int64_t per_out = (g.transposed ? g.oc : g.c) / g.groups * g.k_len();
  return g.n * (g.transposed ? g.c : g.oc) * spatial * per_out;
}

struct Plan {
  PrimitiveDesc pd;
  Step conv, rx, rw, rb, ry;  // ry: primitive's output -> caller's y; the others: caller's -> primitive's
  dnnl_memory_desc_t x_user{}, w_user{}, b_user{}, y_user{}, x_p{}, w_p{}, b_p{}, y_p{};
  bool has_bias = false;
};

PlanCache<Plan> g_plans(kMaxPlans);

bool dnnl_dtype(ScalarType t, dnnl_data_type_t* out) {
  switch (t) {
    case ScalarType::Float32: *out = dnnl_f32; return true;
    case ScalarType::BFloat16: *out = dnnl_bf16; return true;
    case ScalarType::Float16: *out = dnnl_f16; return true;
    default: return false;
  }
}

std::vector<int64_t> sizes_of(const Tensor& t) { return std::vector<int64_t>(t.sizes(), t.sizes() + t.ndim()); }
std::vector<int64_t> strides_of(const Tensor& t) { return std::vector<int64_t>(t.strides(), t.strides() + t.ndim()); }

// torch's weight as oneDNN's logical weights: (OC, IC, k...) or, grouped, (G, OC/G, IC/G, k...), whether
// the convolution is transposed (torch's transposed weight is (IC, OC/G, k...)).
void weight_view(const ConvGeometry& g, const Tensor& w, std::vector<int64_t>* dims, std::vector<int64_t>* strides) {
  const int64_t* ws = w.strides();
  const int64_t icg = g.c / g.groups, ocg = g.oc / g.groups;
  if (g.groups > 1) {
    dims->push_back(g.groups);
    strides->push_back(g.transposed ? icg * ws[0] : ocg * ws[0]);
  }
  dims->push_back(ocg);
  strides->push_back(g.transposed ? ws[1] : ws[0]);
  dims->push_back(icg);
  strides->push_back(g.transposed ? ws[0] : ws[1]);
  for (int d = 0; d < g.nd; ++d) {
    dims->push_back(w.sizes()[2 + d]);
    strides->push_back(ws[2 + d]);
  }
}

bool dense_channels_last(const Tensor& t, int nd) {
  const int64_t* s = t.strides();
  const int64_t* sz = t.sizes();
  int64_t expect = 1;
  if (s[1] != expect && sz[1] != 1) return false;
  expect *= sz[1];
  for (int d = nd + 1; d >= 2; --d) {
    if (s[d] != expect && sz[d] != 1) return false;
    expect *= sz[d];
  }
  return (s[0] == expect || sz[0] == 1) && !t.is_contiguous();
}

// The layout the primitive's input or output takes (Note [oneDNN convolution plans]): channels-last for a
// channels-last call; plain NCHW for a pointwise (1x1, stride 1, no padding) convolution, which oneDNN
// then computes as one GEMM with no reorder, and for few channels (an RGB input), which its kernels read
// directly; else oneDNN's channel-blocked layout (nChw16c, nChw8c without AVX-512), which reorders from
// and to NCHW faster than oneDNN 2.6's own choice (nhwc) does.
dnnl_format_tag_t activation_tag(bool channels_last, int nd, int64_t channels, bool pointwise) {
  if (channels_last) return nd == 1 ? dnnl_nwc : nd == 2 ? dnnl_nhwc : dnnl_ndhwc;
  if (channels < 8) return nd == 1 ? dnnl_ncw : nd == 2 ? dnnl_nchw : dnnl_ncdhw;
  if (pointwise) return nd == 1 ? dnnl_ncw : nd == 2 ? dnnl_nchw : dnnl_ncdhw;
#  if defined(__x86_64__)
  const bool avx512 = __builtin_cpu_supports("avx512f");
#  else
  const bool avx512 = false;
#  endif
  if (avx512) return nd == 1 ? dnnl_nCw16c : nd == 2 ? dnnl_nChw16c : dnnl_nCdhw16c;
  return nd == 1 ? dnnl_nCw8c : nd == 2 ? dnnl_nChw8c : dnnl_nCdhw8c;
}

std::shared_ptr<const Plan> make_plan(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor* b,
                                      const Tensor& y, dnnl_data_type_t user_dt, dnnl_data_type_t compute_dt,
                                      const char* fn) {
  auto plan = std::make_shared<Plan>();
  const int nd = g.nd;
  std::vector<int64_t> x_dims = sizes_of(x), y_dims = sizes_of(y), w_dims, w_strides;
  weight_view(g, w, &w_dims, &w_strides);
  plan->x_user = strided_md(x_dims, strides_of(x), user_dt, fn);
  plan->y_user = strided_md(y_dims, strides_of(y), user_dt, fn);
  plan->w_user = strided_md(w_dims, w_strides, user_dt, fn);
  plan->has_bias = b != nullptr;
  if (b) plan->b_user = strided_md({g.oc}, {b->strides()[0]}, user_dt, fn);

  const bool cl = dense_channels_last(x, nd);
  const bool pointwise = !g.transposed && g.groups == 1 && g.k_len() == 1 &&
                         g.stride[0] * g.stride[1] * g.stride[2] == 1 && g.pad[0] + g.pad[1] + g.pad[2] == 0;
  dnnl_memory_desc_t x_any = tagged_md(x_dims, compute_dt, activation_tag(cl, nd, g.c, pointwise), fn);
  dnnl_memory_desc_t y_any = tagged_md(y_dims, compute_dt, activation_tag(cl, nd, g.oc, pointwise), fn);
  dnnl_memory_desc_t w_any = tagged_md(w_dims, compute_dt, dnnl_format_tag_any, fn);
  dnnl_memory_desc_t b_any{};
  if (b) b_any = tagged_md({g.oc}, compute_dt, dnnl_format_tag_any, fn);
  dnnl_dims_t strides{}, dilates{}, pad_l{}, pad_r{};
  for (int d = 0; d < nd; ++d) {
    const int i = 3 - nd + d;
    strides[d] = g.stride[i];
    dilates[d] = g.dil[i] - 1;
    pad_l[d] = g.pad[i];
    pad_r[d] = g.transposed ? g.pad[i] - g.opad[i] : g.pad[i];
  }
  const Api& a = *api();
  dnnl_convolution_desc_t cd;
  dnnl_status_t s = g.transposed ? a.dnnl_dilated_deconvolution_forward_desc_init(
                                       &cd, dnnl_forward_inference, dnnl_deconvolution_direct, &x_any, &w_any,
                                       b ? &b_any : nullptr, &y_any, strides, dilates, pad_l, pad_r)
                                 : a.dnnl_dilated_convolution_forward_desc_init(
                                       &cd, dnnl_forward_inference, dnnl_convolution_direct, &x_any, &w_any,
                                       b ? &b_any : nullptr, &y_any, strides, dilates, pad_l, pad_r);
  if (s != dnnl_success) return nullptr;
  AttrGuard attr{user_scratchpad_attr(fn)};
  dnnl_primitive_desc_t pd = nullptr;
  if (a.dnnl_primitive_desc_create(&pd, &cd, attr.attr, a.engine, nullptr) != dnnl_success) return nullptr;
  plan->pd = PrimitiveDesc(pd);
  if (implementation(plan->pd).rfind("ref", 0) == 0) return nullptr;  // oneDNN's reference loops: im2col is faster
  plan->x_p = query_md(plan->pd, dnnl_query_src_md, 0);
  plan->w_p = query_md(plan->pd, dnnl_query_weights_md, 0);
  plan->y_p = query_md(plan->pd, dnnl_query_dst_md, 0);
  if (b) plan->b_p = query_md(plan->pd, dnnl_query_weights_md, 1);
  plan->conv = make_step(plan->pd, fn, g.transposed ? "create a deconvolution" : "create a convolution");
  plan->rx = make_reorder(plan->x_user, plan->x_p, fn);
  plan->rw = make_reorder(plan->w_user, plan->w_p, fn);
  if (b) plan->rb = make_reorder(plan->b_user, plan->b_p, fn);
  plan->ry = make_reorder(plan->y_p, plan->y_user, fn);
  return plan;
}

std::vector<int64_t> make_key(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor& y,
                              int threads) {
  std::vector<int64_t> v;
  v.reserve(64);
  v.insert(v.end(), {g.nd, g.transposed ? 1 : 0, g.groups, static_cast<int64_t>(x.dtype()), threads});
  for (const Tensor* t : {&x, &w, &y}) {
    v.insert(v.end(), t->sizes(), t->sizes() + t->ndim());
    v.insert(v.end(), t->strides(), t->strides() + t->ndim());
  }
  v.push_back(b ? b->strides()[0] : -1);
  for (int i = 0; i < 3; ++i) v.insert(v.end(), {g.stride[i], g.pad[i], g.dil[i], g.opad[i]});
  return v;
}

std::shared_ptr<const Plan> plan_for(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor* b,
                                     const Tensor& y, int threads, const char* fn) {
  return g_plans.get(make_key(g, x, w, b, y, threads), [&]() -> std::shared_ptr<const Plan> {
    dnnl_data_type_t user_dt;
    dnnl_dtype(x.dtype(), &user_dt);
    try {
      std::shared_ptr<const Plan> plan;
      if (user_dt == dnnl_bf16) plan = make_plan(g, x, w, b, y, user_dt, dnnl_bf16, fn);
      if (!plan) plan = make_plan(g, x, w, b, y, user_dt, dnnl_f32, fn);
      return plan;
    } catch (const Error&) {
      return nullptr;  // e.g. strides oneDNN cannot describe: the im2col path takes it
    }
  });
}

void* data(const Tensor& t) { return const_cast<void*>(static_cast<const void*>(t.data_ptr())); }

// Runs `reorder` from src to a thread buffer (slot) and returns the buffer, or returns src when there is none.
void* staged(const Step& reorder, const dnnl_memory_desc_t& from, const dnnl_memory_desc_t& to, void* src, int slot,
             const char* fn) {
  if (!reorder) return src;
  void* buf = thread_buffer(slot, md_bytes(to));
  Memory m_from(from, src, fn), m_to(to, buf, fn);
  execute(reorder, {{DNNL_ARG_FROM, m_from.get()}, {DNNL_ARG_TO, m_to.get()}}, fn);
  return buf;
}

}  // namespace

bool convolution_onednn(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor& y,
                        const char* fn) {
  dnnl_data_type_t dt;
  if (!dnnl_dtype(x.dtype(), &dt) || y.dtype() != x.dtype() || !api()) return false;
  // grouped convolutions take oneDNN at every size: im2col runs one small GEMM per image and group
  if (g.groups == 1 && multiply_adds(g) < kMinMultiplyAdds) return false;
  if (g.n == 0 || g.c == 0 || g.oc == 0 || g.in_len() == 0 || g.out_len() == 0) return false;
  const int threads = tie_threads();
  std::shared_ptr<const Plan> plan = plan_for(g, x, w, b, y, threads, fn);
  if (!plan) return false;
  const Plan& p = *plan;
  void* xp = staged(p.rx, p.x_user, p.x_p, data(x), 0, fn);
  void* wp = staged(p.rw, p.w_user, p.w_p, data(w), 1, fn);
  void* bp = b ? staged(p.rb, p.b_user, p.b_p, data(*b), 2, fn) : nullptr;
  void* yp = p.ry ? thread_buffer(3, md_bytes(p.y_p)) : data(y);
  {
    Memory mx(p.x_p, xp, fn), mw(p.w_p, wp, fn), my(p.y_p, yp, fn);
    std::unique_ptr<Memory> mb;
    std::vector<dnnl_exec_arg_t> args = {
        {DNNL_ARG_SRC, mx.get()}, {DNNL_ARG_WEIGHTS, mw.get()}, {DNNL_ARG_DST, my.get()}};
    if (b) {
      mb = std::make_unique<Memory>(p.b_p, bp, fn);
      args.push_back({DNNL_ARG_BIAS, mb->get()});
    }
    execute(p.conv, std::move(args), fn);
  }
  if (p.ry) {
    Memory m_from(p.y_p, yp, fn), m_to(p.y_user, data(y), fn);
    execute(p.ry, {{DNNL_ARG_FROM, m_from.get()}, {DNNL_ARG_TO, m_to.get()}}, fn);
  }
  return true;
}

size_t onednn_convolution_plans() { return g_plans.size(); }

#else

bool convolution_onednn(const ConvGeometry&, const Tensor&, const Tensor&, const Tensor*, const Tensor&, const char*) {
  return false;
}
size_t onednn_convolution_plans() { return 0; }

#endif

}  // namespace slimtensor::aoti

// src/aoti/ops/scatter_ops.cpp: the scatter fallbacks aoti_torch_cpu_scatter_src_out, _scatter_value_out and
// _scatter_reduce_two_out.
//
// Note [Scatter semantics]
// As torch's CPU kernels (ScatterGatherKernel.cpp): out starts as a copy of self (out may be self, as the
// compiled code passes it); for every element j of index (int64, self's ndim, index.size(d) <= self.size(d)
// for d != dim and <= src.size(d) for every d), out[j with j[dim] = index[j]] is set to src[j] (or value),
// or reduced with it. Contributions to one out element come in increasing j[dim] order, so float sums add
// in torch's order; float16/bfloat16 reduce in float32 and round once at the end, mean's sum is rounded
// before its division, which rounds again (as torch's kernels and its out.div_(count) do). Reductions
// (scatter_reduce.two): sum, prod, mean, amax, amin (NaN propagates); include_self = false first sets every
// element that receives a contribution to the reduction's identity; mean divides by the number of
// contributions (+1 with include_self), floor division for integers. Indices outside [0, self.size(dim))
// are errors.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "aoti/ops/dtype_dispatch.h"
#include "aoti/ops/gemm.h"
#include "aoti/ops/op_args.h"
#include "aoti/ops/operands.h"
#include "aoti/ops/reduced_float.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/clone.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/copy/fill.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

enum class Reduce { None, Sum, Prod, Mean, Amax, Amin };

Reduce reduce_arg(const char* reduce, const char* fn) {
  if (!reduce) fail(ErrorKind::Value, fn, "(): reduce is NULL; pass \"sum\", \"prod\", \"mean\", \"amax\" or \"amin\"");
  const std::string r(reduce);
  if (r == "sum") return Reduce::Sum;
  if (r == "prod") return Reduce::Prod;
  if (r == "mean") return Reduce::Mean;
  if (r == "amax") return Reduce::Amax;
  if (r == "amin") return Reduce::Amin;
  fail(ErrorKind::Value, fn, "(): reduce must be \"sum\", \"prod\", \"mean\", \"amax\" or \"amin\" but is \"", r, "\"");
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage_impl() == b.storage_impl() && a.storage_offset() == b.storage_offset() && a.dtype() == b.dtype() &&
         a.ndim() == b.ndim() && std::memcmp(a.sizes(), b.sizes(), sizeof(int64_t) * a.ndim()) == 0 &&
         std::memcmp(a.strides(), b.strides(), sizeof(int64_t) * a.ndim()) == 0;
}

template <typename W, typename R>
void run(W* o, const int64_t* osz, const int64_t* idx, const int64_t* isz, const W* src, W value, int nd, int64_t dim,
         Reduce op, bool include_self, bool round_steps, const char* fn) {
  int64_t ostr[64], n = 1;
  for (int d = nd - 1, s = 1; d >= 0; --d) {
    ostr[d] = s;
    s *= osz[d];
  }
  for (int d = 0; d < nd; ++d) n *= isz[d];
  std::vector<int64_t> j(static_cast<size_t>(nd), 0);
  auto for_each = [&](auto&& body) {
    std::fill(j.begin(), j.end(), 0);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t t = idx[k];
      if (t < 0 || t >= osz[dim]) {
        fail(ErrorKind::Index, fn, "(): index ", t, " is out of bounds for dimension ", dim, " with size ", osz[dim]);
      }
      int64_t off = 0;
      for (int d = 0; d < nd; ++d) off += (d == dim ? t : j[d]) * ostr[d];
      body(off, k);
      for (int d = nd - 1; d >= 0; --d) {
        if (++j[d] < isz[d]) break;
        j[d] = 0;
      }
    }
  };
  // Row-major order over index: the contributions to one target (same coordinates but dim) come in
  // increasing j[dim] order, as in torch.
  std::vector<int64_t> count;
  if (op == Reduce::Mean) count.assign(static_cast<size_t>(ostr[0] * osz[0]), include_self ? 1 : 0);
  if (op != Reduce::None && !include_self) {
    W init = W(0);
    if (op == Reduce::Prod) init = W(1);
    if (op == Reduce::Amax)
      init =
          std::numeric_limits<W>::has_infinity ? -std::numeric_limits<W>::infinity() : std::numeric_limits<W>::lowest();
    if (op == Reduce::Amin)
      init = std::numeric_limits<W>::has_infinity ? std::numeric_limits<W>::infinity() : std::numeric_limits<W>::max();
    for_each([&](int64_t off, int64_t) { o[off] = init; });
  }
  for_each([&](int64_t off, int64_t k) {
    const W v = src ? src[k] : value;
    W& t = o[off];
    switch (op) {
      case Reduce::None: t = v; break;
      case Reduce::Sum:
      case Reduce::Mean:
        if constexpr (std::is_integral_v<W>) {
          t = static_cast<W>(static_cast<uint64_t>(t) + static_cast<uint64_t>(v));
        } else {
          t = round_steps ? R::round(t + v) : t + v;
        }
        if (op == Reduce::Mean) ++count[static_cast<size_t>(off)];
        break;
      case Reduce::Prod:
        if constexpr (std::is_integral_v<W>) {
          t = static_cast<W>(static_cast<uint64_t>(t) * static_cast<uint64_t>(v));
        } else {
          t = round_steps ? R::round(t * v) : t * v;
        }
        break;
      case Reduce::Amax:
        if constexpr (std::is_integral_v<W>) {
          t = std::max(t, v);
        } else {
          t = std::isnan(v) ? v : std::max(t, v);
        }
        break;
      case Reduce::Amin:
        if constexpr (std::is_integral_v<W>) {
          t = std::min(t, v);
        } else {
          t = std::isnan(v) ? v : std::min(t, v);
        }
        break;
    }
  });
  if (op == Reduce::Mean) {
    for (size_t i = 0; i < count.size(); ++i) {
      const int64_t c = count[i] == 0 ? 1 : count[i];
      if constexpr (std::is_integral_v<W>) {
        const W q = o[i] / c, r = o[i] % c;
        o[i] = (r != 0 && ((r < 0) != (c < 0))) ? q - 1 : q;  // floor division
      } else {
        o[i] = R::round(R::round(o[i]) / static_cast<W>(c));  // the sum is stored in T, then divided in T
      }
    }
  }
}

void scatter(const char* fn, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
             const double* value, Reduce op, bool include_self, bool round_steps = false) {
  const ScalarType t = self.dtype();
  check_real_op_dtype(t, true, fn, "self");
  check_same_dtype(out, self, fn, "out", "self");
  if (src) check_same_dtype(self, *src, fn, "self", "src");
  if (index.dtype() != ScalarType::Int64) {
    fail(ErrorKind::Type, fn, "(): index must be int64 but is ", name(index.dtype()));
  }
  const int nd = std::max(self.ndim(), 1);
  const int64_t d = wrap_dim(dim, nd, fn);
  if (out.ndim() != self.ndim() || std::memcmp(out.sizes(), self.sizes(), sizeof(int64_t) * self.ndim()) != 0) {
    fail(ErrorKind::Value, fn, "(): out must have self's shape");
  }
  if (index.ndim() != self.ndim() || (src && src->ndim() != self.ndim())) {
    fail(ErrorKind::Value, fn, "(): index (", index.ndim(), "-D)", src ? " and src" : "",
         " must have self's number of dims (", self.ndim(), ")");
  }
  for (int k = 0; k < self.ndim(); ++k) {
    if ((k != d && index.sizes()[k] > self.sizes()[k]) || (src && index.sizes()[k] > src->sizes()[k])) {
      fail(ErrorKind::Value, fn, "(): index has size ", index.sizes()[k], " at dim ", k,
           " but must be no larger than self's (", self.sizes()[k], ", dims other than ", d, ")",
           src ? " and src's (" : "", src ? std::to_string(src->sizes()[k]) : "", src ? ")" : "");
    }
  }
  if (op == Reduce::Mean && t == ScalarType::Bool) fail(ErrorKind::Type, fn, "(): reduce \"mean\" does not take bool");
  if (!same_view(out, self)) copy_(out, memory_overlaps(out, self) ? clone(self) : self);
  if (index.numel() == 0) return;
  // Work on dense copies in the computation type: the element type (float16/bfloat16 in rounded float), int64 for
  // integers.
  const bool floating = info(t).is_floating;
  const ScalarType w = t == ScalarType::Float64 ? ScalarType::Float64
                       : floating               ? ScalarType::Float32
                                                : ScalarType::Int64;
  Tensor o = dense_copy(out.ndim() == 0 ? unsqueeze(out, 0) : out, w);
  Tensor ix = dense_copy(index.ndim() == 0 ? unsqueeze(index, 0) : index, ScalarType::Int64);
  Tensor sv;
  if (src) {
    Tensor s = src->ndim() == 0 ? unsqueeze(*src, 0) : *src;
    for (int k = 0; k < s.ndim(); ++k) s = narrow(s, k, 0, ix.sizes()[k]);
    sv = dense_copy(s, w);
  }
  // The value as the element type holds it (torch's Scalar conversion, range-checked), then in the work type.
  double vf = 0;
  int64_t vi = 0;
  if (value) {
    Tensor one = empty(IntList(), t, kCPUDevice, fn), onew = empty(IntList(), w, kCPUDevice, fn);
    fill_(one, Scalar::from_double(*value));
    copy_(onew, one);
    if (w == ScalarType::Int64)
      vi = *static_cast<int64_t*>(onew.data_ptr());
    else
      vf = w == ScalarType::Float32 ? *static_cast<float*>(onew.data_ptr()) : *static_cast<double*>(onew.data_ptr());
  }
  const int n = o.ndim();
  auto go = [&](auto* op_ptr, auto round_tag) {
    using W = std::remove_pointer_t<decltype(op_ptr)>;
    const W value_w = std::is_integral_v<W> ? static_cast<W>(vi) : static_cast<W>(vf);
    run<W, decltype(round_tag)>(op_ptr, o.sizes(), static_cast<const int64_t*>(ix.data_ptr()), ix.sizes(),
                                src ? static_cast<const W*>(sv.data_ptr()) : nullptr, value_w, n, d, op, include_self,
                                round_steps, fn);
  };
  if (w == ScalarType::Float64) {
    go(static_cast<double*>(o.data_ptr()), NoRound{});
  } else if (w == ScalarType::Int64) {
    go(static_cast<int64_t*>(o.data_ptr()), NoRound{});
  } else if (t == ScalarType::Float16) {
    go(static_cast<float*>(o.data_ptr()), RoundF16{});
  } else if (t == ScalarType::BFloat16) {
    go(static_cast<float*>(o.data_ptr()), RoundBF16{});
  } else {
    go(static_cast<float*>(o.data_ptr()), NoRound{});
  }
  copy_(out.ndim() == 0 ? unsqueeze(out, 0) : out, o);
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu_scatter_src_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                              AtenTensorHandle index, AtenTensorHandle src) {
  const char* fn = "aoti_torch_cpu_scatter_src_out";
  return guarded(fn, [&] {
    scatter(fn, cpu_arg(out, fn, "out"), cpu_arg(self, fn, "self"), dim, cpu_arg(index, fn, "index"),
            &cpu_arg(src, fn, "src"), nullptr, Reduce::None, true);
  });
}

AOTITorchError aoti_torch_cpu_scatter_value_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                                AtenTensorHandle index, double value) {
  const char* fn = "aoti_torch_cpu_scatter_value_out";
  return guarded(fn, [&] {
    scatter(fn, cpu_arg(out, fn, "out"), cpu_arg(self, fn, "self"), dim, cpu_arg(index, fn, "index"), nullptr, &value,
            Reduce::None, true);
  });
}

AOTITorchError aoti_torch_cpu_scatter_reduce_two_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                                     AtenTensorHandle index, AtenTensorHandle src, const char* reduce,
                                                     int32_t include_self) {
  const char* fn = "aoti_torch_cpu_scatter_reduce_two_out";
  return guarded(fn, [&] {
    const Reduce op = reduce_arg(reduce, fn);
    scatter(fn, cpu_arg(out, fn, "out"), cpu_arg(self, fn, "self"), dim, cpu_arg(index, fn, "index"),
            &cpu_arg(src, fn, "src"), nullptr, op, include_self != 0);
  });
}

// index_reduce is a scatter_reduce whose index is `index` along dim, broadcast to source's shape
// (Note [Scatter semantics]), except that float16/bfloat16 round every step (torch's index_reduce computes in
// the element type); the result is a new contiguous tensor.
AOTITorchError aoti_torch_cpu_index_reduce(AtenTensorHandle self, int64_t dim, AtenTensorHandle index,
                                           AtenTensorHandle source, const char* reduce, int32_t include_self,
                                           AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_index_reduce";
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    const Tensor& ix = cpu_arg(index, fn, "index");
    const Tensor& src = cpu_arg(source, fn, "source");
    out_arg(ret0, fn, "ret0");
    const Reduce op = reduce_arg(reduce, fn);
    if (op == Reduce::Sum) {
      fail(ErrorKind::Value, fn,
           "(): reduce must be \"prod\", \"mean\", \"amax\" or \"amin\" but is \"sum\" (use index_add)");
    }
    const int nd = std::max(s.ndim(), 1);
    const int64_t d = wrap_dim(dim, nd, fn);
    if (ix.ndim() > 1) fail(ErrorKind::Value, fn, "(): index must be 0-D or 1-D but is ", ix.ndim(), "-D");
    if (ix.dtype() != ScalarType::Int64 && ix.dtype() != ScalarType::Int32) {
      fail(ErrorKind::Type, fn, "(): index must be int64 or int32 but is ", name(ix.dtype()));
    }
    Tensor sv = src.ndim() == 0 ? unsqueeze(src, 0) : src, self_v = s.ndim() == 0 ? unsqueeze(s, 0) : s;
    bool shapes = sv.ndim() == self_v.ndim() && sv.sizes()[d] == ix.numel();
    for (int k = 0; shapes && k < sv.ndim(); ++k) shapes = k == d || sv.sizes()[k] == self_v.sizes()[k];
    if (!shapes) {
      fail(ErrorKind::Value, fn, "(): source must have self's shape except at dim ", d,
           ", where its size must be the number of indices (", ix.numel(), ")");
    }
    Tensor out = empty(IntList(s.sizes(), s.ndim()), s.dtype(), kCPUDevice, fn);  // contiguous, as torch's
    std::vector<int64_t> along(static_cast<size_t>(sv.ndim()), 1);
    along[static_cast<size_t>(d)] = ix.numel();
    Tensor idx = dense_copy(ix.ndim() == 0 ? unsqueeze(ix, 0) : ix, ScalarType::Int64);
    Tensor full_index = expand(view(idx, along), IntList(sv.sizes(), sv.ndim()));
    scatter(fn, s.ndim() == 0 ? unsqueeze(out, 0) : out, self_v, d, full_index, &sv, nullptr, op, include_self != 0,
            /*round_steps=*/true);
    *ret0 = make_handle(std::move(out), fn);
  });
}

}  // extern "C"

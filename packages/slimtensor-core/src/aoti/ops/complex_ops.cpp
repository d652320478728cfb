// src/aoti/ops/complex_ops.cpp: the fallbacks inductor keeps for complex tensors (spectral models around the FFT
// fallbacks): aoti_torch_cpu_view_as_real, aoti_torch_cpu_view_as_complex and aoti_torch_cpu_mul_Tensor.
//
// Note [Complex views]
// view_as_real(z) views a complex tensor's storage as its real dtype with a last dim of 2 (real, imaginary):
// sizes + [2], strides * 2 + [1], offset * 2. view_as_complex is the inverse and needs what torch needs: a
// float16/float32/float64 tensor whose last dim has size 2 and stride 1, every other stride and the offset even.
// Both share storage (a view, as in torch).
//
// Note [mul_Tensor]
// Inductor lowers real multiplication itself; it keeps mul as a fallback for complex operands. This is the whole
// op all the same: self and other broadcast, the result dtype is torch's result_type (a 0-d operand against a
// dimensioned one counts only by its category, c10's combine_categories), each product is computed in the result
// dtype (complex as (ac - bd) + (ad + bc)i, integers wrapping, bool as "and", float16/bfloat16 in float32 and
// rounded, a one-element `other` then taken at its own value, as torch's CPU kernel does), and the result
// is laid out as torch's TensorIterator lays out a new output: its dims ordered like the operands' strides
// (reorder_dimensions), densely. The compiled model reads the result with those strides. A complex32 result is
// refused (torch computes it; slimtensor has no complex32 arithmetic).
#include <algorithm>
#include <complex>
#include <optional>
#include <type_traits>
#include <vector>

#include "aoti/ops/dtype_dispatch.h"
#include "aoti/ops/op_args.h"
#include "aoti/ops/promotion.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

// The real dtype of a complex one (complex32, complex64, complex128), and back (float16, float32, float64);
// nullopt for any other.
std::optional<ScalarType> real_of(ScalarType t) {
  switch (t) {
    case ScalarType::Complex32: return ScalarType::Float16;
    case ScalarType::Complex64: return ScalarType::Float32;
    case ScalarType::Complex128: return ScalarType::Float64;
    default: return std::nullopt;
  }
}

std::optional<ScalarType> complex_of(ScalarType t) {
  switch (t) {
    case ScalarType::Float16: return ScalarType::Complex32;
    case ScalarType::Float32: return ScalarType::Complex64;
    case ScalarType::Float64: return ScalarType::Complex128;
    default: return std::nullopt;
  }
}

// c10::promoteTypes with complex: complex whenever either is, of the promoted real parts.
ScalarType promote_with_complex(ScalarType a, ScalarType b, const char* fn) {
  const bool ca = info(a).is_complex, cb = info(b).is_complex;
  if (!ca && !cb) return promote_types(a, b, fn);
  // the real parts are floating, so their promotion is too: it has a complex dtype
  return *complex_of(promote_types(ca ? *real_of(a) : a, cb ? *real_of(b) : b, fn));
}

// c10's combine_categories (ResultTypeState): how a lower-priority operand (0-d against a dimensioned one) changes
// the higher one's dtype: only by its category, and a complex lower one keeps a floating higher one's width.
ScalarType combine_categories(ScalarType higher, ScalarType lower, const char* fn) {
  if (info(higher).is_complex) return higher;
  if (info(lower).is_complex) {
    if (!info(higher).is_floating) return lower;
    return higher == ScalarType::BFloat16 ? ScalarType::Complex64 : *complex_of(higher);  // no complex bfloat16
  }
  if (info(higher).is_floating) return higher;
  if (higher == ScalarType::Bool || info(lower).is_floating) return promote_types(higher, lower, fn);
  return higher;
}

// torch's result_type of two tensors (Note [mul_Tensor]).
ScalarType mul_result_type(const Tensor& a, const Tensor& b, const char* fn) {
  const bool za = a.ndim() == 0, zb = b.ndim() == 0;
  if (za == zb) return promote_with_complex(a.dtype(), b.dtype(), fn);
  promote_with_complex(a.dtype(), b.dtype(), fn);  // refuses what torch cannot promote
  return za ? combine_categories(b.dtype(), a.dtype(), fn) : combine_categories(a.dtype(), b.dtype(), fn);
}

std::vector<int64_t> broadcast_sizes(const Tensor& a, const Tensor& b, const char* fn) {
  const int nd = std::max(a.ndim(), b.ndim());
  std::vector<int64_t> out(static_cast<size_t>(nd));
  for (int i = 0; i < nd; ++i) {
    const int ia = i - (nd - a.ndim()), ib = i - (nd - b.ndim());
    const int64_t sa = ia >= 0 ? a.sizes()[ia] : 1, sb = ib >= 0 ? b.sizes()[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      fail(ErrorKind::Value, fn, "(): the sizes of self (", sa, ") and other (", sb, ") must match at dim ", i,
           " or one of them must be 1 (broadcasting)");
    }
    out[static_cast<size_t>(i)] = sa == 1 ? sb : sa;
  }
  return out;
}

// TensorIterator's reorder_dimensions + allocate of a new output (Note [mul_Tensor]): strides of the result.
std::vector<int64_t> iterator_strides(const std::vector<Tensor>& ops, const std::vector<int64_t>& shape) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<int64_t> perm(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) perm[static_cast<size_t>(i)] = nd - 1 - i;  // innermost first
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const Tensor& t : ops) {
      const int64_t s0 = t.strides()[d0], s1 = t.strides()[d1];
      if (s0 == 0 || s1 == 0) continue;  // a broadcast dim says nothing
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (shape[static_cast<size_t>(d0)] > shape[static_cast<size_t>(d1)]) return 1;
    }
    return 0;
  };
  if (nd > 1) {
    for (int64_t i = 1; i < nd; ++i) {
      int64_t d1 = i;
      for (int64_t d0 = i - 1; d0 >= 0; --d0) {
        const int c = should_swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
        if (c > 0) {
          std::swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
          d1 = d0;
        } else if (c < 0) {
          break;
        }
      }
    }
  }
  std::vector<int64_t> strides(static_cast<size_t>(nd));
  int64_t step = 1;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t d = perm[static_cast<size_t>(i)];
    strides[static_cast<size_t>(d)] = step;
    step *= std::max<int64_t>(shape[static_cast<size_t>(d)], 1);
  }
  return strides;
}

Tensor converted(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor x = empty(IntList(t.sizes(), t.ndim()), dtype, kCPUDevice);
  copy_(x, t);
  return x;
}

// `t` as the kernel reads it: converted to the result dtype (TensorIterator's common dtype, so an int64 operand
// of a float16 product is rounded to float16 first), then to the `work` dtype, and expanded to `shape`.
Tensor operand(const Tensor& t, ScalarType result, ScalarType work, const std::vector<int64_t>& shape) {
  return expand(converted(converted(t, result), work), shape);
}

template <typename T, typename Op>
void multiply(const Tensor& out, const Tensor& a, const Tensor& b, Op op) {
  const int64_t nd = out.ndim(), n = out.numel();
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  T* o = static_cast<T*>(out.data_ptr());
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  for (int64_t e = 0; e < n; ++e) {
    int64_t oo = 0, oa = 0, ob = 0;
    for (int64_t d = 0; d < nd; ++d) {
      const int64_t i = idx[static_cast<size_t>(d)];
      oo += i * out.strides()[d], oa += i * a.strides()[d], ob += i * b.strides()[d];
    }
    o[oo] = op(pa[oa], pb[ob]);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < out.sizes()[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

template <typename R>
std::complex<R> complex_mul(std::complex<R> x, std::complex<R> y) {
  const R a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  return {a * c - b * d, a * d + b * c};
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu_view_as_real(AtenTensorHandle self, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_view_as_real";
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    out_arg(ret0, fn, "ret0");
    const std::optional<ScalarType> real = real_of(s.dtype());
    if (!real) {
      fail(ErrorKind::Type, fn, "(): view_as_real is only supported for complex tensors, but self is ",
           name(s.dtype()));
    }
    std::vector<int64_t> sizes(s.sizes(), s.sizes() + s.ndim()), strides;
    for (int d = 0; d < s.ndim(); ++d) strides.push_back(s.strides()[d] * 2);
    sizes.push_back(2);
    strides.push_back(1);
    *ret0 = make_handle(Tensor::make(s.storage(), sizes, strides, s.storage_offset() * 2, *real, fn), fn);
  });
}

AOTITorchError aoti_torch_cpu_view_as_complex(AtenTensorHandle self, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_view_as_complex";
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    out_arg(ret0, fn, "ret0");
    const std::optional<ScalarType> cplx = complex_of(s.dtype());
    if (!cplx) {
      fail(ErrorKind::Type, fn,
           "(): view_as_complex is only supported for float16, float32 and float64 tensors, but "
           "self is ",
           name(s.dtype()));
    }
    if (s.ndim() == 0 || s.sizes()[s.ndim() - 1] != 2) {
      fail(ErrorKind::Value, fn, "(): self must have a last dimension of size 2");
    }
    if (s.strides()[s.ndim() - 1] != 1) fail(ErrorKind::Value, fn, "(): self must have a last dimension with stride 1");
    std::vector<int64_t> sizes(s.sizes(), s.sizes() + s.ndim() - 1), strides;
    for (int d = 0; d + 1 < s.ndim(); ++d) {
      if (s.strides()[d] % 2 != 0) {
        fail(ErrorKind::Value, fn, "(): self must have a stride divisible by 2 for all but the last dimension");
      }
      strides.push_back(s.strides()[d] / 2);
    }
    if (s.storage_offset() % 2 != 0) fail(ErrorKind::Value, fn, "(): self must have a storage_offset divisible by 2");
    *ret0 = make_handle(Tensor::make(s.storage(), sizes, strides, s.storage_offset() / 2, *cplx, fn), fn);
  });
}

AOTITorchError aoti_torch_cpu_mul_Tensor(AtenTensorHandle self, AtenTensorHandle other, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_mul_Tensor";
  return guarded(fn, [&] {
    const Tensor& a = cpu_arg(self, fn, "self");
    const Tensor& b = cpu_arg(other, fn, "other");
    out_arg(ret0, fn, "ret0");
    for (const Tensor* t : {&a, &b}) {
      const ScalarType d = t->dtype();
      if (promotion_rank(d) < 0 && d != ScalarType::Complex64 && d != ScalarType::Complex128) {
        fail(ErrorKind::Type, fn, "(): ", t == &a ? "self" : "other", " has dtype ", name(d),
             " but mul takes bool, integer, floating, complex64 or complex128 tensors; convert it first");
      }
    }
    const ScalarType result = mul_result_type(a, b, fn);
    const std::vector<int64_t> shape = broadcast_sizes(a, b, fn);
    const bool reduced = result == ScalarType::Float16 || result == ScalarType::BFloat16;
    const ScalarType work = reduced ? ScalarType::Float32 : result;
    if (result == ScalarType::Complex32) {
      fail(ErrorKind::Type, fn, "(): the product of ", name(a.dtype()), " and ", name(b.dtype()),
           " is complex32, which slimtensor does not compute; convert an operand to complex64 first");
    }
    // the layout comes from the operands as given (TensorIterator converts dtypes while it iterates)
    const std::vector<int64_t> strides = iterator_strides({expand(a, shape), expand(b, shape)}, shape);
    // torch's reduced-float kernel takes a one-element `other` as a float scalar of its own value, unrounded
    const bool scalar_other = reduced && b.numel() == 1;
    std::vector<Tensor> ops = {operand(a, result, work, shape),
                               scalar_other ? expand(converted(b, work), shape) : operand(b, result, work, shape)};
    Tensor out = empty_strided(shape, strides, result, kCPUDevice, fn);
    Tensor dst = reduced ? empty_strided(shape, IntList(out.strides(), out.ndim()), work, kCPUDevice, fn) : out;
    if (out.numel() > 0) {
      switch (work) {
        case ScalarType::Complex64: multiply<std::complex<float>>(dst, ops[0], ops[1], complex_mul<float>); break;
        case ScalarType::Complex128: multiply<std::complex<double>>(dst, ops[0], ops[1], complex_mul<double>); break;
        case ScalarType::Bool: multiply<bool>(dst, ops[0], ops[1], [](bool x, bool y) { return x && y; }); break;
        case ScalarType::Int64:
          multiply<int64_t>(dst, ops[0], ops[1], [](int64_t x, int64_t y) {
            return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));  // wraps
          });
          break;
        default:
          dispatch_native(work, fn, "self", [&](auto tag) {
            using T = typename decltype(tag)::type;
            multiply<T>(dst, ops[0], ops[1], [](T x, T y) {
              if constexpr (std::is_integral_v<T>) {
                return static_cast<T>(static_cast<int64_t>(x) * static_cast<int64_t>(y));  // wraps to T
              } else {
                return x * y;
              }
            });
          });
      }
      if (reduced) copy_(out, dst);
    }
    *ret0 = make_handle(std::move(out), fn);
  });
}

}  // extern "C"

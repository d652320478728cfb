// src/aoti/ops/gemm.cpp: strided GEMM on CPU tensors: BLAS for float32/float64, float32 BLAS for half types, int64
// loops for integers.
//
// Note [GEMM layouts]
// BLAS takes a matrix whose rows or whose columns are dense (unit stride) with a leading dimension that
// fits in int32. An operand with any other layout (expanded, sliced with a step, too large) is first
// copied to a contiguous temporary. An output whose columns are dense is written as its transpose
// (C^T = B^T A^T); an output BLAS cannot write is computed in a temporary and copied back.
//
// Note [GEMM on oneDNN]
// float32 GEMMs run on oneDNN's dnnl_sgemm when oneDNN is loaded (src/aoti/ops/onednn.h), OpenBLAS otherwise
// and for float64 (oneDNN has no dgemm). Measured here (1 thread, AVX-512 Xeon): 4x256 @ 256x768, the
// per-step GEMM of a GRU or LSTM decomposed into matrix products, 27 us on oneDNN against 96 on OpenBLAS
// (torch's 23); 128x256 @ 256x768, 0.77 ms against 1.21 (torch's 1.17). OpenBLAS packs the whole B for
// every call, which dominates when A has few rows.
#include "aoti/ops/gemm.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <utility>

#include "aoti/ops/blas.h"
#include "aoti/ops/onednn.h"
#include "aoti/ops/operands.h"
#include "layout/layout.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/copy/fill.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

namespace slimtensor::aoti {
namespace {

struct Layout {
  bool usable = false;
  bool trans = false;  // column-major (BLAS Trans of a row-major matrix)
  int ld = 0;
};

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

Layout blas_layout(const Tensor& t) {
  Layout l;
  int64_t r = t.sizes()[0], c = t.sizes()[1], s0 = t.strides()[0], s1 = t.strides()[1];
  if (!fits_int(r) || !fits_int(c)) return l;
  if ((s1 == 1 || c == 1) && s0 >= std::max<int64_t>(1, c) && fits_int(s0)) {
    l.usable = true;
    l.ld = static_cast<int>(s0);
  } else if ((s0 == 1 || r == 1) && s1 >= std::max<int64_t>(1, r) && fits_int(s1)) {
    l.usable = true;
    l.trans = true;
    l.ld = static_cast<int>(s1);
  } else if (r <= 1 && c <= 1) {
    l.usable = true;
    l.ld = 1;
  }
  return l;
}

template <typename T>
void blas_gemm(const Tensor& c, const Tensor& a0, const Tensor& b0, double alpha, double beta, const char* fn) {
  const blas::Api& api = blas::api(fn);
  int m = static_cast<int>(c.sizes()[0]), n = static_cast<int>(c.sizes()[1]);
  int k = static_cast<int>(a0.sizes()[1]);
  Layout la = blas_layout(a0), lb = blas_layout(b0);
  Tensor a = la.usable ? a0 : contiguous_as(a0, a0.dtype());
  Tensor b = lb.usable ? b0 : contiguous_as(b0, b0.dtype());
  if (!la.usable) la = blas_layout(a);
  if (!lb.usable) lb = blas_layout(b);
  Layout lc = blas_layout(c);
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  T* pc = static_cast<T*>(c.data_ptr());
  int ta = la.trans ? blas::kTrans : blas::kNoTrans, tb = lb.trans ? blas::kTrans : blas::kNoTrans;
  if constexpr (sizeof(T) == 4) {  // Note [GEMM on oneDNN]
    const float fa = static_cast<float>(alpha), fb = static_cast<float>(beta);
    if (!lc.trans ? onednn::sgemm(la.trans, lb.trans, m, n, k, fa, pa, la.ld, pb, lb.ld, fb, pc, lc.ld, fn)
                  : onednn::sgemm(!lb.trans, !la.trans, n, m, k, fa, pb, lb.ld, pa, la.ld, fb, pc, lc.ld, fn))
      return;
  }
  if (!lc.trans) {
    if constexpr (sizeof(T) == 4) {
      api.sgemm(blas::kRowMajor, ta, tb, m, n, k, static_cast<float>(alpha), pa, la.ld, pb, lb.ld,
                static_cast<float>(beta), pc, lc.ld);
    } else {
      api.dgemm(blas::kRowMajor, ta, tb, m, n, k, alpha, pa, la.ld, pb, lb.ld, beta, pc, lc.ld);
    }
  } else {
    // C^T (n, m) row-major = B^T (n, k) @ A^T (k, m): each operand's transposition flips.
    int tb2 = lb.trans ? blas::kNoTrans : blas::kTrans, ta2 = la.trans ? blas::kNoTrans : blas::kTrans;
    if constexpr (sizeof(T) == 4) {
      api.sgemm(blas::kRowMajor, tb2, ta2, n, m, k, static_cast<float>(alpha), pb, lb.ld, pa, la.ld,
                static_cast<float>(beta), pc, lc.ld);
    } else {
      api.dgemm(blas::kRowMajor, tb2, ta2, n, m, k, alpha, pb, lb.ld, pa, la.ld, beta, pc, lc.ld);
    }
  }
}

// Integers: exact int64 arithmetic that wraps like torch's (computed on unsigned to avoid UB).
void int_gemm(const Tensor& c, const Tensor& a0, const Tensor& b0, double alpha, double beta) {
  Tensor a = contiguous_as(a0, ScalarType::Int64), b = contiguous_as(b0, ScalarType::Int64);
  Tensor acc = empty(IntList(c.sizes(), 2), ScalarType::Int64, kCPUDevice);
  if (beta != 0) copy_(acc, c);
  int64_t m = c.sizes()[0], n = c.sizes()[1], k = a.sizes()[1];
  auto* pa = static_cast<const int64_t*>(a.data_ptr());
  auto* pb = static_cast<const int64_t*>(b.data_ptr());
  auto* pc = static_cast<int64_t*>(acc.data_ptr());
  uint64_t ua = static_cast<uint64_t>(static_cast<int64_t>(alpha)),
           ub = static_cast<uint64_t>(static_cast<int64_t>(beta));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      uint64_t s = 0;
      for (int64_t p = 0; p < k; ++p) s += static_cast<uint64_t>(pa[i * k + p]) * static_cast<uint64_t>(pb[p * n + j]);
      uint64_t prev = beta != 0 ? static_cast<uint64_t>(pc[i * n + j]) * ub : 0;
      pc[i * n + j] = static_cast<int64_t>(prev + s * ua);
    }
  }
  copy_(c, acc);
}

// Callers ask only of tensors with elements (memory_overlaps checks numel first).
std::pair<uintptr_t, uintptr_t> byte_span(const Tensor& t) {
  auto lo = reinterpret_cast<uintptr_t>(t.data_ptr());
  return {lo, lo + static_cast<uintptr_t>(span_bytes(t.sizes(), t.strides(), t.ndim(), t.itemsize()))};
}

}  // namespace

bool memory_overlaps(const Tensor& x, const Tensor& y) {
  if (x.numel() == 0 || y.numel() == 0 || x.device() != y.device()) return false;
  auto a = byte_span(x), b = byte_span(y);
  return a.first < b.second && b.first < a.second;
}

void gemm(const Tensor& c, const Tensor& a, const Tensor& b, double alpha, double beta, const char* fn) {
  if (a.ndim() != 2 || b.ndim() != 2 || c.ndim() != 2) {
    fail(ErrorKind::Value, fn, "(): matrix product needs 2-D operands but got ", a.ndim(), "-D @ ", b.ndim(),
         "-D into ", c.ndim(), "-D");
  }
  int64_t m = a.sizes()[0], k = a.sizes()[1], n = b.sizes()[1];
  if (b.sizes()[0] != k || c.sizes()[0] != m || c.sizes()[1] != n) {
    fail(ErrorKind::Value, fn, "(): shapes do not multiply: (", m, "x", k, ") @ (", b.sizes()[0], "x", n, ") into (",
         c.sizes()[0], "x", c.sizes()[1], ")");
  }
  if (a.dtype() != b.dtype() || a.dtype() != c.dtype()) {
    fail(ErrorKind::Type, fn, "(): operands must have one dtype but are ", name(a.dtype()), ", ", name(b.dtype()),
         " and out ", name(c.dtype()));
  }
  if (m == 0 || n == 0) return;
  if (k == 0) {  // empty sum: C = beta * C (BLAS would need lda >= 1)
    if (beta == 0) {
      fill_(c, Scalar::from_int(0));
    } else if (beta != 1) {
      Tensor d = empty(IntList(c.sizes(), 2), ScalarType::Float64, kCPUDevice);
      copy_(d, c);
      auto* p = static_cast<double*>(d.data_ptr());
      for (int64_t i = 0; i < d.numel(); ++i) p[i] *= beta;
      copy_(c, d);
    }
    return;
  }
  const ScalarTypeInfo& inf = info(c.dtype());
  if (inf.is_complex || !inf.convertible) {
    fail(ErrorKind::NotImplemented, fn, "(): no matrix product for dtype ", name(c.dtype()),
         "; supported: floating and integer dtypes");
  }
  ScalarType dt = c.dtype();
  bool blas_type = dt == ScalarType::Float32 || dt == ScalarType::Float64;
  if (blas_type) {
    if (!fits_int(m) || !fits_int(n) || !fits_int(k)) {
      fail(ErrorKind::NotImplemented, fn, "(): a dimension of (", m, "x", k, ") @ (", k, "x", n,
           ") exceeds the BLAS's 32-bit limit");
    }
    Layout lc = blas_layout(c);
    bool aliased = memory_overlaps(c, a) || memory_overlaps(c, b);
    if (lc.usable && !aliased && !has_internal_overlap(c)) {
      if (dt == ScalarType::Float32) {
        blas_gemm<float>(c, a, b, alpha, beta, fn);
      } else {
        blas_gemm<double>(c, a, b, alpha, beta, fn);
      }
      return;
    }
    Tensor tmp = empty(IntList(c.sizes(), 2), dt, kCPUDevice);
    if (beta != 0) copy_(tmp, c);
    gemm(tmp, a, b, alpha, beta, fn);
    copy_(c, tmp);
    return;
  }
  if (inf.is_floating) {  // float16, bfloat16, float8: float32 accumulation, one rounding at the end
    Tensor a32 = contiguous_as(a, ScalarType::Float32), b32 = contiguous_as(b, ScalarType::Float32);
    Tensor c32 = empty(IntList(c.sizes(), 2), ScalarType::Float32, kCPUDevice);
    if (beta != 0) copy_(c32, c);
    gemm(c32, a32, b32, alpha, beta, fn);
    copy_(c, c32);
    return;
  }
  int_gemm(c, a, b, alpha, beta);
}

void set_blas_threads(int n) { blas::set_threads(n); }
int blas_threads() { return blas::threads(); }

}  // namespace slimtensor::aoti

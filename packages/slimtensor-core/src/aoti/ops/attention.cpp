// src/aoti/ops/attention.cpp: aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu (causal, mask, scale) on BLAS.
//
// Note [SDPA output layout]
// The compiled model trusts the strides of torch 2.13's meta function (with AOTI_RUNTIME_CHECK_INPUTS=1 it
// asserts them): output = empty_like(query) with Ev as last size, i.e. query's dim order (dims sorted by
// query's strides, outermost first; a dense contiguous query gives a contiguous output), and logsumexp
// (B, H, L) in the accumulation dtype (float32, or float64 for float64) laid out as (B, L, H) transposed:
// strides (L*H, 1, H). We allocate exactly those layouts. Scores are computed per (batch, head) as scale * q @ k^T in
// float32 (float64 for float64 inputs), masked (bool mask: false = -inf; float mask: added; causal: j > i is -inf,
// top-left aligned), softmaxed with the row's logsumexp, and multiplied by v. A row whose every score is -inf gives
// output 0 and logsumexp -inf.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "aoti/ops/gemm.h"
#include "aoti/ops/op_args.h"
#include "aoti/ops/operands.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

template <typename T>
void softmax_rows(T* s, int64_t L, int64_t S, const T* fmask, const bool* bmask, bool causal, T* lse) {
  const T ninf = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < L; ++i) {
    T* row = s + i * S;
    T mx = ninf;
    for (int64_t j = 0; j < S; ++j) {
      T v = row[j];
      if (causal && j > i) v = ninf;
      if (bmask && !bmask[i * S + j]) v = ninf;
      if (fmask) v += fmask[i * S + j];
      row[j] = v;
      if (v > mx) mx = v;
    }
    if (mx == ninf) {
      for (int64_t j = 0; j < S; ++j) row[j] = 0;
      lse[i] = ninf;
      continue;
    }
    T sum = 0;
    for (int64_t j = 0; j < S; ++j) {
      row[j] = std::exp(row[j] - mx);
      sum += row[j];
    }
    T inv = T(1) / sum;
    for (int64_t j = 0; j < S; ++j) row[j] *= inv;
    lse[i] = mx + std::log(sum);
  }
}

template <typename T>
void sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, bool causal, double scale,
          const Tensor& out, const Tensor& lse, const char* fn) {
  const int64_t B = q.sizes()[0], H = q.sizes()[1], L = q.sizes()[2], S = k.sizes()[2];
  ScalarType ct = out.dtype();
  Tensor fm, bm;
  if (mask) {
    std::vector<int64_t> full = {B, H, L, S};
    Tensor m = expand(*mask, full);
    if (mask->dtype() == ScalarType::Bool) {
      bm = empty(full, ScalarType::Bool, kCPUDevice);
      copy_(bm, m);
    } else {
      fm = empty(full, ct, kCPUDevice);
      copy_(fm, m);
    }
  }
  int64_t ls = L, ss = S;
  Tensor scores = empty(IntList(std::vector<int64_t>{ls, ss}), ct, kCPUDevice);
  std::vector<T> lse_row(static_cast<size_t>(L));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      Tensor qb = select(select(q, 0, b), 0, h), kb = select(select(k, 0, b), 0, h), vb = select(select(v, 0, b), 0, h);
      gemm(scores, qb, matrix_transpose(kb), scale, 0.0, fn);
      int64_t off = (b * H + h) * L * S;
      softmax_rows<T>(static_cast<T*>(scores.data_ptr()), L, S,
                      fm.defined() ? static_cast<const T*>(fm.data_ptr()) + off : nullptr,
                      bm.defined() ? static_cast<const bool*>(bm.data_ptr()) + off : nullptr, causal, lse_row.data());
      gemm(select(select(out, 0, b), 0, h), scores, vb, 1.0, 0.0, fn);
      Tensor lrow = select(select(lse, 0, b), 0, h);
      for (int64_t i = 0; i < L; ++i) static_cast<T*>(lrow.data_ptr())[i * lrow.strides()[0]] = lse_row[i];
    }
  }
}

// empty_like's preserve_format for a 4-D query, with `sizes` as the new sizes: dims ordered by query's
// strides (stable: ties keep the outer dim outer), then dense strides in that order.
std::vector<int64_t> like_strides(const Tensor& q, const std::vector<int64_t>& sizes) {
  int perm[4] = {0, 1, 2, 3};
  const int64_t* st = q.strides();
  std::stable_sort(perm, perm + 4, [&](int a, int b) { return st[a] > st[b]; });
  std::vector<int64_t> out(4);
  int64_t s = 1;
  for (int i = 3; i >= 0; --i) {
    out[perm[i]] = s;
    s *= std::max<int64_t>(1, sizes[perm[i]]);
  }
  return out;
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    AtenTensorHandle* attn_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  const char* fn = "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu";
  return guarded(fn, [&] {
    const Tensor& q = cpu_arg(query, fn, "query");
    const Tensor& k = cpu_arg(key, fn, "key");
    const Tensor& v = cpu_arg(value, fn, "value");
    const Tensor* m = attn_mask && *attn_mask ? &cpu_arg(*attn_mask, fn, "attn_mask") : nullptr;
    out_arg(ret0, fn, "ret0");
    out_arg(ret1, fn, "ret1");
    check_ndim(q, 4, fn, "query");
    check_ndim(k, 4, fn, "key");
    check_ndim(v, 4, fn, "value");
    check_same_dtype(q, k, fn, "query", "key");
    check_same_dtype(q, v, fn, "query", "value");
    if (dropout_p != 0.0) {
      fail(ErrorKind::NotImplemented, fn, "(): dropout_p must be 0 (inference) but is ", dropout_p);
    }
    const int64_t B = q.sizes()[0], H = q.sizes()[1], L = q.sizes()[2], E = q.sizes()[3];
    const int64_t S = k.sizes()[2], Ev = v.sizes()[3];
    if (k.sizes()[0] != B || v.sizes()[0] != B || k.sizes()[1] != H || v.sizes()[1] != H || k.sizes()[3] != E ||
        v.sizes()[2] != S) {
      fail(ErrorKind::Value, fn, "(): shapes do not match: query (B,H,L,E) = (", B, ",", H, ",", L, ",", E, "), key (",
           k.sizes()[0], ",", k.sizes()[1], ",", k.sizes()[2], ",", k.sizes()[3], "), value (", v.sizes()[0], ",",
           v.sizes()[1], ",", v.sizes()[2], ",", v.sizes()[3], "); key must be (B,H,S,E), value (B,H,S,Ev)");
    }
    if (m && (m->ndim() > 4 || (m->dtype() != ScalarType::Bool && !info(m->dtype()).is_floating))) {
      fail(ErrorKind::Value, fn,
           "(): attn_mask must be a bool or floating tensor of at most 4 dims broadcastable to (B,H,L,S)");
    }
    const ScalarTypeInfo& inf = info(q.dtype());
    if (!inf.is_floating || !inf.convertible) {
      fail(ErrorKind::Type, fn, "(): query must be float32, float64, float16 or bfloat16 but is ", name(q.dtype()));
    }
    ScalarType ct = q.dtype() == ScalarType::Float64 ? ScalarType::Float64 : ScalarType::Float32;
    double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(E));
    std::vector<int64_t> osz = {B, H, L, Ev}, ost = like_strides(q, osz);
    std::vector<int64_t> lsz = {B, H, L}, lst = {L * H, 1, H};
    Tensor out = empty_strided(osz, ost, q.dtype(), kCPUDevice);
    Tensor lse = empty_strided(lsz, lst, ct, kCPUDevice);
    Tensor out_c = q.dtype() == ct ? out : empty_strided(osz, ost, ct, kCPUDevice);
    Tensor qc = as_dtype(q, ct), kc = as_dtype(k, ct), vc = as_dtype(v, ct);
    if (B * H * L > 0) {
      if (ct == ScalarType::Float32)
        sdpa<float>(qc, kc, vc, m, is_causal != 0, sc, out_c, lse, fn);
      else
        sdpa<double>(qc, kc, vc, m, is_causal != 0, sc, out_c, lse, fn);
    }
    if (q.dtype() != ct) copy_(out, out_c);
    return_handles(fn, {&out, &lse}, {ret0, ret1});
  });
}

}  // extern "C"

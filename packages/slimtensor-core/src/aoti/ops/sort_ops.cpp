// src/aoti/ops/sort_ops.cpp: the ordering fallbacks aoti_torch_cpu_sort, aoti_torch_cpu_sort_stable and
// aoti_torch_cpu_topk.
//
// Note [Sort order]
// As torch defines it: NaN is greater than every number (ascending puts NaNs last, descending first),
// -0.0 equals 0.0, and a stable sort keeps equal elements in their input order (also when descending).
// Each row is ordered on keys widened exactly (float64 for floating dtypes, uint64 for uint64, int64 for
// the other integers and bool)
// with the same standard algorithms and comparators as torch's CPU kernels (SortingKernel.cpp and
// TopKImpl.h: std::stable_sort / std::sort on (key, index) pairs; topk: std::partial_sort when
// 64 * k <= n, else std::nth_element then std::sort of the first k - 1), so even the order of ties of
// the non-stable variants is torch's. Values are then gathered from self by index (bit-exact). torch's two
// special cases are kept: a dim of stride 0 (expanded) gives indices 0..n-1; a 1-D ascending sort of an
// integer tensor (not bool) of at least 32768 elements is its radix sort, i.e. stable even when not asked.
// Layouts, as torch's meta functions: sort's outputs are empty_like(self) (self's strides when dense,
// else dense strides in self's order), topk's are contiguous.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "aoti/ops/dtype_dispatch.h"
#include "aoti/ops/op_args.h"
#include "aoti/ops/rows.h"
#include "runtime/parallel.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

template <typename K>
using Elem = std::pair<K, int64_t>;

template <typename K>
bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// torch's KeyValueCompAsc / KeyValueCompDesc (and topk's lambdas): NaN above everything.
template <typename K>
struct Ascending {
  bool operator()(const Elem<K>& a, const Elem<K>& b) const {
    return (!is_nan(a.first) && is_nan(b.first)) || (a.first < b.first);
  }
};
template <typename K>
struct Descending {
  bool operator()(const Elem<K>& a, const Elem<K>& b) const {
    return (is_nan(a.first) && !is_nan(b.first)) || (a.first > b.first);
  }
};

ScalarType key_type(ScalarType t) {
  if (info(t).is_floating) return ScalarType::Float64;
  return t == ScalarType::UInt64 ? ScalarType::UInt64 : ScalarType::Int64;
}

// sort takes every real dtype, the unsigned 16/32/64-bit ones included (torch's sort_kernel dispatch).
void check_sort_dtype(ScalarType t, const char* fn) {
  if (t == ScalarType::UInt16 || t == ScalarType::UInt32 || t == ScalarType::UInt64) return;
  check_real_op_dtype(t, true, fn, "self");
}

template <typename K, typename F>
void with_keys(const Tensor& keys, F&& f) {
  f(static_cast<const K*>(keys.data_ptr()));
}

// Gathers self's rows (dim last, contiguous, self's dtype) by index rows into values rows, bytewise.
Tensor gather_rows(const Tensor& self_rows, const Tensor& index_rows, int64_t k) {
  const int64_t n = row_length(self_rows), count = row_count(self_rows), item = self_rows.itemsize();
  std::vector<int64_t> sizes(self_rows.sizes(), self_rows.sizes() + self_rows.ndim());
  sizes.back() = k;
  Tensor out = empty(sizes, self_rows.dtype(), kCPUDevice);
  const char* src = static_cast<const char*>(self_rows.data_ptr());
  const int64_t* idx = static_cast<const int64_t*>(index_rows.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t j = 0; j < k; ++j) {
      std::memcpy(dst + (r * k + j) * item, src + (r * n + idx[r * k + j]) * item, static_cast<size_t>(item));
    }
  }
  return out;
}

// Sorts every row of keys; writes the permutation into idx (rows of n).
template <typename K>
void sort_rows(const K* keys, int64_t count, int64_t n, bool descending, bool stable, int64_t* idx) {
  parallel_for(count, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n)), [&](int64_t r0, int64_t r1) {
    std::vector<Elem<K>> row(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t j = 0; j < n; ++j) row[j] = {keys[r * n + j], j};
      if (descending) {
        if (stable)
          std::stable_sort(row.begin(), row.end(), Descending<K>());
        else
          std::sort(row.begin(), row.end(), Descending<K>());
      } else {
        if (stable)
          std::stable_sort(row.begin(), row.end(), Ascending<K>());
        else
          std::sort(row.begin(), row.end(), Ascending<K>());
      }
      for (int64_t j = 0; j < n; ++j) idx[r * n + j] = row[j].second;
    }
  });
}

template <typename K, typename Comp>
void topk_row(std::vector<Elem<K>>& q, int64_t k, bool sorted, Comp comp) {
  const int64_t n = static_cast<int64_t>(q.size());
  if (k * 64 <= n) {
    std::partial_sort(q.begin(), q.begin() + k, q.end(), comp);
  } else {
    std::nth_element(q.begin(), q.begin() + k - 1, q.end(), comp);
    if (sorted) std::sort(q.begin(), q.begin() + k - 1, comp);
  }
}

template <typename K>
void topk_rows(const K* keys, int64_t count, int64_t n, int64_t k, bool largest, bool sorted, int64_t* idx) {
  if (k == 0) return;
  parallel_for(count, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n)), [&](int64_t r0, int64_t r1) {
    std::vector<Elem<K>> q(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t j = 0; j < n; ++j) q[j] = {keys[r * n + j], j};
      if (largest)
        topk_row(q, k, sorted, Descending<K>());
      else
        topk_row(q, k, sorted, Ascending<K>());
      for (int64_t j = 0; j < k; ++j) idx[r * k + j] = q[j].second;
    }
  });
}

// Index rows (contiguous, dim last) of the ordering of self along d; k = n for sort.
Tensor order_rows(const Tensor& s, int64_t d, int64_t k, bool topk, bool descending_or_largest, bool stable_or_sorted) {
  const ScalarType kt = key_type(s.dtype());
  Tensor keys = rows_of(s, d, kt);
  const int64_t n = row_length(keys), count = row_count(keys);
  std::vector<int64_t> sizes(keys.sizes(), keys.sizes() + keys.ndim());
  sizes.back() = k;
  Tensor idx = empty(sizes, ScalarType::Int64, kCPUDevice);
  if (count == 0 || n == 0) return idx;
  int64_t* ip = static_cast<int64_t*>(idx.data_ptr());
  auto run = [&](const auto* kp) {
    if (topk)
      topk_rows(kp, count, n, k, descending_or_largest, stable_or_sorted, ip);
    else
      sort_rows(kp, count, n, descending_or_largest, stable_or_sorted, ip);
  };
  if (kt == ScalarType::Float64) with_keys<double>(keys, run);
  if (kt == ScalarType::Int64) with_keys<int64_t>(keys, run);
  if (kt == ScalarType::UInt64) with_keys<uint64_t>(keys, run);
  return idx;
}

AOTITorchError sort_impl(const char* fn, AtenTensorHandle self, bool stable, int64_t dim, int32_t descending,
                         AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    out_arg(ret0, fn, "ret0");
    out_arg(ret1, fn, "ret1");
    check_sort_dtype(s.dtype(), fn);
    const int64_t d = wrap_dim(dim, std::max(s.ndim(), 1), fn);
    const int64_t n = s.ndim() == 0 ? 1 : s.sizes()[d];
    const bool radix = s.ndim() == 1 && !descending && is_integral(s.dtype(), false) && s.numel() >= 32768;
    Tensor idx;
    if (s.ndim() > 0 && n > 1 && s.strides()[d] == 0) {
      idx = rows_of(s, d, ScalarType::Int64);  // every element of a row is equal: the order is 0..n-1
      int64_t* ip = static_cast<int64_t*>(idx.data_ptr());
      for (int64_t i = 0; i < idx.numel(); ++i) ip[i] = i % n;
    } else {
      idx = order_rows(s, d, n, false, descending != 0, stable || radix);
    }
    Tensor values = empty_like(s);
    Tensor indices = empty_like(s, ScalarType::Int64, kCPUDevice);
    store_rows(values, d, gather_rows(rows_of(s, d, s.dtype()), idx, n));
    store_rows(indices, d, idx);
    return_handles(fn, {&values, &indices}, {ret0, ret1});
  });
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu_sort(AtenTensorHandle self, int64_t dim, int32_t descending, AtenTensorHandle* ret0,
                                   AtenTensorHandle* ret1) {
  return sort_impl("aoti_torch_cpu_sort", self, false, dim, descending, ret0, ret1);
}

AOTITorchError aoti_torch_cpu_sort_stable(AtenTensorHandle self, int32_t* stable, int64_t dim, int32_t descending,
                                          AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return sort_impl("aoti_torch_cpu_sort_stable", self, stable && *stable, dim, descending, ret0, ret1);
}

AOTITorchError aoti_torch_cpu_topk(AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest, int32_t sorted,
                                   AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  const char* fn = "aoti_torch_cpu_topk";
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    out_arg(ret0, fn, "ret0");
    out_arg(ret1, fn, "ret1");
    check_real_op_dtype(s.dtype(), false, fn, "self");
    const int64_t d = wrap_dim(dim, std::max(s.ndim(), 1), fn);
    const int64_t n = s.ndim() == 0 ? 1 : s.sizes()[d];
    if (k < 0 || k > n) {
      fail(ErrorKind::Index, fn, "(): k = ", k, " is out of range for dim ", d, " of size ", n, "; k must be in [0, ",
           n, "]");
    }
    Tensor idx = order_rows(s, d, k, true, largest != 0, sorted != 0);
    std::vector<int64_t> sizes = sizes_with(s, d, k);
    Tensor values = empty(sizes, s.dtype(), kCPUDevice, fn);
    Tensor indices = empty(sizes, ScalarType::Int64, kCPUDevice, fn);
    store_rows(values, d, gather_rows(rows_of(s, d, s.dtype()), idx, k));
    store_rows(indices, d, idx);
    return_handles(fn, {&values, &indices}, {ret0, ret1});
  });
}

}  // extern "C"

// src/aoti/ops/rows.cpp: rows along a dim (Note [Rows along a dim]).
#include "aoti/ops/rows.h"

#include "slimtensor/copy/copy.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

namespace slimtensor::aoti {

Tensor dim_last(const Tensor& t, int64_t dim) {
  if (t.ndim() == 0) return unsqueeze(t, 0);
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(t.ndim()));
  for (int64_t d = 0; d < t.ndim(); ++d) {
    if (d != dim) order.push_back(d);
  }
  order.push_back(dim);
  return permute(t, order);
}

Tensor rows_of(const Tensor& t, int64_t dim, ScalarType work) {
  Tensor v = dim_last(t, dim);
  Tensor out = empty(IntList(v.sizes(), v.ndim()), work, kCPUDevice);
  copy_(out, v);
  return out;
}

void store_rows(const Tensor& out, int64_t dim, const Tensor& rows) { copy_(dim_last(out, dim), rows); }

std::vector<int64_t> sizes_with(const Tensor& t, int64_t dim, int64_t size) {
  std::vector<int64_t> s(t.sizes(), t.sizes() + t.ndim());
  if (!s.empty()) s[static_cast<size_t>(dim)] = size;
  return s;
}

}  // namespace slimtensor::aoti

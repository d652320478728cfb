// src/aoti/ops/rows.h: a tensor seen as rows along one dim (contiguous working copies with that dim last, and back).
//
// Note [Rows along a dim]
// The dim-wise fallbacks (cumsum, sort, topk, ...) work on contiguous rows: rows_of() permutes `dim` to
// the end and copies into a new contiguous tensor of the working dtype (copy_ converts, exactly for every
// widening the kernels use); the kernel then sees outer() rows of length() elements each. store_rows()
// writes such rows into an output of any strides, converting with copy_'s rounding. A 0-d tensor is one
// row of one element (dim 0 and -1 are valid for it, as in torch).
#pragma once

#include <cstdint>
#include <vector>

#include "slimtensor/tensor/tensor.h"

namespace slimtensor::aoti {

// `t` with `dim` moved last (a view; 0-d becomes 1-D of one element).
Tensor dim_last(const Tensor& t, int64_t dim);
// A contiguous copy of dim_last(t, dim) in dtype `work`.
Tensor rows_of(const Tensor& t, int64_t dim, ScalarType work);
// Writes `rows` (contiguous, dim last: what rows_of gives, or a kernel's result) into `out` along `dim`.
void store_rows(const Tensor& out, int64_t dim, const Tensor& rows);
// The number of rows and the row length of a dim_last tensor.
inline int64_t row_length(const Tensor& rows) { return rows.ndim() == 0 ? 1 : rows.sizes()[rows.ndim() - 1]; }
inline int64_t row_count(const Tensor& rows) {
  const int64_t n = row_length(rows);
  return n == 0 ? 0 : rows.numel() / n;
}
// The sizes of `t` (0-d: {}) with dim's size replaced by `size`.
std::vector<int64_t> sizes_with(const Tensor& t, int64_t dim, int64_t size);

}  // namespace slimtensor::aoti

// src/aoti/ops/operands.h: a CPU op fallback's operands in the dtype and layout its kernel reads.
#pragma once

#include "slimtensor/copy/copy.h"
#include "slimtensor/tensor/factories.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor::aoti {

// A new contiguous CPU tensor with t's values in dtype `dt`: always a copy, so the op may write it.
// `fn` names the op in an allocation error.
inline Tensor dense_copy(const Tensor& t, ScalarType dt, const char* fn = "empty()") {
  Tensor out = empty(IntList(t.sizes(), t.ndim()), dt, kCPUDevice, fn);
  copy_(out, t);
  return out;
}

// t itself when it is contiguous and already of dtype `dt`, else dense_copy(t, dt): an operand to read.
inline Tensor contiguous_as(const Tensor& t, ScalarType dt, const char* fn = "empty()") {
  return t.dtype() == dt && t.is_contiguous() ? t : dense_copy(t, dt, fn);
}

// t itself when it is already of dtype `dt`, whatever its strides (for kernels that take strides), else
// dense_copy(t, dt).
inline Tensor as_dtype(const Tensor& t, ScalarType dt) { return t.dtype() == dt ? t : dense_copy(t, dt); }

}  // namespace slimtensor::aoti

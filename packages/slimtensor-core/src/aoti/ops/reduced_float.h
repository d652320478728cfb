// src/aoti/ops/reduced_float.h: float16/bfloat16 arithmetic as c10::Half/BFloat16 do it (each result rounded), for
// kernels that compute in float.
#pragma once

#include "copy/half_bits.h"
#include "slimtensor/tensor/scalar_type.h"

namespace slimtensor::aoti {

// Rounding policies: R::round(x) brings a float/double result back to the values of the element type.
struct RoundF16 {
  static float round(float x) { return f16_to_float(float_to_f16(x)); }
};
struct RoundBF16 {
  static float round(float x) { return bf16_to_float(float_to_bf16_scalar(x)); }
};
struct NoRound {
  template <typename V>
  static V round(V x) {
    return x;
  }
};

}  // namespace slimtensor::aoti

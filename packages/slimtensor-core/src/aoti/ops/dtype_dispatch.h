// src/aoti/ops/dtype_dispatch.h: calling a kernel template with the C++ type of a dtype, and the dtype groups the
// fallbacks use.
#pragma once

#include <cstdint>

#include "slimtensor/base/error.h"
#include "slimtensor/tensor/scalar_type.h"

namespace slimtensor::aoti {

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) for the element types a kernel computes in directly: uint8, int8, int16, int32,
// int64, bool, float32, float64. float16/bfloat16 are widened to float32 (or float64) by the callers
// before they get here. Any other dtype is an Error(Type) naming `fn`, `arg` and the dtypes accepted.
template <typename F>
decltype(auto) dispatch_native(ScalarType t, const char* fn, const char* arg, F&& f) {
  switch (t) {
    case ScalarType::UInt8: return f(TypeTag<uint8_t>{});
    case ScalarType::Int8: return f(TypeTag<int8_t>{});
    case ScalarType::Int16: return f(TypeTag<int16_t>{});
    case ScalarType::Int32: return f(TypeTag<int32_t>{});
    case ScalarType::Int64: return f(TypeTag<int64_t>{});
    case ScalarType::Bool: return f(TypeTag<bool>{});
    case ScalarType::Float32: return f(TypeTag<float>{});
    case ScalarType::Float64: return f(TypeTag<double>{});
    default:
      fail(ErrorKind::Type, fn, "(): ", arg, " has dtype ", name(t),
           " but this kernel computes in uint8, int8, int16, int32, int64, bool, float32 or float64; convert it first");
  }
}

// The real dtypes the dim-wise fallbacks (cumsum, sort, topk, ...) accept, as torch's CPU kernels do
// (AT_DISPATCH_ALL_TYPES_AND(Half, BFloat16[, Bool])): every integer type but the unsigned 16/32/64-bit
// ones, bool where `with_bool`, float16, bfloat16, float32, float64. Complex is not implemented.
inline bool is_real_op_dtype(ScalarType t, bool with_bool) {
  switch (t) {
    case ScalarType::UInt8:
    case ScalarType::Int8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64:
    case ScalarType::Float16:
    case ScalarType::BFloat16:
    case ScalarType::Float32:
    case ScalarType::Float64: return true;
    case ScalarType::Bool: return with_bool;
    default: return false;
  }
}

inline void check_real_op_dtype(ScalarType t, bool with_bool, const char* fn, const char* arg) {
  if (!is_real_op_dtype(t, with_bool)) {
    fail(ErrorKind::Type, fn, "(): ", arg, " has dtype ", name(t),
         " but this fallback takes uint8, int8, int16, int32, ", "int64, ", with_bool ? "bool, " : "",
         "float16, bfloat16, float32 or float64",
         info(t).is_complex ? " (complex is not implemented by slimtensor)" : "", "; convert the tensor first");
  }
}

inline bool is_integral(ScalarType t, bool include_bool) {
  return (info(t).is_tensor_dtype && !info(t).is_floating && !info(t).is_complex && t != ScalarType::Bool) ||
         (include_bool && t == ScalarType::Bool);
}

}  // namespace slimtensor::aoti

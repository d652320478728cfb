// src/aoti/ops/promotion.h: torch's type promotion for the real dtypes (promoteTypes and result_type's categories).
//
// Note [Type promotion in the fallbacks]
// promote_types is c10::promoteTypes restricted to bool, the signed integers, uint8 and the floating dtypes
// (uint16/32/64 are refused, as torch refuses to promote them with other types). result_type follows
// at::native::result_type: operands are ranked dimensioned tensor > 0-d tensor > wrapped number (a Python
// scalar), and a lower rank changes the result only by raising its category (bool < integer < floating);
// a floating wrapped number counts as the default dtype, float32.
#pragma once

#include "slimtensor/base/error.h"
#include "slimtensor/tensor/scalar_type.h"

namespace slimtensor::aoti {

inline int promotion_rank(ScalarType t) {  // -1: not promotable here
  switch (t) {
    case ScalarType::Bool: return 0;
    case ScalarType::UInt8: return 1;
    case ScalarType::Int8: return 2;
    case ScalarType::Int16: return 3;
    case ScalarType::Int32: return 4;
    case ScalarType::Int64: return 5;
    case ScalarType::Float16: return 6;
    case ScalarType::BFloat16: return 7;
    case ScalarType::Float32: return 8;
    case ScalarType::Float64: return 9;
    default: return -1;
  }
}

inline ScalarType promote_types(ScalarType a, ScalarType b, const char* fn) {
  const int ra = promotion_rank(a), rb = promotion_rank(b);
  if (ra < 0 || rb < 0) {
    fail(ErrorKind::Type, fn, "(): cannot promote ", name(a), " with ", name(b),
         "; give both tensors the same dtype (bool, integer or floating; not unsigned 16/32/64-bit or complex)");
  }
  if (a == b) return a;
  if ((a == ScalarType::UInt8 && b == ScalarType::Int8) || (a == ScalarType::Int8 && b == ScalarType::UInt8)) {
    return ScalarType::Int16;
  }
  if ((a == ScalarType::Float16 && b == ScalarType::BFloat16) ||
      (a == ScalarType::BFloat16 && b == ScalarType::Float16)) {
    return ScalarType::Float32;
  }
  return ra > rb ? a : b;
}

enum class Operand { Dimensioned, ZeroDim, WrappedNumber };

inline int category(ScalarType t) { return t == ScalarType::Bool ? 0 : info(t).is_floating ? 2 : 1; }

// at::native::result_type of two operands (Note [Type promotion in the fallbacks]).
inline ScalarType result_type(ScalarType a, Operand ka, ScalarType b, Operand kb, const char* fn) {
  if (ka == Operand::WrappedNumber && info(a).is_floating) a = ScalarType::Float32;
  if (kb == Operand::WrappedNumber && info(b).is_floating) b = ScalarType::Float32;
  if (ka == kb) return promote_types(a, b, fn);
  promote_types(a, b, fn);  // refuses what torch cannot promote
  const bool a_higher = static_cast<int>(ka) < static_cast<int>(kb);
  const ScalarType higher = a_higher ? a : b, lower = a_higher ? b : a;
  if (category(lower) > category(higher)) return promote_types(higher, lower, fn);
  return higher;
}

}  // namespace slimtensor::aoti

// slimtensor/scalar_type.h: element types with PyTorch's c10 numbering and their sizes.
//
// Note [ScalarType codes]
// The numeric values are c10's: they cross the AOTI ABI as int32 and must never change. Codes that c10
// reserves for types slimtensor cannot hold (quantized, bit-packed) are known by name and size, so that
// errors can name them, but are not valid for tensors (is_tensor_dtype() is false).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "slimtensor/export.h"

namespace slimtensor {

enum class ScalarType : int8_t {
  UInt8 = 0,
  Int8 = 1,
  Int16 = 2,
  Int32 = 3,
  Int64 = 4,
  Float16 = 5,
  Float32 = 6,
  Float64 = 7,
  Complex32 = 8,
  Complex64 = 9,
  Complex128 = 10,
  Bool = 11,
  QInt8 = 12,
  QUInt8 = 13,
  QInt32 = 14,
  BFloat16 = 15,
  QUInt4x2 = 16,
  QUInt2x4 = 17,
  Bits1x8 = 18,
  Bits2x4 = 19,
  Bits4x2 = 20,
  Bits8 = 21,
  Bits16 = 22,
  Float8_e5m2 = 23,
  Float8_e4m3fn = 24,
  Float8_e5m2fnuz = 25,
  Float8_e4m3fnuz = 26,
  UInt16 = 27,
  UInt32 = 28,
  UInt64 = 29,
  // 30..36 UInt1..UInt7 and 37..43 Int1..Int7 are c10 placeholders for sub-byte types.
  Float8_e8m0fnu = 44,
  Float4_e2m1fn_x2 = 45,
};

constexpr int kNumScalarTypeCodes = 46;

struct ScalarTypeInfo {
  const char* name;      // torch's name: "float32", "bfloat16", ...; nullptr for unused codes
  int8_t itemsize;       // bytes per element
  bool is_tensor_dtype;  // slimtensor can hold tensors of it
  bool is_floating;      // real floating point (float8 included)
  bool is_complex;
  bool is_signed;
  bool convertible;      // copy_ converts from and to it (float8 and float4 are refused)
};

// Info for a code; nullptr when the code is not a c10 ScalarType.
SLIMTENSOR_API const ScalarTypeInfo* scalar_type_info(int code) noexcept;
// Info for a valid enum value (never null for one that scalar_type_from_code accepted).
SLIMTENSOR_API const ScalarTypeInfo& info(ScalarType t) noexcept;
// The ScalarType for a c10 code that can be a tensor dtype; throws Error(Value) otherwise.
SLIMTENSOR_API ScalarType scalar_type_from_code(int64_t code, const char* function);
// Parses "float32", "float", "half", "bfloat16", ... (torch's names and aliases); throws Error(Type).
SLIMTENSOR_API ScalarType scalar_type_from_name(std::string_view name, const char* function);

inline int64_t itemsize(ScalarType t) noexcept { return info(t).itemsize; }
inline const char* name(ScalarType t) noexcept { return info(t).name; }

}  // namespace slimtensor

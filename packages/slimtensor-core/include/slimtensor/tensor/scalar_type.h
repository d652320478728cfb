// slimtensor/tensor/scalar_type.h: element types with PyTorch's c10 numbering and their sizes.
//
// Note [ScalarType codes]
// The numeric values are c10's: they cross the AOTI ABI as int32 and must never change. Codes that c10
// reserves for types slimtensor cannot hold (quantized, bit-packed) are known by name and size, so that
// errors can name them, but are not valid for tensors (is_tensor_dtype() is false).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "slimtensor/base/export.h"

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
  bool convertible;  // copy_ converts from and to it (float8 and float4 are refused)
};

// Every c10 code, indexed by code (in the header so that itemsize() and friends inline).
// name, itemsize, tensor dtype, floating, complex, signed, convertible
inline constexpr ScalarTypeInfo kScalarTypes[kNumScalarTypeCodes] = {
    {"uint8", 1, true, false, false, false, true},            // 0
    {"int8", 1, true, false, false, true, true},              // 1
    {"int16", 2, true, false, false, true, true},             // 2
    {"int32", 4, true, false, false, true, true},             // 3
    {"int64", 8, true, false, false, true, true},             // 4
    {"float16", 2, true, true, false, true, true},            // 5
    {"float32", 4, true, true, false, true, true},            // 6
    {"float64", 8, true, true, false, true, true},            // 7
    {"complex32", 4, true, false, true, true, true},          // 8
    {"complex64", 8, true, false, true, true, true},          // 9
    {"complex128", 16, true, false, true, true, true},        // 10
    {"bool", 1, true, false, false, false, true},             // 11
    {"qint8", 1, false, false, false, true, false},           // 12
    {"quint8", 1, false, false, false, false, false},         // 13
    {"qint32", 4, false, false, false, true, false},          // 14
    {"bfloat16", 2, true, true, false, true, true},           // 15
    {"quint4x2", 1, false, false, false, false, false},       // 16
    {"quint2x4", 1, false, false, false, false, false},       // 17
    {"bits1x8", 1, false, false, false, false, false},        // 18
    {"bits2x4", 1, false, false, false, false, false},        // 19
    {"bits4x2", 1, false, false, false, false, false},        // 20
    {"bits8", 1, false, false, false, false, false},          // 21
    {"bits16", 2, false, false, false, false, false},         // 22
    {"float8_e5m2", 1, true, true, false, true, false},       // 23
    {"float8_e4m3fn", 1, true, true, false, true, false},     // 24
    {"float8_e5m2fnuz", 1, true, true, false, true, false},   // 25
    {"float8_e4m3fnuz", 1, true, true, false, true, false},   // 26
    {"uint16", 2, true, false, false, false, true},           // 27
    {"uint32", 4, true, false, false, false, true},           // 28
    {"uint64", 8, true, false, false, false, true},           // 29
    {"uint1", 1, false, false, false, false, false},          // 30
    {"uint2", 1, false, false, false, false, false},          // 31
    {"uint3", 1, false, false, false, false, false},          // 32
    {"uint4", 1, false, false, false, false, false},          // 33
    {"uint5", 1, false, false, false, false, false},          // 34
    {"uint6", 1, false, false, false, false, false},          // 35
    {"uint7", 1, false, false, false, false, false},          // 36
    {"int1", 1, false, false, false, true, false},            // 37
    {"int2", 1, false, false, false, true, false},            // 38
    {"int3", 1, false, false, false, true, false},            // 39
    {"int4", 1, false, false, false, true, false},            // 40
    {"int5", 1, false, false, false, true, false},            // 41
    {"int6", 1, false, false, false, true, false},            // 42
    {"int7", 1, false, false, false, true, false},            // 43
    {"float8_e8m0fnu", 1, true, true, false, false, false},   // 44
    {"float4_e2m1fn_x2", 1, true, true, false, true, false},  // 45
};

// Info for a code; nullptr when the code is not a c10 ScalarType.
SLIMTENSOR_API const ScalarTypeInfo* scalar_type_info(int code) noexcept;
// Info for a valid enum value (every ScalarType that scalar_type_from_code accepted).
inline const ScalarTypeInfo& info(ScalarType t) noexcept { return kScalarTypes[static_cast<int>(t)]; }
// Throws the Error(Value) of scalar_type_from_code for a code it refuses.
[[noreturn]] SLIMTENSOR_API void bad_scalar_type_code(int64_t code, const char* function);
// The ScalarType for a c10 code that can be a tensor dtype; throws Error(Value) otherwise.
inline ScalarType scalar_type_from_code(int64_t code, const char* function) {
  if (__builtin_expect(code < 0 || code >= kNumScalarTypeCodes || !kScalarTypes[code].is_tensor_dtype, 0)) {
    bad_scalar_type_code(code, function);
  }
  return static_cast<ScalarType>(code);
}
// Parses "float32", "float", "half", "bfloat16", ... (torch's names and aliases); throws Error(Type).
SLIMTENSOR_API ScalarType scalar_type_from_name(std::string_view name, const char* function);

inline int64_t itemsize(ScalarType t) noexcept { return info(t).itemsize; }
inline const char* name(ScalarType t) noexcept { return info(t).name; }

}  // namespace slimtensor

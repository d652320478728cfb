// scalar_type.cpp: the table of c10 ScalarType codes, names and sizes, and dtype parsing.
#include "slimtensor/scalar_type.h"

#include <string>

#include "slimtensor/error.h"

namespace slimtensor {
namespace {

// name, itemsize, tensor dtype, floating, complex, signed, convertible
constexpr ScalarTypeInfo kTable[kNumScalarTypeCodes] = {
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

struct Alias {
  const char* name;
  ScalarType type;
};
constexpr Alias kAliases[] = {
    {"float", ScalarType::Float32},   {"double", ScalarType::Float64}, {"half", ScalarType::Float16},
    {"int", ScalarType::Int32},       {"long", ScalarType::Int64},     {"short", ScalarType::Int16},
    {"cfloat", ScalarType::Complex64}, {"cdouble", ScalarType::Complex128}, {"chalf", ScalarType::Complex32},
};

}  // namespace

const ScalarTypeInfo* scalar_type_info(int code) noexcept {
  if (code < 0 || code >= kNumScalarTypeCodes) return nullptr;
  return &kTable[code];
}

const ScalarTypeInfo& info(ScalarType t) noexcept { return kTable[static_cast<int>(t)]; }

ScalarType scalar_type_from_code(int64_t code, const char* function) {
  ST_CHECK(code >= 0 && code < kNumScalarTypeCodes, Value, function, ": expected a c10 ScalarType code in [0, ",
           kNumScalarTypeCodes - 1, "] but got ", code);
  ST_CHECK(kTable[code].is_tensor_dtype, Value, function, ": ScalarType code ", code, " (", kTable[code].name,
           ") is a c10 type slimtensor cannot hold in a tensor; use one of uint8..uint64, int8..int64, "
           "float16, bfloat16, float32, float64, complex32/64/128, bool, float8_*");
  return static_cast<ScalarType>(code);
}

ScalarType scalar_type_from_name(std::string_view name, const char* function) {
  std::string_view n = name;
  if (n.substr(0, 6) == "torch.") n.remove_prefix(6);
  for (int code = 0; code < kNumScalarTypeCodes; ++code) {
    if (kTable[code].is_tensor_dtype && n == kTable[code].name) return static_cast<ScalarType>(code);
  }
  for (const Alias& a : kAliases) {
    if (n == a.name) return a.type;
  }
  fail(ErrorKind::Type, function, ": unknown dtype '", std::string(name),
       "'; expected a name such as 'float32', 'bfloat16', 'int64', 'bool' (see slimtensor.dtypes())");
}

}  // namespace slimtensor

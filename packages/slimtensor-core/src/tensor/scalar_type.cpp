// tensor/scalar_type.cpp: the table of c10 ScalarType codes, names and sizes, and dtype parsing.
#include "slimtensor/tensor/scalar_type.h"

#include <string>

#include "slimtensor/base/error.h"

namespace slimtensor {
namespace {

struct Alias {
  const char* name;
  ScalarType type;
};
constexpr Alias kAliases[] = {
    {"float", ScalarType::Float32},    {"double", ScalarType::Float64},     {"half", ScalarType::Float16},
    {"int", ScalarType::Int32},        {"long", ScalarType::Int64},         {"short", ScalarType::Int16},
    {"cfloat", ScalarType::Complex64}, {"cdouble", ScalarType::Complex128}, {"chalf", ScalarType::Complex32},
};

}  // namespace

const ScalarTypeInfo* scalar_type_info(int code) noexcept {
  if (code < 0 || code >= kNumScalarTypeCodes) return nullptr;
  return &kScalarTypes[code];
}

void bad_scalar_type_code(int64_t code, const char* function) {
  ST_CHECK(code >= 0 && code < kNumScalarTypeCodes, Value, function, ": expected a c10 ScalarType code in [0, ",
           kNumScalarTypeCodes - 1, "] but got ", code);
  fail(ErrorKind::Value, function, ": ScalarType code ", code, " (", kScalarTypes[code].name,
       ") is a c10 type slimtensor cannot hold in a tensor; use one of uint8..uint64, int8..int64, "
       "float16, bfloat16, float32, float64, complex32/64/128, bool, float8_*");
}

ScalarType scalar_type_from_name(std::string_view name, const char* function) {
  std::string_view n = name;
  if (n.substr(0, 6) == "torch.") n.remove_prefix(6);
  for (int code = 0; code < kNumScalarTypeCodes; ++code) {
    if (kScalarTypes[code].is_tensor_dtype && n == kScalarTypes[code].name) return static_cast<ScalarType>(code);
  }
  for (const Alias& a : kAliases) {
    if (n == a.name) return a.type;
  }
  fail(ErrorKind::Type, function, ": unknown dtype '", std::string(name),
       "'; expected a name such as 'float32', 'bfloat16', 'int64', 'bool' (see slimtensor.dtypes())");
}

}  // namespace slimtensor

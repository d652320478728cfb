// slimtensor/copy/scalar.h: a Python number as the core sees it (fill values, item results).
#pragma once

#include <cstdint>

namespace slimtensor {

// `v` as an int64, defined for every double (a plain cast is undefined behaviour for NaN, infinities and
// values outside int64's range): truncated toward zero, NaN gives 0, others saturate. Only the exactness
// of Int scalars reads `i`; for Float and Complex scalars it is informative.
inline int64_t saturating_int64(double v) {
  if (!(v == v)) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v < -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// A value given as a double and, for exactness with 64-bit integers, an int64.
struct Scalar {
  enum class Kind { Bool, Int, Float, Complex } kind = Kind::Float;
  int64_t i = 0;
  double d = 0, imag = 0;
  static Scalar from_bool(bool b) {
    Scalar s;
    s.kind = Kind::Bool;
    s.i = b;
    s.d = b;
    return s;
  }
  static Scalar from_int(int64_t v) {
    Scalar s;
    s.kind = Kind::Int;
    s.i = v;
    s.d = static_cast<double>(v);
    return s;
  }
  static Scalar from_double(double v) {
    Scalar s;
    s.kind = Kind::Float;
    s.d = v;
    s.i = saturating_int64(v);
    return s;
  }
  static Scalar from_complex(double re, double im) {
    Scalar s;
    s.kind = Kind::Complex;
    s.d = re;
    s.imag = im;
    s.i = saturating_int64(re);
    return s;
  }
};

}  // namespace slimtensor

// slimtensor/copy/scalar.h: a Python number as the core sees it (fill values, item results).
#pragma once

#include <cstdint>

namespace slimtensor {

// A value given as a double and, for exactness with 64-bit integers, an int64.
struct Scalar {
  enum class Kind { Bool, Int, Float, Complex } kind = Kind::Float;
  int64_t i = 0;
  double d = 0, imag = 0;
  static Scalar from_bool(bool b) { Scalar s; s.kind = Kind::Bool; s.i = b; s.d = b; return s; }
  static Scalar from_int(int64_t v) { Scalar s; s.kind = Kind::Int; s.i = v; s.d = static_cast<double>(v); return s; }
  static Scalar from_double(double v) { Scalar s; s.kind = Kind::Float; s.d = v; s.i = static_cast<int64_t>(v); return s; }
  static Scalar from_complex(double re, double im) { Scalar s; s.kind = Kind::Complex; s.d = re; s.imag = im; s.i = static_cast<int64_t>(re); return s; }
};

}  // namespace slimtensor

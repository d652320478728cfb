// slimtensor/copy.h: copy_ (strided, broadcasting, dtype-converting, cross-device), fill_, clone.
#pragma once

#include "slimtensor/export.h"
#include "slimtensor/tensor.h"

namespace slimtensor {

// Copies src into dst, broadcasting src to dst's shape and converting dtypes.
// Throws Error(Runtime) when shapes do not broadcast, dst overlaps itself (as after expand), dst and src
// partially overlap, dst is read-only, or a dtype cannot be converted (float8 and float4).
SLIMTENSOR_API void copy_(const Tensor& dst, const Tensor& src);
// Writes `value` (given as a double and, for exactness with 64-bit integers, an int64) into every element.
struct Scalar {
  enum class Kind { Bool, Int, Float, Complex } kind = Kind::Float;
  int64_t i = 0;
  double d = 0, imag = 0;
  static Scalar from_bool(bool b) { Scalar s; s.kind = Kind::Bool; s.i = b; s.d = b; return s; }
  static Scalar from_int(int64_t v) { Scalar s; s.kind = Kind::Int; s.i = v; s.d = static_cast<double>(v); return s; }
  static Scalar from_double(double v) { Scalar s; s.kind = Kind::Float; s.d = v; s.i = static_cast<int64_t>(v); return s; }
  static Scalar from_complex(double re, double im) { Scalar s; s.kind = Kind::Complex; s.d = re; s.imag = im; s.i = static_cast<int64_t>(re); return s; }
};
SLIMTENSOR_API void fill_(const Tensor& dst, const Scalar& value);
// Reads the single element (numel must be 1) as a Scalar of the dtype's kind.
SLIMTENSOR_API Scalar item(const Tensor& self);
// A new tensor with the same data; Preserve keeps dense strides and gives others dense strides in the same
// order (PyTorch's preserve_format).
SLIMTENSOR_API Tensor clone(const Tensor& self, MemoryFormat format = MemoryFormat::Preserve);
// self if it already is contiguous in `format`, else a contiguous copy.
SLIMTENSOR_API Tensor contiguous(const Tensor& self, MemoryFormat format = MemoryFormat::Contiguous);
// self when nothing changes; a copy on `device` with `dtype` otherwise.
SLIMTENSOR_API Tensor to(const Tensor& self, Device device, ScalarType dtype, bool copy = false);

// Whether any two elements of t share memory (PyTorch's internal overlap, decided exactly).
SLIMTENSOR_API bool has_internal_overlap(const Tensor& t);

}  // namespace slimtensor

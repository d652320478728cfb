// copy/fill.cpp: fill_ and its range check of the value (PyTorch's checked_convert).
#include "slimtensor/copy/fill.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "copy/copy_kernels.h"
#include "layout/layout.h"
#include "runtime/device_calls.h"
#include "runtime/parallel.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/runtime/device_registry.h"

namespace slimtensor {
namespace {

bool is_zero(const Scalar& v) {
  return (v.kind != Scalar::Kind::Complex || v.imag == 0) && v.d == 0 && v.i == 0 && !std::signbit(v.d);
}

// PyTorch's checked_convert for fill values: a value the dtype cannot hold is refused, never wrapped.
void check_fill_value(ScalarType type, const Scalar& v) {
  const ScalarTypeInfo& i = info(type);
  ST_CHECK(i.convertible || is_zero(v), Runtime, "fill_(): ", i.name,
           " tensors can only be filled with 0 (no "
           "conversion to ",
           i.name, "); fill a uint8 view of the bytes instead");
  if (type == ScalarType::Bool) return;
  const bool uint64_value = v.kind == Scalar::Kind::Int && v.i < 0 && v.d > 0;  // Python ints >= 2**63
  auto refuse = [&](const char* range) {
    std::ostringstream value;
    if (v.kind == Scalar::Kind::Int) {
      if (uint64_value)
        value << static_cast<uint64_t>(v.i);
      else
        value << v.i;
    } else {
      value << v.d;
      if (v.kind == Scalar::Kind::Complex) value << (v.imag < 0 ? "" : "+") << v.imag << "j";
    }
    fail(ErrorKind::Runtime, "fill_(): value ", value.str(), " cannot be converted to ", i.name, " without overflow (",
         i.name, " holds ", range, ")");
  };
  if (!i.is_floating && !i.is_complex) {  // integers
    if (v.kind == Scalar::Kind::Complex && v.imag != 0) refuse("no imaginary part");
    // The checks below follow c10's overflows<To, From>.
    struct Range {
      long double lo, hi;
      const char* text;
    };
    Range r;
    switch (type) {
      case ScalarType::UInt8: r = {0, 255, "[0, 255]"}; break;
      case ScalarType::Int8: r = {-128, 127, "[-128, 127]"}; break;
      case ScalarType::Int16: r = {-32768, 32767, "[-32768, 32767]"}; break;
      case ScalarType::UInt16: r = {0, 65535, "[0, 65535]"}; break;
      case ScalarType::Int32: r = {-2147483648.0L, 2147483647.0L, "[-2**31, 2**31 - 1]"}; break;
      case ScalarType::UInt32: r = {0, 4294967295.0L, "[0, 2**32 - 1]"}; break;
      case ScalarType::Int64: r = {-9223372036854775808.0L, 9223372036854775807.0L, "[-2**63, 2**63 - 1]"}; break;
      default: r = {0, 18446744073709551615.0L, "[0, 2**64 - 1]"}; break;  // uint64
    }
    long double x;
    if (v.kind == Scalar::Kind::Int) {
      x = uint64_value ? static_cast<long double>(static_cast<uint64_t>(v.i)) : static_cast<long double>(v.i);
    } else {
      if (std::isnan(v.d)) refuse(r.text);
      x = v.d;
    }
    // Unsigned types accept negatives down to -max, which wrap (two's complement), as in PyTorch.
    if (x > r.hi || (r.lo == 0 ? -x > r.hi : x < r.lo)) refuse(r.text);
    return;
  }
  if (i.is_complex) return;  // PyTorch does not range-check complex fills (65520 -> complex32 is inf)
  double max = 0;
  switch (type) {
    case ScalarType::Float16: max = 65504.0; break;
    case ScalarType::BFloat16: max = 3.3895313892515355e38; break;
    case ScalarType::Float32: max = 3.4028234663852886e38; break;
    default: return;  // float64 holds every double
  }
  if (std::isfinite(v.d) && std::fabs(v.d) > max) refuse(max == 65504.0 ? "|x| <= 65504" : "its finite range");
  if (v.kind == Scalar::Kind::Complex && v.imag != 0) refuse("no imaginary part");
}

}  // namespace

// Note [Device fill]
// On a plugin device, the value is converted on the host to one element of dst's dtype (by the rules of
// copies), then: a dense destination (its elements are one byte range from element 0) is filled by the
// plugin's fill with that element as the pattern; any other layout takes copy_ from a CPU scalar, whose
// device paths (Note [Device copy paths]) broadcast it. Without a plugin fill, copy_ uploads the pattern.
void fill_(const Tensor& dst, const Scalar& value) {
  ST_CHECK(dst.defined(), Runtime, "fill_(): the tensor is undefined");
  ST_CHECK(!dst.is_read_only(), Runtime,
           "fill_(): the tensor is read-only (it borrows memory its owner marked "
           "read-only, e.g. a read-only numpy array); fill a copy instead: t = t.clone()");
  check_fill_value(dst.dtype(), value);
  // One element holding the value, converted by the same rules as copies, then broadcast.
  alignas(16) unsigned char buffer[16];
  ScalarType type;
  switch (value.kind) {
    case Scalar::Kind::Bool: {
      bool b = value.i != 0;
      std::memcpy(buffer, &b, 1);
      type = ScalarType::Bool;
      break;
    }
    case Scalar::Kind::Int:
      std::memcpy(buffer, &value.i, 8);
      type = ScalarType::Int64;
      break;
    case Scalar::Kind::Float:
      std::memcpy(buffer, &value.d, 8);
      type = ScalarType::Float64;
      break;
    default: {
      const double c[2] = {value.d, value.imag};
      std::memcpy(buffer, c, 16);
      type = ScalarType::Complex128;
    }
  }
  const bool zero = is_zero(value);
  if (zero && !info(dst.dtype()).convertible) {
    // Types without conversions (float8, float4) take the all-zero bit pattern, through a same-dtype copy.
    // (Decided before the scalar is made: it must carry dst's dtype, or copy_ refuses the conversion.)
    std::memset(buffer, 0, sizeof buffer);
    type = dst.dtype();
  }
  if (zero && dst.device().is_cpu() && dst.is_contiguous() && !dst.is_read_only()) {
    char* p = static_cast<char*>(dst.data_ptr());
    parallel_for(dst.nbytes(), 1 << 20, [p](int64_t b, int64_t e) { std::memset(p + b, 0, e - b); });
    return;
  }
  if (!dst.device().is_cpu() && dst.numel() > 0 &&
      is_non_overlapping_and_dense(dst.sizes(), dst.strides(), dst.ndim())) {
    const DeviceEntry& e = usable_device(dst.device(), "fill_()");
    if (device_calls::can_fill(e)) {  // Note [Device fill]
      alignas(16) unsigned char element[16];
      if (type == dst.dtype()) {
        std::memcpy(element, buffer, static_cast<size_t>(dst.itemsize()));
      } else {
        convert_element(buffer, type, element, dst.dtype());  // the rules of copies (Note [Conversion rules])
      }
      device_calls::fill(e, dst.memory_ref(), static_cast<uint64_t>(dst.nbytes()), element,
                         static_cast<uint32_t>(dst.itemsize()), ST_STREAM_CURRENT, "fill_()");
      return;
    }
  }
  const Tensor scalar = Tensor::make(
      Storage::adopt(StorageImpl::borrow(kCPUDevice, buffer, itemsize(type), nullptr, nullptr, true, "scalar")),
      IntList(), IntList(), 0, type, "fill_");
  copy_(dst, scalar);
}

}  // namespace slimtensor

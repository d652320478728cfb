// src/aoti/scalars.cpp: item_<dtype> (read the one element, converted) and scalar_to_tensor_<dtype> (new 0-d tensors).
//
// Note [item conversions]
// item_<T> reads the element as T when the dtypes match (the fast path: one load). Otherwise the value
// is converted as torch's Scalar would: integers and floats convert to floats; to an integer type a value
// must be finite and in range (torch raises "cannot be converted without overflow", so do we); complex
// values with a non-zero imaginary part only convert to complex.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "aoti/handle.h"
#include "copy/half_bits.h"  // the core's conversions, so item_ rounds exactly as copies do
#include "slimtensor/copy/copy.h"
#include "slimtensor/copy/item.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

template <typename T>
T convert_scalar(const Scalar& s, const char* fn, const char* tname) {
  if (s.kind == Scalar::Kind::Complex && s.imag != 0) {
    fail(ErrorKind::Value, fn, "(): the element is complex (", s.d, "+", s.imag, "j) and cannot be read as ", tname);
  }
  if constexpr (std::is_same_v<T, bool>) {
    return s.kind == Scalar::Kind::Int || s.kind == Scalar::Kind::Bool ? s.i != 0 : s.d != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return s.kind == Scalar::Kind::Int || s.kind == Scalar::Kind::Bool ? static_cast<T>(s.i) : static_cast<T>(s.d);
  } else {
    using L = std::numeric_limits<T>;
    if (s.kind == Scalar::Kind::Int || s.kind == Scalar::Kind::Bool) {
      bool ok = std::is_signed_v<T> ? (s.i >= static_cast<int64_t>(L::min()) &&
                                       (sizeof(T) == 8 || s.i <= static_cast<int64_t>(L::max())))
                                    : (s.i >= 0 && (sizeof(T) == 8 || s.i <= static_cast<int64_t>(L::max())));
      if (!ok) fail(ErrorKind::Value, fn, "(): value ", s.i, " cannot be converted to ", tname, " without overflow");
      return static_cast<T>(s.i);
    }
    double lo = static_cast<double>(L::min()), hi = static_cast<double>(L::max());
    if (!std::isfinite(s.d) || s.d < lo - 1.0 || s.d >= hi + 1.0) {
      fail(ErrorKind::Value, fn, "(): value ", s.d, " cannot be converted to ", tname, " without overflow");
    }
    return static_cast<T>(s.d);
  }
}

template <typename T>
AOTITorchError item_impl(const char* fn, const char* tname, ScalarType same, AtenTensorHandle h, T* ret) {
  AtenTensorOpaque* o = live_opaque(h);
  if (__builtin_expect(o && ret, 1)) {
    const Tensor& t = o->tensor;
    if (t.defined() && t.dtype() == same && t.numel() == 1 && t.device().is_cpu()) {
      std::memcpy(ret, t.data_ptr(), sizeof(T));
      return AOTI_TORCH_SUCCESS;
    }
  }
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(h, fn, "tensor");
    out_arg(ret, fn, "ret_value");
    if (t.numel() != 1) {
      fail(ErrorKind::Value, fn, "(): the tensor must have exactly one element but has ", t.numel());
    }
    *ret = convert_scalar<T>(item(t), fn, tname);
  });
}

template <typename T>
AOTITorchError scalar_impl(const char* fn, ScalarType dtype, T value, AtenTensorHandle* ret) {
  return guarded(fn, [&] {
    out_arg(ret, fn, "ret_new_tensor");
    Tensor t = empty(IntList(), dtype, kCPUDevice);
    std::memcpy(t.data_ptr(), &value, sizeof(T));
    *ret = make_handle(std::move(t), fn);
  });
}

}  // namespace

extern "C" {

#define ST_ITEM(NAME, T, ST)                                                                 \
  AOTITorchError aoti_torch_item_##NAME(AtenTensorHandle tensor, T* ret_value) {             \
    return item_impl<T>("aoti_torch_item_" #NAME, #NAME, ScalarType::ST, tensor, ret_value); \
  }
ST_ITEM(float32, float, Float32)
ST_ITEM(float64, double, Float64)
ST_ITEM(uint8, uint8_t, UInt8)
ST_ITEM(uint16, uint16_t, UInt16)
ST_ITEM(uint32, uint32_t, UInt32)
ST_ITEM(uint64, uint64_t, UInt64)
ST_ITEM(int8, int8_t, Int8)
ST_ITEM(int16, int16_t, Int16)
ST_ITEM(int32, int32_t, Int32)
ST_ITEM(int64, int64_t, Int64)
ST_ITEM(bool, bool, Bool)
#undef ST_ITEM

AOTITorchError aoti_torch_item_float16(AtenTensorHandle tensor, slimtensor_half* ret_value) {
  const char* fn = "aoti_torch_item_float16";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(tensor, fn, "tensor");
    out_arg(ret_value, fn, "ret_value");
    if (t.dtype() == ScalarType::Float16 && t.numel() == 1 && t.device().is_cpu()) {
      std::memcpy(ret_value, t.data_ptr(), 2);
      return;
    }
    float f;
    if (aoti_torch_item_float32(tensor, &f) != AOTI_TORCH_SUCCESS)
      throw Error(ErrorKind::Value, slimtensor_last_error());
    *ret_value = float_to_f16(f);
  });
}

AOTITorchError aoti_torch_item_bfloat16(AtenTensorHandle tensor, slimtensor_bfloat16* ret_value) {
  const char* fn = "aoti_torch_item_bfloat16";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(tensor, fn, "tensor");
    out_arg(ret_value, fn, "ret_value");
    if (t.dtype() == ScalarType::BFloat16 && t.numel() == 1 && t.device().is_cpu()) {
      std::memcpy(ret_value, t.data_ptr(), 2);
      return;
    }
    float f;
    if (aoti_torch_item_float32(tensor, &f) != AOTI_TORCH_SUCCESS)
      throw Error(ErrorKind::Value, slimtensor_last_error());
    *ret_value = float_to_bf16_scalar(f);  // a scalar conversion, as torch's item
  });
}

AOTITorchError aoti_torch_item_complex64(AtenTensorHandle tensor, slimtensor_complex64* ret_value) {
  const char* fn = "aoti_torch_item_complex64";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(tensor, fn, "tensor");
    out_arg(ret_value, fn, "ret_value");
    if (t.numel() != 1) fail(ErrorKind::Value, fn, "(): the tensor must have exactly one element but has ", t.numel());
    Scalar s = item(t);
    if (s.kind == Scalar::Kind::Complex) {
      ret_value->real = static_cast<float>(s.d);
      ret_value->imag = static_cast<float>(s.imag);
    } else {
      ret_value->real = convert_scalar<float>(s, fn, "complex64");
      ret_value->imag = 0;
    }
  });
}

#define ST_SCALAR(NAME, T, ST)                                                                          \
  AOTITorchError aoti_torch_scalar_to_tensor_##NAME(T value, AtenTensorHandle* ret_new_tensor) {        \
    return scalar_impl<T>("aoti_torch_scalar_to_tensor_" #NAME, ScalarType::ST, value, ret_new_tensor); \
  }
ST_SCALAR(float32, float, Float32)
ST_SCALAR(float64, double, Float64)
ST_SCALAR(uint8, uint8_t, UInt8)
ST_SCALAR(uint16, uint16_t, UInt16)
ST_SCALAR(uint32, uint32_t, UInt32)
ST_SCALAR(uint64, uint64_t, UInt64)
ST_SCALAR(int8, int8_t, Int8)
ST_SCALAR(int16, int16_t, Int16)
ST_SCALAR(int32, int32_t, Int32)
ST_SCALAR(int64, int64_t, Int64)
ST_SCALAR(bool, bool, Bool)
ST_SCALAR(complex64, slimtensor_complex64, Complex64)
ST_SCALAR(complex128, slimtensor_complex128, Complex128)
#undef ST_SCALAR

}  // extern "C"

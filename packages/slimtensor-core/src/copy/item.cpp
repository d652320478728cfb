// copy/item.cpp: item, the one element of a tensor read (from any device) and converted to a Scalar.
#include "slimtensor/copy/item.h"

#include <cstring>

#include "copy/copy_kernels.h"
#include "runtime/device_calls.h"
#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"

namespace slimtensor {

Scalar item(const Tensor& self) {
  ST_CHECK(self.defined(), Runtime, "item(): the tensor is undefined");
  ST_CHECK(self.numel() == 1, Runtime, "item(): a tensor with ", self.numel(),
           " elements cannot be converted to a Python number; index it first or use .tolist()");
  alignas(16) unsigned char raw[16];
  const void* src = self.data_ptr();
  if (!self.device().is_cpu()) {
    // Blocking: returns once the element has arrived (Note [Streams] in c/device_plugin.h).
    device_calls::copy_to_host(usable_device(self.device(), "item()"), raw, self.memory_ref(),
                               static_cast<uint64_t>(self.itemsize()), ST_STREAM_CURRENT, 0, "item()");
    src = raw;
  }
  const ScalarTypeInfo& i = info(self.dtype());
  ST_CHECK(i.convertible, Runtime, "item(): ", i.name,
           " values cannot be converted to Python numbers; "
           "view the tensor as uint8 to read its bytes");
  Scalar out;
  if (self.dtype() == ScalarType::Bool) {
    bool b;
    convert_element(src, self.dtype(), &b, ScalarType::Bool);
    return Scalar::from_bool(b);
  }
  if (i.is_complex) {
    double c[2];
    convert_element(src, self.dtype(), c, ScalarType::Complex128);
    return Scalar::from_complex(c[0], c[1]);
  }
  if (i.is_floating) {
    double d;
    convert_element(src, self.dtype(), &d, ScalarType::Float64);
    return Scalar::from_double(d);
  }
  if (self.dtype() == ScalarType::UInt64) {
    uint64_t u;
    std::memcpy(&u, src, 8);
    out = Scalar::from_int(static_cast<int64_t>(u));
    out.d = static_cast<double>(u);  // the binding reads d's sign to recover values >= 2^63
    return out;
  }
  int64_t v;
  convert_element(src, self.dtype(), &v, ScalarType::Int64);
  return Scalar::from_int(v);
}

}  // namespace slimtensor

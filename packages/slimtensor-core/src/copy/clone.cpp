// copy/clone.cpp: clone, contiguous and to: the copies that make a new tensor.
#include "slimtensor/copy/clone.h"

#include <vector>

#include "layout/layout.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/tensor/factories.h"

namespace slimtensor {

Tensor clone(const Tensor& self, MemoryFormat format) {
  ST_CHECK(self.defined(), Runtime, "clone(): the tensor is undefined");
  const int n = self.ndim();
  std::vector<int64_t> strides(static_cast<size_t>(n));
  if (format == MemoryFormat::Preserve && is_non_overlapping_and_dense(self.sizes(), self.strides(), n)) {
    strides.assign(self.strides(), self.strides() + n);
  } else if (format == MemoryFormat::Preserve) {
    infer_dense_strides(self.sizes(), self.strides(), n, strides.data());
  } else {
    ST_CHECK(memory_format_strides(self.sizes(), n, format, strides.data()), Runtime, "clone(): memory format ",
             format == MemoryFormat::ChannelsLast ? "channels_last needs a 4-d" : "channels_last_3d needs a 5-d",
             " tensor but got ", n, " dims");
  }
  Tensor out = empty_strided(IntList(self.sizes(), n), strides, self.dtype(), self.device());
  copy_(out, self);
  return out;
}

Tensor contiguous(const Tensor& self, MemoryFormat format) {
  ST_CHECK(format != MemoryFormat::Preserve, Value,
           "contiguous(): memory_format=preserve_format is not allowed; "
           "use contiguous_format, channels_last or channels_last_3d");
  if (self.is_contiguous(format)) return self;
  return clone(self, format);
}

Tensor to(const Tensor& self, Device device, ScalarType dtype, bool copy, bool non_blocking) {
  // "cuda" is the current device: t.to("cuda") may be t itself. (Only index -1 needs the registry.)
  if (device.index < 0) device = resolve_device(device, "to()");
  if (!copy && self.device() == device && self.dtype() == dtype) return self;
  Tensor out = empty_like(self, dtype, device);
  copy_(out, self, non_blocking);
  return out;
}

}  // namespace slimtensor

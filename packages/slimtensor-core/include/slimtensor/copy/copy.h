// slimtensor/copy/copy.h: copy_ (strided, broadcasting, dtype-converting, cross-device).
#pragma once

#include "slimtensor/base/export.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor {

// Copies src into dst, broadcasting src to dst's shape and converting dtypes.
// Throws Error(Runtime) when shapes do not broadcast, dst overlaps itself (as after expand), dst and src
// partially overlap, dst is read-only, or a dtype cannot be converted (float8 and float4).
// Device copies run on the current stream of the device (Note [Streams] in c/device_plugin.h); with
// non_blocking, a copy between host and device memory may return before it has finished (the plugin is
// passed ST_COPY_NON_BLOCKING and may ignore it): the host memory must then stay alive and untouched until
// the stream is synchronised (slimtensor::streams::synchronize), as with torch. CPU copies ignore it.
SLIMTENSOR_API void copy_(const Tensor& dst, const Tensor& src, bool non_blocking = false);

// Whether any two elements of t share memory (PyTorch's internal overlap, decided exactly).
SLIMTENSOR_API bool has_internal_overlap(const Tensor& t);

}  // namespace slimtensor

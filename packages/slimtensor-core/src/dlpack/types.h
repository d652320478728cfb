// dlpack/types.h: DLPack's dtype and device codes <-> slimtensor's ScalarType and Device.
#pragma once

#include <cstdint>

#include "dlpack/dlpack.h"
#include "slimtensor/base/export.h"
#include "slimtensor/tensor/device.h"
#include "slimtensor/tensor/scalar_type.h"

namespace slimtensor::dlpack {

// The DLPack dtype of t; false when DLPack has no code for it (complex32, float4_e2m1fn_x2, the
// quantized types).
SLIMTENSOR_API bool to_dl_dtype(ScalarType t, DLDataType* out) noexcept;
// The ScalarType of a DLPack dtype; throws Error(Type) naming `function` when slimtensor has none.
SLIMTENSOR_API ScalarType from_dl_dtype(DLDataType d, const char* function);
// The DLDeviceType of d's device (kDLCPU for the CPU, the plugin's declared code otherwise); 0 when the
// device declares none.
SLIMTENSOR_API int32_t dl_device_type(Device d) noexcept;
// The device of a DLPack device: kDLCPU and kDLCUDAHost (pinned host memory) are the CPU; other codes
// belong to the registered plugin that declares them. Throws Error(Buffer) naming `function` otherwise.
SLIMTENSOR_API Device from_dl_device(DLDevice d, const char* function);

}  // namespace slimtensor::dlpack

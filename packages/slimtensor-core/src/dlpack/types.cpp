// dlpack/types.cpp: DLPack's dtype and device codes <-> slimtensor's ScalarType and Device.
#include "dlpack/types.h"

#include <limits>

#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"

namespace slimtensor::dlpack {

bool to_dl_dtype(ScalarType t, DLDataType* out) noexcept {
  const auto bits = static_cast<uint8_t>(itemsize(t) * 8);
  switch (t) {
    case ScalarType::Int8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64: *out = {kDLInt, bits, 1}; return true;
    case ScalarType::UInt8:
    case ScalarType::UInt16:
    case ScalarType::UInt32:
    case ScalarType::UInt64: *out = {kDLUInt, bits, 1}; return true;
    case ScalarType::Float16:
    case ScalarType::Float32:
    case ScalarType::Float64: *out = {kDLFloat, bits, 1}; return true;
    case ScalarType::BFloat16: *out = {kDLBfloat, 16, 1}; return true;
    // DLPack's complex bits are the whole element (complex64 = two float32); complex32 (two float16) has
    // no producer or consumer that agrees on it, so it is not exchanged.
    case ScalarType::Complex64:
    case ScalarType::Complex128: *out = {kDLComplex, bits, 1}; return true;
    case ScalarType::Bool: *out = {kDLBool, 8, 1}; return true;
    case ScalarType::Float8_e4m3fn: *out = {kDLFloat8_e4m3fn, 8, 1}; return true;
    case ScalarType::Float8_e4m3fnuz: *out = {kDLFloat8_e4m3fnuz, 8, 1}; return true;
    case ScalarType::Float8_e5m2: *out = {kDLFloat8_e5m2, 8, 1}; return true;
    case ScalarType::Float8_e5m2fnuz: *out = {kDLFloat8_e5m2fnuz, 8, 1}; return true;
    case ScalarType::Float8_e8m0fnu: *out = {kDLFloat8_e8m0fnu, 8, 1}; return true;
    default: return false;
  }
}

ScalarType from_dl_dtype(DLDataType d, const char* function) {
  if (d.lanes != 1) {
    fail(ErrorKind::Type, call_name(function), ": vector DLPack dtypes (lanes = ", d.lanes,
         ") are not supported; export one element per lane");
  }
  for (int code = 0; code < kNumScalarTypeCodes; ++code) {
    const ScalarTypeInfo* i = scalar_type_info(code);
    DLDataType candidate;
    if (!i || !i->is_tensor_dtype || !to_dl_dtype(static_cast<ScalarType>(code), &candidate)) continue;
    if (candidate.code == d.code && candidate.bits == d.bits) return static_cast<ScalarType>(code);
  }
  fail(ErrorKind::Type, call_name(function), ": unsupported DLPack dtype (code ", int(d.code), ", bits ", int(d.bits),
       ", lanes ", d.lanes,
       "); slimtensor holds bool, (u)int8-64, float16/32/64, bfloat16, "
       "complex64/128 and the float8 types");
}

int32_t dl_device_type(Device d) noexcept {
  if (d.is_cpu()) return kDLCPU;
  const DeviceEntry* e = find_device(d.type);
  return e ? e->dlpack_device_type : 0;
}

Device from_dl_device(DLDevice d, const char* function) {
  if (d.device_type == kDLCPU || d.device_type == kDLCUDAHost) return kCPUDevice;
  if (d.device_id >= 0 && d.device_id <= std::numeric_limits<int16_t>::max()) {
    for (const DeviceEntry* e : registered_devices()) {
      if (e->table && e->dlpack_device_type != 0 && e->dlpack_device_type == d.device_type) {
        return Device{e->type, static_cast<int16_t>(d.device_id)};
      }
    }
  }
  fail(ErrorKind::Buffer, call_name(function), ": DLPack device (", d.device_type, ", ", d.device_id,
       ") is not a device of any registered slimtensor plugin; install the device's plugin (see "
       "slimtensor.devices()) or copy the data to the CPU first");
}

}  // namespace slimtensor::dlpack

// dtypes.h: the c10 ScalarType codes and device type the Metal plugin knows, with itemsizes.
//
// Note [MPS device code]
// The MPS device is c10 DeviceType 13 (not c10's "Metal" = 11). It is written once, here, as kMpsDeviceType;
// the device table, the AOTI shims (aoti_torch_device_type_mps) and every device check use this constant.
#pragma once

#include <cstdint>

namespace slimtensor_metal {

constexpr int32_t kMpsDeviceType = 13;  // c10::DeviceType::MPS (Note [MPS device code])
constexpr int32_t kDLMetal = 8;         // DLPack's kDLMetal

enum Dtype : int32_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt16 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kFloat16 = 5,
  kFloat32 = 6,
  kFloat64 = 7,
  kComplex32 = 8,
  kComplex64 = 9,
  kComplex128 = 10,
  kBool = 11,
  kBFloat16 = 15,
  kUInt16 = 27,
  kUInt32 = 28,
  kUInt64 = 29,
};

// Itemsize of a dtype the copy kernels handle, 0 for any other code.
inline int64_t dtype_itemsize(int32_t code) {
  switch (code) {
    case kUInt8:
    case kInt8:
    case kBool: return 1;
    case kInt16:
    case kFloat16:
    case kBFloat16:
    case kUInt16: return 2;
    case kInt32:
    case kFloat32:
    case kComplex32:
    case kUInt32: return 4;
    case kInt64:
    case kFloat64:
    case kComplex64:
    case kUInt64: return 8;
    case kComplex128: return 16;
    default: return 0;
  }
}

// Metal has no 64-bit float: pairs involving float64/complex128 convert on the host (unified memory,
// after the GPU work on both buffers has finished), every other pair in the Metal kernel.
inline bool dtype_needs_host_convert(int32_t code) { return code == kFloat64 || code == kComplex128; }

}  // namespace slimtensor_metal

// dlpack_abi.h: the DLPack 1.1 C structures, declared here from the published specification.
#pragma once

#include <cstdint>

namespace slimtensor::dlpack {

enum DeviceCode : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3, kMetal = 8, kCUDAManaged = 13 };
enum TypeCode : uint8_t {
  kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kComplex = 5, kBool = 6,
  kFloat8_e4m3fn = 10, kFloat8_e4m3fnuz = 11, kFloat8_e5m2 = 12, kFloat8_e5m2fnuz = 13, kFloat8_e8m0fnu = 14,
  kFloat4_e2m1fn = 17,
};

struct Device { int32_t device_type; int32_t device_id; };
struct DataType { uint8_t code; uint8_t bits; uint16_t lanes; };
struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};
struct Version { uint32_t major; uint32_t minor; };
constexpr uint64_t kFlagReadOnly = 1u << 0;
constexpr uint64_t kFlagIsCopied = 1u << 1;
struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  uint64_t flags;
  Tensor dl_tensor;
};

}  // namespace slimtensor::dlpack

// dlpack/dlpack.h: the DLPack 1.1 C structures (dlpack.h of dmlc/dlpack), declared once for the whole core.
//
// Note [DLPack structures]
// These are the only declarations of DLPack's structures in slimtensor: the Python binding
// (src/python/dlpack.cpp) and the AOTI bridge (src/aoti/dlpack_bridge.cpp) both go through the codec
// (dlpack/codec.h), which is the only code that reads or writes them. Layouts follow the published
// specification field for field (they are an ABI shared with numpy, torch, jax, cupy...); the names are
// the specification's, inside namespace slimtensor::dlpack so they cannot clash with a dlpack.h that a
// plugin or host includes.
#pragma once

#include <cstdint>

namespace slimtensor::dlpack {

// DLDeviceType values slimtensor meets (the specification has more; plugins declare theirs).
enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,  // pinned host memory: readable by the CPU
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
};

// DLDataTypeCode values.
enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
  kDLFloat8_e3m4 = 7,
  kDLFloat8_e4m3 = 8,
  kDLFloat8_e4m3b11fnuz = 9,
  kDLFloat8_e4m3fn = 10,
  kDLFloat8_e4m3fnuz = 11,
  kDLFloat8_e5m2 = 12,
  kDLFloat8_e5m2fnuz = 13,
  kDLFloat8_e8m0fnu = 14,
  kDLFloat6_e2m3fn = 15,
  kDLFloat6_e3m2fn = 16,
  kDLFloat4_e2m1fn = 17,
};

struct DLDevice {
  int32_t device_type;  // DLDeviceType
  int32_t device_id;
};

struct DLDataType {
  uint8_t code;  // DLDataTypeCode
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;  // for device memory possibly an opaque handle; byte_offset then says where the tensor starts
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; NULL means row-major contiguous
  uint64_t byte_offset;
};

// The legacy (unversioned, DLPack < 1.0) managed tensor: capsule name "dltensor".
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

constexpr uint32_t kDLPackMajorVersion = 1;
constexpr uint32_t kDLPackMinorVersion = 1;

constexpr uint64_t kDLPackFlagBitmaskReadOnly = 1ull << 0;
constexpr uint64_t kDLPackFlagBitmaskIsCopied = 1ull << 1;
constexpr uint64_t kDLPackFlagBitmaskIsSubbyteTypePadded = 1ull << 2;

// The versioned managed tensor (DLPack >= 1.0): capsule name "dltensor_versioned".
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

}  // namespace slimtensor::dlpack

// slimtensor/tensor/device.h: a device is a type code (c10 numbering) and an index.
//
// Note [Device codes]
// CPU 0, CUDA 1, MPS 13 and PrivateUse1 20 are c10's codes. A plugin names its device ("hostdev") and
// declares a code (its own c10 code, or 20); the registry maps names to codes. Index -1 means "the
// current device" where an API allows it; parsing "cuda" gives index -1 as c10 does, "cpu" gives 0.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "slimtensor/base/export.h"

namespace slimtensor {

using DeviceType = int16_t;
constexpr DeviceType kCPU = 0;
constexpr DeviceType kCUDA = 1;
constexpr DeviceType kMPS = 13;
constexpr DeviceType kPrivateUse1 = 20;
constexpr int kMaxDeviceTypes = 64;  // codes 0..63; statistics are kept per code

struct Device {
  DeviceType type = kCPU;
  int16_t index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int16_t i) : type(t), index(i) {}
  bool is_cpu() const { return type == kCPU; }
  friend bool operator==(Device a, Device b) { return a.type == b.type && a.index == b.index; }
  friend bool operator!=(Device a, Device b) { return !(a == b); }
};

constexpr Device kCPUDevice{kCPU, 0};

// Parses "cpu", "cpu:0", "cuda", "cuda:12", "mps", or a registered plugin name, optionally ":index".
// Throws Error(Value) naming `function` and the registered devices when the name is unknown or the
// index malformed.
SLIMTENSOR_API Device parse_device(std::string_view text, const char* function = "Device()");
// "cpu", "cuda:1", "hostdev:0": the registry's name for the type, and the index unless it is -1.
SLIMTENSOR_API std::string device_string(Device d);

}  // namespace slimtensor

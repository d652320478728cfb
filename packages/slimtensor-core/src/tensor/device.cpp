// tensor/device.cpp: parsing and printing device strings ("cpu", "cuda:12", plugin names).
#include "slimtensor/tensor/device.h"

#include <string>

#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"

namespace slimtensor {
namespace {

std::string known_names() {
  std::string names;
  for (const DeviceEntry* e : registered_devices()) {
    if (!names.empty()) names += ", ";
    names += "'" + e->name + "'";
  }
  return names;
}

// Built-in names that need no plugin to be parsed (the plugin is needed to use them).
DeviceType builtin_code(std::string_view name) {
  if (name == "cpu") return kCPU;
  if (name == "cuda") return kCUDA;
  if (name == "mps") return kMPS;
  return -1;
}

}  // namespace

Device parse_device(std::string_view text, const char* function) {
  std::string_view name = text;
  int64_t index = -1;
  const size_t colon = text.find(':');
  if (colon != std::string_view::npos) {
    name = text.substr(0, colon);
    std::string_view digits = text.substr(colon + 1);
    bool ok = !digits.empty() && digits.size() <= 4;
    index = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') ok = false;
      index = index * 10 + (c - '0');
    }
    ST_CHECK(ok, Value, function,
             ": expected a device 'type' or 'type:index' with a decimal index in [0, 9999] but "
             "got '",
             std::string(text), "'");
  }
  DeviceType type = builtin_code(name);
  if (type < 0) {
    const DeviceEntry* entry = find_device(std::string(name));
    ST_CHECK(entry != nullptr, Value, function, ": unknown device type '", std::string(name), "' in '",
             std::string(text), "'; registered devices: ", known_names(),
             " (plugins add more: see slimtensor.devices())");
    type = entry->type;
  }
  if (type == kCPU) {
    ST_CHECK(index <= 0, Value, function, ": the CPU has only index 0 but got '", std::string(text), "'");
    index = 0;
  }
  return Device{type, static_cast<int16_t>(index)};
}

std::string device_string(Device d) {
  const DeviceEntry* entry = find_device(d.type);
  std::string name;
  if (entry) {
    name = entry->name;
  } else if (d.type == kCUDA) {
    name = "cuda";
  } else if (d.type == kMPS) {
    name = "mps";
  } else {
    name = "device" + std::to_string(d.type);
  }
  if (d.type == kCPU || d.index < 0) return name;
  return name + ":" + std::to_string(d.index);
}

}  // namespace slimtensor

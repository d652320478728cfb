// slimtensor/runtime/device_registry.h: the devices the core knows (CPU built in, the rest from plugins).
//
// Note [Device registry]
// Entries are appended under a mutex and never removed, so a `const DeviceEntry*` stays valid for the
// life of the process and lookups by code are lock-free reads of a fixed array.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "slimtensor/c/device_plugin.h"
#include "slimtensor/tensor/device.h"
#include "slimtensor/base/export.h"

namespace slimtensor {

struct DeviceEntry {
  std::string name;
  DeviceType type = 0;
  int32_t dlpack_device_type = 0;
  std::string plugin_version;      // empty for the built-in CPU
  const st_device_table* table = nullptr;  // null for the built-in CPU
  std::string unavailable_reason;  // empty when usable
  std::string source;              // "built-in" or the plugin's origin (entry point, path)
};

// The entry for a device code, or nullptr if no device with that code is registered.
SLIMTENSOR_API const DeviceEntry* find_device(DeviceType type) noexcept;
// The entry for a name ("cuda"), or nullptr.
SLIMTENSOR_API const DeviceEntry* find_device(const std::string& name);
// All registered entries, CPU first.
SLIMTENSOR_API std::vector<const DeviceEntry*> registered_devices();
// The entry for `device`, checked usable and with an index in range; throws Error(Runtime) otherwise.
SLIMTENSOR_API const DeviceEntry& usable_device(Device device, const char* function);

// Calls the plugin's init with the core table, checks Note [Plugin ABI], registers the device.
// Throws Error(Runtime) with an actionable message on any mismatch. `source` is shown in `info`.
SLIMTENSOR_API const DeviceEntry& register_device_plugin(st_plugin_init_fn init, const std::string& source);

// Called once, the first time an unknown device name is looked up (the Python layer loads plugins).
SLIMTENSOR_API void set_device_autoload_hook(std::function<void()> hook);

}  // namespace slimtensor

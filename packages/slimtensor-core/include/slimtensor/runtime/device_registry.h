// slimtensor/runtime/device_registry.h: the devices the core knows (CPU built in, the rest from plugins).
//
// Note [Device registry]
// Entries are appended under a mutex and never removed, so a `const DeviceEntry*` stays valid for the
// life of the process and lookups by code are lock-free reads of a fixed array.
//
// Note [Plugin minors in the core]
// A plugin of ABI 1.0 and one of 1.1 fill different functions of st_device_table. Only
// src/runtime/device_calls.{h,cpp} reads the memory, stream and event functions of a table, and it alone
// looks at abi_minor: a 1.0 plugin's memory is addressable and its calls are synchronous there, so the
// rest of the core speaks 1.1 (handles with offsets, streams) to every plugin.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "slimtensor/base/export.h"
#include "slimtensor/c/device_plugin.h"
#include "slimtensor/tensor/device.h"

namespace slimtensor {

struct DeviceEntry {
  std::string name;
  DeviceType type = 0;
  int32_t dlpack_device_type = 0;
  std::string plugin_version;                // empty for the built-in CPU
  const st_device_table* table = nullptr;    // null for the built-in CPU
  uint16_t abi_minor = ST_PLUGIN_ABI_MINOR;  // the plugin's minor (Note [Plugin minors in the core])
  uint32_t memory_flags = ST_DEVICE_MEMORY_ADDRESSABLE | ST_DEVICE_MEMORY_HOST_VISIBLE;  // 1.0: ADDRESSABLE
  std::string unavailable_reason;                                                        // empty when usable
  std::string source;  // "built-in" or the plugin's origin (entry point, path)
};

// The entry for a device code, or nullptr if no device with that code is registered.
SLIMTENSOR_API const DeviceEntry* find_device(DeviceType type) noexcept;
// The entry for a name ("cuda"), or nullptr.
SLIMTENSOR_API const DeviceEntry* find_device(const std::string& name);
// All registered entries, CPU first (a copy, taken under the registry's lock).
SLIMTENSOR_API std::vector<const DeviceEntry*> registered_devices();
// Whether any plugin has registered a device table; lock-free, for per-call paths (from_dlpack) that
// registered_devices()'s lock and copy would slow.
SLIMTENSOR_API bool any_plugin_device() noexcept;
// The entry for `device`, checked usable and with an index in range; throws Error(Runtime) otherwise.
SLIMTENSOR_API const DeviceEntry& usable_device(Device device, const char* function);

// `device` with a concrete index: the CPU is index 0; index -1 ("cuda") is the calling thread's current
// device of that type, as its plugin keeps it (Note [Current device] in c/device_plugin.h). Other indices
// are returned unchecked. Throws Error(Runtime) naming `function` when the type is not registered or the
// plugin cannot say its current device.
SLIMTENSOR_API Device resolve_device(Device device, const char* function);

// Calls the plugin's init with the core table, checks Note [Plugin ABI], registers the device.
// Throws Error(Runtime) with an actionable message on any mismatch. `source` is shown in `info`.
// The capsule path of the Python module and the C entry point slimtensor_register_device_plugin both
// call this.
SLIMTENSOR_API const DeviceEntry& register_device_plugin(st_plugin_init_fn init, const std::string& source);

// Called once, the first time an unknown device name is looked up (the Python layer loads plugins).
SLIMTENSOR_API void set_device_autoload_hook(std::function<void()> hook);

}  // namespace slimtensor

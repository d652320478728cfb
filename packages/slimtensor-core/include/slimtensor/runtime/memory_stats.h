// slimtensor/runtime/memory_stats.h: live and peak memory, storages, tensors and AOTI handles per device type.
//
// Note [Leak counters]
// Every storage, tensor and AOTI handle increments a counter of its device type when it is created and
// decrements it when it is destroyed. Tests take a snapshot, run, and check that the counters return
// to it: that is how "no leaks" is checked, not assumed.
#pragma once

#include <cstdint>

#include "slimtensor/base/export.h"
#include "slimtensor/tensor/device.h"

namespace slimtensor {

struct MemoryStats {
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t live_storages = 0;
  int64_t live_tensors = 0;
  int64_t live_aoti_handles = 0;
  int64_t total_allocations = 0;  // owning storages ever allocated
  // Device memory the plugin holds outside storages (caches, pools), as it reports through the core
  // table's note_device_memory: live and peak.
  int64_t plugin_bytes = 0;
  int64_t plugin_peak_bytes = 0;
};

SLIMTENSOR_API MemoryStats memory_stats(DeviceType type) noexcept;
// The allocator's own statistics of a plugin device (its allocator_stats: "reserved_bytes", ...), one
// emit(user, key, value) each; false when the device has none (the CPU, plugins without the function).
// Index -1 is the current device. Throws Error(Runtime) when the plugin fails.
SLIMTENSOR_API bool allocator_stats(Device device, void (*emit)(void* user, const char* key, int64_t value),
                                    void* user);
// Sets peak_bytes to live_bytes (and plugin_peak_bytes to plugin_bytes) for the device type.
SLIMTENSOR_API void reset_peak_memory(DeviceType type) noexcept;

}  // namespace slimtensor

// slimtensor/runtime/memory_stats.h: live and peak memory, storages, tensors and AOTI handles per device type.
//
// Note [Leak counters]
// Every storage, tensor and AOTI handle increments a counter of its device type when it is created and
// decrements it when it is destroyed. Tests take a snapshot, run, and check that the counters return
// to it: that is how "no leaks" is checked, not assumed.
#pragma once

#include <cstdint>

#include "slimtensor/tensor/device.h"
#include "slimtensor/base/export.h"

namespace slimtensor {

struct MemoryStats {
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t live_storages = 0;
  int64_t live_tensors = 0;
  int64_t live_aoti_handles = 0;
  int64_t total_allocations = 0;  // owning storages ever allocated
};

SLIMTENSOR_API MemoryStats memory_stats(DeviceType type) noexcept;
// Sets peak_bytes to live_bytes for the device type.
SLIMTENSOR_API void reset_peak_memory(DeviceType type) noexcept;

}  // namespace slimtensor

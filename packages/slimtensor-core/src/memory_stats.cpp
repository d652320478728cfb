// memory_stats.cpp: the per-device-type counters of Note [Leak counters].
#include "slimtensor/memory_stats.h"

#include <array>
#include <atomic>

namespace slimtensor {
namespace {

struct alignas(64) Counters {
  std::atomic<int64_t> live_bytes{0};
  std::atomic<int64_t> peak_bytes{0};
  std::atomic<int64_t> live_storages{0};
  std::atomic<int64_t> live_tensors{0};
  std::atomic<int64_t> live_aoti_handles{0};
  std::atomic<int64_t> total_allocations{0};
};

std::array<Counters, kMaxDeviceTypes> g_counters;

Counters& of(DeviceType type) { return g_counters[static_cast<size_t>(type) % kMaxDeviceTypes]; }

}  // namespace

MemoryStats memory_stats(DeviceType type) noexcept {
  const Counters& c = of(type);
  MemoryStats s;
  s.live_bytes = c.live_bytes.load();
  s.peak_bytes = c.peak_bytes.load();
  s.live_storages = c.live_storages.load();
  s.live_tensors = c.live_tensors.load();
  s.live_aoti_handles = c.live_aoti_handles.load();
  s.total_allocations = c.total_allocations.load();
  return s;
}

void reset_peak_memory(DeviceType type) noexcept { of(type).peak_bytes.store(of(type).live_bytes.load()); }

namespace stats {

void storage_created(DeviceType type, int64_t bytes, bool owning) noexcept {
  Counters& c = of(type);
  c.live_storages.fetch_add(1, std::memory_order_relaxed);
  if (!owning) return;
  c.total_allocations.fetch_add(1, std::memory_order_relaxed);
  const int64_t live = c.live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = c.peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !c.peak_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void storage_destroyed(DeviceType type, int64_t bytes, bool owning) noexcept {
  Counters& c = of(type);
  c.live_storages.fetch_sub(1, std::memory_order_relaxed);
  if (owning) c.live_bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

void tensor_created(DeviceType type) noexcept { of(type).live_tensors.fetch_add(1, std::memory_order_relaxed); }
void tensor_destroyed(DeviceType type) noexcept { of(type).live_tensors.fetch_sub(1, std::memory_order_relaxed); }
void aoti_handle_created(DeviceType type) noexcept { of(type).live_aoti_handles.fetch_add(1, std::memory_order_relaxed); }
void aoti_handle_destroyed(DeviceType type) noexcept { of(type).live_aoti_handles.fetch_sub(1, std::memory_order_relaxed); }

}  // namespace stats
}  // namespace slimtensor

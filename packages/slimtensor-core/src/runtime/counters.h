// src/runtime/counters.h: the hot-path side of the leak counters (Note [Leak counters]), inlined into the core.
//
// Note [Per-thread counters]
// Creating a tensor, storage or AOTI handle must cost a few nanoseconds, and a locked read-modify-write
// on a shared cache line costs more than that. So the counts (storages, tensors, handles, allocations)
// live in per-thread blocks that only their thread writes, with a relaxed load and store (no lock
// prefix); memory_stats() sums every block. A count may go negative in one block (a tensor made on one
// thread and freed on another); the sum is exact. When a thread exits, its block is folded into the
// retired block and recycled. Only live and peak bytes stay global atomics, since the peak needs the
// process-wide total at the moment of each allocation.
//
// Internal to libslimtensor: the hot path reads an initial-exec TLS pointer, which only code inside the
// library may do.
#pragma once

#include <atomic>
#include <cstdint>

#include "slimtensor/tensor/device.h"

namespace slimtensor::counters {

enum Count : int { kStorages, kTensors, kHandles, kAllocations, kNumCounts };

struct alignas(64) CountBlock {
  std::atomic<int64_t> value[kNumCounts][kMaxDeviceTypes] = {};
};

struct alignas(64) Bytes {
  std::atomic<int64_t> live{0};
  std::atomic<int64_t> peak{0};
};

// The calling thread's block; null before its first count and once the thread is exiting. A plain
// %fs-relative load (the general-dynamic model would call __tls_get_addr on every count); 8 bytes, well
// inside the static TLS that glibc keeps for libraries loaded with dlopen.
// Clang has no -fno-extern-tls-init: telling it the variable is constant-initialised drops the TLS wrapper.
#if defined(__clang__)
#  define ST_CONSTANT_INIT __attribute__((require_constant_initialization))
#else
#  define ST_CONSTANT_INIT
#endif
extern thread_local CountBlock* t_block
    __attribute__((tls_model("initial-exec"), visibility("hidden"))) ST_CONSTANT_INIT;
extern Bytes g_bytes[kMaxDeviceTypes] __attribute__((visibility("hidden")));
// Device memory plugins hold outside storages, as they report it (st_core_table.note_device_memory).
extern Bytes g_plugin_bytes[kMaxDeviceTypes] __attribute__((visibility("hidden")));

// First count of a thread (registers its block), or a count made while the thread exits.
__attribute__((visibility("hidden"))) void bump_slow(Count c, DeviceType type, int64_t delta) noexcept;

inline size_t slot_of(DeviceType type) noexcept { return static_cast<uint16_t>(type) % kMaxDeviceTypes; }

inline void bump(Count c, DeviceType type, int64_t delta) noexcept {
  if (CountBlock* block = t_block; __builtin_expect(block != nullptr, 1)) {
    std::atomic<int64_t>& slot = block->value[c][slot_of(type)];
    slot.store(slot.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);  // only this thread writes
    return;
  }
  bump_slow(c, type, delta);
}

inline void storage_created(DeviceType type, int64_t bytes, bool owning) noexcept {
  bump(kStorages, type, 1);
  if (!owning) return;
  bump(kAllocations, type, 1);
  Bytes& b = g_bytes[slot_of(type)];
  const int64_t live = b.live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = b.peak.load(std::memory_order_relaxed);
  while (live > peak && !b.peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {}
}

inline void storage_destroyed(DeviceType type, int64_t bytes, bool owning) noexcept {
  bump(kStorages, type, -1);
  if (owning) g_bytes[slot_of(type)].live.fetch_sub(bytes, std::memory_order_relaxed);
}

inline void plugin_memory(DeviceType type, int64_t delta) noexcept {
  Bytes& b = g_plugin_bytes[slot_of(type)];
  const int64_t live = b.live.fetch_add(delta, std::memory_order_relaxed) + delta;
  int64_t peak = b.peak.load(std::memory_order_relaxed);
  while (live > peak && !b.peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {}
}

inline void tensor_created(DeviceType type) noexcept { bump(kTensors, type, 1); }
inline void tensor_destroyed(DeviceType type) noexcept { bump(kTensors, type, -1); }
inline void handle_created(DeviceType type) noexcept { bump(kHandles, type, 1); }
inline void handle_destroyed(DeviceType type) noexcept { bump(kHandles, type, -1); }

}  // namespace slimtensor::counters

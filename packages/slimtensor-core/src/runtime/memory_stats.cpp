// runtime/memory_stats.cpp: the per-device-type counters of Note [Leak counters].
//
// The hot path is inline in src/runtime/counters.h (Note [Per-thread counters]); this file owns the per-thread
// blocks, folds them into the retired block when threads exit, and sums them for memory_stats().
#include "slimtensor/runtime/memory_stats.h"

#include <mutex>
#include <vector>

#include "runtime/counters.h"
#include "runtime/device_calls.h"
#include "slimtensor/runtime/device_registry.h"

namespace slimtensor {
namespace counters {

thread_local CountBlock* t_block = nullptr;
Bytes g_bytes[kMaxDeviceTypes];
Bytes g_plugin_bytes[kMaxDeviceTypes];

namespace {

thread_local bool t_block_gone __attribute__((tls_model("initial-exec"))) = false;  // the thread is exiting

std::mutex g_mutex;
std::vector<CountBlock*>& blocks() {  // every block in use; never destroyed (threads may outlive statics)
  static auto* v = new std::vector<CountBlock*>;
  return *v;
}
std::vector<CountBlock*>& spare() {
  static auto* v = new std::vector<CountBlock*>;
  return *v;
}
CountBlock& retired() {
  static auto* b = new CountBlock;
  return *b;
}

// A thread's block: taken on first use, folded into retired() and recycled when the thread exits.
struct ThreadBlock {
  CountBlock* block;
  ThreadBlock() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (spare().empty()) {
      block = new CountBlock;
    } else {
      block = spare().back();
      spare().pop_back();
    }
    blocks().push_back(block);
  }
  ~ThreadBlock() {
    t_block = nullptr;
    t_block_gone = true;  // counts after this (other thread_local destructors) go to retired() directly
    std::lock_guard<std::mutex> lock(g_mutex);
    for (int c = 0; c < kNumCounts; ++c) {
      for (int d = 0; d < kMaxDeviceTypes; ++d) {
        retired().value[c][d].fetch_add(block->value[c][d].load(std::memory_order_relaxed));
        block->value[c][d].store(0, std::memory_order_relaxed);
      }
    }
    auto& v = blocks();
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] == block) {
        v[i] = v.back();
        v.pop_back();
        break;
      }
    }
    spare().push_back(block);
  }
};

int64_t total(Count c, DeviceType type) {
  const size_t d = slot_of(type);
  std::lock_guard<std::mutex> lock(g_mutex);
  int64_t sum = retired().value[c][d].load(std::memory_order_relaxed);
  for (const CountBlock* b : blocks()) sum += b->value[c][d].load(std::memory_order_relaxed);
  return sum;
}

}  // namespace

void bump_slow(Count c, DeviceType type, int64_t delta) noexcept {
  if (t_block_gone) {
    retired().value[c][slot_of(type)].fetch_add(delta, std::memory_order_relaxed);
    return;
  }
  thread_local ThreadBlock mine;  // registers the block; its destructor retires it at thread exit
  t_block = mine.block;
  bump(c, type, delta);
}

}  // namespace counters

MemoryStats memory_stats(DeviceType type) noexcept {
  using namespace counters;
  MemoryStats s;
  s.live_bytes = g_bytes[slot_of(type)].live.load();
  s.peak_bytes = g_bytes[slot_of(type)].peak.load();
  s.live_storages = total(kStorages, type);
  s.live_tensors = total(kTensors, type);
  s.live_aoti_handles = total(kHandles, type);
  s.total_allocations = total(kAllocations, type);
  s.plugin_bytes = g_plugin_bytes[slot_of(type)].live.load();
  s.plugin_peak_bytes = g_plugin_bytes[slot_of(type)].peak.load();
  return s;
}

bool allocator_stats(Device device, void (*emit)(void*, const char*, int64_t), void* user) {
  if (device.is_cpu()) return false;
  const char* fn = "memory_stats()";
  device = resolve_device(device, fn);
  return device_calls::allocator_stats(usable_device(device, fn), device.index, emit, user, fn);
}

void reset_peak_memory(DeviceType type) noexcept {
  counters::Bytes& b = counters::g_bytes[counters::slot_of(type)];
  b.peak.store(b.live.load());
  counters::Bytes& p = counters::g_plugin_bytes[counters::slot_of(type)];
  p.peak.store(p.live.load());
}

}  // namespace slimtensor

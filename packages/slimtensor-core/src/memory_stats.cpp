// memory_stats.cpp: the per-device-type counters of Note [Leak counters].
//
// Note [Per-thread counters]
// Creating a tensor, storage or AOTI handle must cost a few nanoseconds, and a locked read-modify-write
// on a shared cache line costs more than that. So the counts (storages, tensors, handles, allocations)
// live in per-thread blocks that only their thread writes, with a relaxed load and store (no lock
// prefix); memory_stats() sums every block. A count may go negative in one block (a tensor made on one
// thread and freed on another); the sum is exact. When a thread exits, its block is folded into the
// retired block and recycled. Only live and peak bytes stay global atomics, since the peak needs the
// process-wide total at the moment of each allocation.
#include "slimtensor/memory_stats.h"

#include <array>
#include <atomic>
#include <mutex>
#include <vector>

namespace slimtensor {
namespace {

enum Count { kStorages, kTensors, kHandles, kAllocations, kNumCounts };

struct alignas(64) CountBlock {
  std::atomic<int64_t> value[kNumCounts][kMaxDeviceTypes] = {};
};

struct alignas(64) Bytes {
  std::atomic<int64_t> live{0};
  std::atomic<int64_t> peak{0};
};

std::array<Bytes, kMaxDeviceTypes> g_bytes;

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

// The calling thread's block (see bump()).
thread_local CountBlock* t_block __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_block_gone __attribute__((tls_model("initial-exec"))) = false;  // the thread is exiting

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

// The hot path reads one initial-exec TLS pointer (a plain %fs-relative load; the general-dynamic model
// would call __tls_get_addr on every count). It is 8 bytes, well inside the static TLS that glibc keeps
// for libraries loaded with dlopen. The ThreadBlock that owns it is touched once per thread.
__attribute__((noinline)) CountBlock* first_use() {
  thread_local ThreadBlock mine;  // registers the block; its destructor retires it at thread exit
  t_block = mine.block;
  return t_block;
}

inline void bump(Count c, DeviceType type, int64_t delta) noexcept {
  if (__builtin_expect(t_block_gone, 0)) {
    retired().value[c][static_cast<size_t>(type) % kMaxDeviceTypes].fetch_add(delta, std::memory_order_relaxed);
    return;
  }
  CountBlock* block = t_block ? t_block : first_use();
  std::atomic<int64_t>& slot = block->value[c][static_cast<size_t>(type) % kMaxDeviceTypes];
  slot.store(slot.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);  // only this thread writes
}

int64_t total(Count c, DeviceType type) {
  const size_t d = static_cast<size_t>(type) % kMaxDeviceTypes;
  std::lock_guard<std::mutex> lock(g_mutex);
  int64_t sum = retired().value[c][d].load(std::memory_order_relaxed);
  for (const CountBlock* b : blocks()) sum += b->value[c][d].load(std::memory_order_relaxed);
  return sum;
}

Bytes& bytes_of(DeviceType type) { return g_bytes[static_cast<size_t>(type) % kMaxDeviceTypes]; }

}  // namespace

MemoryStats memory_stats(DeviceType type) noexcept {
  MemoryStats s;
  s.live_bytes = bytes_of(type).live.load();
  s.peak_bytes = bytes_of(type).peak.load();
  s.live_storages = total(kStorages, type);
  s.live_tensors = total(kTensors, type);
  s.live_aoti_handles = total(kHandles, type);
  s.total_allocations = total(kAllocations, type);
  return s;
}

void reset_peak_memory(DeviceType type) noexcept { bytes_of(type).peak.store(bytes_of(type).live.load()); }

namespace stats {

void storage_created(DeviceType type, int64_t bytes, bool owning) noexcept {
  bump(kStorages, type, 1);
  if (!owning) return;
  bump(kAllocations, type, 1);
  Bytes& b = bytes_of(type);
  const int64_t live = b.live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = b.peak.load(std::memory_order_relaxed);
  while (live > peak && !b.peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void storage_destroyed(DeviceType type, int64_t bytes, bool owning) noexcept {
  bump(kStorages, type, -1);
  if (owning) bytes_of(type).live.fetch_sub(bytes, std::memory_order_relaxed);
}

void tensor_created(DeviceType type) noexcept { bump(kTensors, type, 1); }
void tensor_destroyed(DeviceType type) noexcept { bump(kTensors, type, -1); }
void aoti_handle_created(DeviceType type) noexcept { bump(kHandles, type, 1); }
void aoti_handle_destroyed(DeviceType type) noexcept { bump(kHandles, type, -1); }

}  // namespace stats
}  // namespace slimtensor

// caching_allocator.h: the stream-ordered caching allocator's policy (pools, splitting, reuse rules, stats).
//
// Note [Stream-ordered reuse]
// A block is cached for the stream it was allocated on and handed again only to requests on that same
// stream: work queued later on that stream runs after the work that used the block, so no wait is needed.
// A block used on other streams (record_stream, or freed on a stream other than its own) is not cached
// when freed: an event is recorded on each of those streams, and the block joins its pool only once all
// of them have completed (checked at every allocation, without blocking). So no block is ever handed to
// work that could run before the work that last used it.
//
// Note [Pools and splitting]
// Requests are rounded up to 512 bytes. Those of at most 1 MiB come from the small pool, carved out of
// 2 MiB segments; larger ones from the large pool, out of segments of large_segment bytes (20 MiB) for
// requests below half of that, else exactly the rounded size (rounded to 2 MiB). A free block bigger than
// the request is split when the rest is worth keeping (small pool: >= 512 B; large pool: > 1 MiB, and
// never for a request of max_split_size or more); freed neighbours within a segment merge again. A segment is
// given back (raw_free) only by empty_cache() or under memory pressure, and only when wholly free.
//
// Note [Out of memory]
// When raw_malloc reports out-of-memory, the allocator waits for pending frees, gives back every wholly
// free segment, and retries once. If that fails too it reports out-of-memory with the size requested and
// what is reserved and allocated, and stays usable: no state changed except the released cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "alloc_config.h"
#include "backend.h"

namespace slimtensor_cuda {

inline constexpr size_t kMinBlockSize = 512;           // rounding unit and smallest block
inline constexpr size_t kSmallSize = size_t{1} << 20;  // largest request of the small pool
inline constexpr size_t kSmallSegment = size_t{2} << 20;
inline constexpr size_t kRoundLarge = size_t{2} << 20;  // large segments are multiples of this

struct AllocatorStats {
  int64_t allocated_bytes = 0;  // in blocks handed out (rounded sizes)
  int64_t requested_bytes = 0;  // what callers asked for
  int64_t reserved_bytes = 0;   // in segments from raw_malloc
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t active_blocks = 0;        // handed out, not yet freed
  int64_t pending_free_blocks = 0;  // freed, waiting for other streams' events
  int64_t cached_bytes = 0;         // in free blocks of the pools
  int64_t segments = 0;
  int64_t raw_mallocs = 0;
  int64_t raw_frees = 0;
  int64_t cache_hits = 0;    // requests served from a cached block
  int64_t cache_misses = 0;  // requests that needed raw_malloc
  int64_t splits = 0;
  int64_t merges = 0;
  int64_t ooms = 0;                // raw_malloc out-of-memory reports (before and after the retry)
  int64_t alloc_retries = 0;       // retries after freeing the cache
  int64_t failed_allocations = 0;  // requests that failed
  int64_t lost_blocks = 0;         // blocks kept out of use because an event could not be recorded
};

enum class AllocStatus { Ok = 0, OutOfMemory = 1, Error = 2 };

// The allocator of one device. Thread-safe (one mutex).
class DeviceCachingAllocator {
 public:
  DeviceCachingAllocator(int device, AllocatorBackend* backend, const AllocatorConfig& config,
                         AllocatorObserver* observer = nullptr);
  // Gives every cached segment back. Blocks still handed out are not freed (their owners hold them).
  ~DeviceCachingAllocator();
  DeviceCachingAllocator(const DeviceCachingAllocator&) = delete;
  DeviceCachingAllocator& operator=(const DeviceCachingAllocator&) = delete;

  // bytes > 0. On failure *error says why (out of memory: the size, reserved and allocated bytes).
  AllocStatus allocate(size_t bytes, void* stream, void** ptr, std::string* error);
  // Frees a block, stream-ordered after the work queued on `stream` (Note [Stream-ordered reuse]).
  // Returns false (with *error) for a pointer this allocator did not hand out.
  bool free(void* ptr, void* stream, std::string* error);
  // The block will not be reused before the work queued so far on `stream` has finished.
  bool record_stream(void* ptr, void* stream, std::string* error);
  // Waits for pending frees and gives back every wholly free segment. Returns false if an event failed.
  bool empty_cache(std::string* error);
  AllocatorStats stats() const;
  // Bytes of the blocks handed out now that were allocated for `stream` (rounded sizes; for tests that
  // check which stream work was ordered on, and memory_summary). Linear in the live blocks.
  int64_t allocated_bytes_on(const void* stream) const;
  void reset_peak_stats();
  // The rounded size of an allocated block, or 0 (for tests and memory_summary).
  size_t block_size(const void* ptr) const;
  int device() const { return device_; }
  const AllocatorConfig& config() const { return config_; }

  static size_t round_size(size_t bytes);  // 0 when rounding would overflow

 private:
  struct Block;
  struct BlockLess {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BlockLess>;
  enum class State : uint8_t { Free, Allocated, Pending };
  struct Block {
    void* stream = nullptr;
    size_t size = 0;
    size_t requested = 0;
    char* ptr = nullptr;
    Block* prev = nullptr;  // neighbours within the segment
    Block* next = nullptr;
    bool small = false;
    State state = State::Free;
    int pending_events = 0;
    std::vector<void*> stream_uses;  // other streams that used it (record_stream)
  };
  struct PendingEvent {
    void* event;
    Block* block;
  };

  Pool& pool_for(bool small) { return small ? small_pool_ : large_pool_; }
  size_t segment_size(size_t rounded) const;
  Block* take_free_block(bool small, size_t rounded, void* stream);
  bool should_split(const Block* b, size_t rounded) const;
  void free_block(Block* b);                         // into its pool, merging neighbours
  void process_events();                             // pending -> pools, without blocking
  bool synchronize_and_release(std::string* error);  // under the lock
  void release_segment(Block* b);                    // a wholly free segment, out of its pool
  void update_peaks();
  std::string describe_usage() const;

  const int device_;
  AllocatorBackend* const backend_;
  const AllocatorConfig config_;
  AllocatorObserver* const observer_;
  mutable std::mutex mutex_;
  Pool small_pool_, large_pool_;
  std::unordered_map<const void*, Block*> allocated_;
  std::deque<PendingEvent> pending_;
  AllocatorStats stats_;
};

// Human-readable byte count: "1.50 GiB", "512 B".
std::string format_bytes(int64_t bytes);

}  // namespace slimtensor_cuda

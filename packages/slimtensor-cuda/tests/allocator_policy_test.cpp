// allocator_policy_test.cpp: one test per rule of the caching allocator, run against the host-memory
// test double (Note [Host-memory test double]); driven by tests/cuda/test_allocator_policy.py.
//
// Usage: allocator_policy_test --list | <test name> | (no argument: all). Exit status 0 when all pass.
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "allocator/caching_allocator.h"
#include "host_memory_backend.h"

using namespace slimtensor_cuda;
using slimtensor_cuda::testing::HostMemoryBackend;
using slimtensor_cuda::testing::stream_id;

namespace {

constexpr size_t MiB = size_t{1} << 20;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (!(cond)) throw Failure(std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " #cond); \
  } while (0)
#define CHECK_EQ(a, b)                                                                              \
  do {                                                                                              \
    const auto _a = (a);                                                                            \
    const auto _b = (b);                                                                            \
    if (!(_a == _b))                                                                                \
      throw Failure(std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " #a " == " #b " (" + \
                    std::to_string(_a) + " vs " + std::to_string(_b) + ")");                        \
  } while (0)

void* S1 = stream_id(0x11);
void* S2 = stream_id(0x22);

void* must_alloc(DeviceCachingAllocator& a, size_t n, void* s) {
  void* p = nullptr;
  std::string err;
  const AllocStatus st = a.allocate(n, s, &p, &err);
  if (st != AllocStatus::Ok) throw Failure("allocate(" + std::to_string(n) + ") failed: " + err);
  CHECK(p != nullptr);
  return p;
}
void must_free(DeviceCachingAllocator& a, void* p, void* s) {
  std::string err;
  if (!a.free(p, s, &err)) throw Failure("free failed: " + err);
}

AllocatorConfig cfg(const char* text) {
  AllocatorConfig c;
  std::string err;
  if (!parse_allocator_config(text, &c, &err)) throw Failure("config: " + err);
  return c;
}

// ---- rounding and pools --------------------------------------------------------------------------
void rounding() {
  CHECK_EQ(DeviceCachingAllocator::round_size(1), size_t{512});
  CHECK_EQ(DeviceCachingAllocator::round_size(512), size_t{512});
  CHECK_EQ(DeviceCachingAllocator::round_size(513), size_t{1024});
  CHECK_EQ(DeviceCachingAllocator::round_size(SIZE_MAX), size_t{0});  // overflow reported, not wrapped
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 1, S1);
  CHECK_EQ(a.block_size(p), size_t{512});
  CHECK_EQ(a.stats().allocated_bytes, int64_t{512});
  CHECK_EQ(a.stats().requested_bytes, int64_t{1});
  must_free(a, p, S1);
}

void huge_request_is_out_of_memory() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  for (size_t n : {SIZE_MAX, SIZE_MAX - 100, size_t{1} << 62}) {
    void* p = nullptr;
    std::string err;
    CHECK(a.allocate(n, S1, &p, &err) == AllocStatus::OutOfMemory);
    CHECK(p == nullptr);
    CHECK(!err.empty());
  }
  void* p = nullptr;
  std::string err;
  CHECK(a.allocate(0, S1, &p, &err) == AllocStatus::Error);
  CHECK(err.find("0 bytes") != std::string::npos);
}

void small_pool_carves_2mib_segments() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 1000, S1);
  AllocatorStats s = a.stats();
  CHECK_EQ(s.raw_mallocs, int64_t{1});
  CHECK_EQ(s.reserved_bytes, int64_t(2 * MiB));
  CHECK_EQ(s.splits, int64_t{1});
  void* q = must_alloc(a, 4096, S1);  // from the rest of the same segment
  s = a.stats();
  CHECK_EQ(s.raw_mallocs, int64_t{1});
  CHECK_EQ(s.cache_hits, int64_t{1});
  CHECK(static_cast<char*>(q) == static_cast<char*>(p) + 1024);
  void* r = must_alloc(a, MiB, S1);  // the largest small request still fits the segment
  CHECK_EQ(a.stats().raw_mallocs, int64_t{1});
  must_free(a, p, S1);
  must_free(a, q, S1);
  must_free(a, r, S1);
  CHECK_EQ(a.stats().cached_bytes, int64_t(2 * MiB));
}

void large_pool_segment_sizes() {
  HostMemoryBackend be(256 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, MiB + 1, S1);  // just above the small limit: a 20 MiB segment
  CHECK_EQ(a.stats().reserved_bytes, int64_t(20 * MiB));
  void* q = must_alloc(a, 15 * MiB + 7, S1);  // served from the rest of that segment
  CHECK_EQ(a.stats().reserved_bytes, int64_t(20 * MiB));
  CHECK(static_cast<char*>(q) == static_cast<char*>(p) + DeviceCachingAllocator::round_size(MiB + 1));
  void* r = must_alloc(a, 25 * MiB + 7, S1);  // >= 10 MiB: its own segment, rounded to 2 MiB
  CHECK_EQ(a.stats().reserved_bytes, int64_t(46 * MiB));
  CHECK_EQ(a.block_size(r), size_t(26 * MiB));  // the rest (under 1 MiB) is not worth splitting off
  must_free(a, r, S1);
  must_free(a, p, S1);
  must_free(a, q, S1);
}

void pools_are_separate() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* big = must_alloc(a, 4 * MiB, S1);
  must_free(a, big, S1);
  const int64_t mallocs = a.stats().raw_mallocs;
  void* small = must_alloc(a, 1024, S1);  // a cached large block is not used for a small request
  CHECK_EQ(a.stats().raw_mallocs, mallocs + 1);
  must_free(a, small, S1);
}

// ---- stream-ordered reuse ------------------------------------------------------------------------
void reuse_on_the_freeing_stream() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 3 * MiB, S1);
  be.enqueue(S1);  // work using p is still queued: same-stream reuse needs no wait
  must_free(a, p, S1);
  void* q = must_alloc(a, 3 * MiB, S1);
  CHECK(q == p);
  CHECK_EQ(a.stats().cache_hits, int64_t{1});
  CHECK_EQ(a.stats().raw_mallocs, int64_t{1});
  must_free(a, q, S1);
}

void no_reuse_on_another_stream() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 3 * MiB, S1);
  must_free(a, p, S1);
  void* q = must_alloc(a, 3 * MiB, S2);
  CHECK(q != p);
  CHECK_EQ(a.stats().raw_mallocs, int64_t{2});
  must_free(a, q, S2);
}

void record_stream_delays_reuse_until_done() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 3 * MiB, S1);
  std::string err;
  CHECK(a.record_stream(p, S2, &err));
  be.enqueue(S2);  // S2 still reads p
  must_free(a, p, S1);
  CHECK_EQ(a.stats().pending_free_blocks, int64_t{1});
  void* q = must_alloc(a, 3 * MiB, S1);  // must not get p while S2's work is queued
  CHECK(q != p);
  must_free(a, q, S1);
  be.complete(S2);
  void* r = must_alloc(a, 3 * MiB, S1);  // S2 done: p is back in S1's pool (best fit: the same size)
  CHECK_EQ(a.stats().pending_free_blocks, int64_t{0});
  CHECK(r == p || r == q);
  void* t = must_alloc(a, 3 * MiB, S1);
  CHECK((r == p && t == q) || (r == q && t == p));
  CHECK_EQ(be.live_events(), size_t{0});  // every event destroyed once processed
  must_free(a, r, S1);
  must_free(a, t, S1);
}

void free_on_other_stream_counts_as_use() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 3 * MiB, S1);
  be.enqueue(S2);
  must_free(a, p, S2);  // last used on S2
  void* q = must_alloc(a, 3 * MiB, S1);
  CHECK(q != p);
  CHECK_EQ(a.stats().pending_free_blocks, int64_t{1});
  be.complete(S2);
  must_free(a, q, S1);
  void* r = must_alloc(a, 3 * MiB, S1);  // pending frees are processed at the next allocation
  CHECK_EQ(a.stats().pending_free_blocks, int64_t{0});
  CHECK(r == p || r == q);
  must_free(a, r, S1);
}

void record_stream_on_own_stream_is_free() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 3 * MiB, S1);
  std::string err;
  CHECK(a.record_stream(p, S1, &err));
  must_free(a, p, S1);
  CHECK_EQ(a.stats().pending_free_blocks, int64_t{0});
  CHECK_EQ(be.events_created, 0);
  CHECK(must_alloc(a, 3 * MiB, S1) == p);
}

void record_stream_unknown_pointer() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  int x = 0;
  std::string err;
  CHECK(!a.record_stream(&x, S2, &err));
  CHECK(err.find("not a live allocation") != std::string::npos);
}

void event_failure_keeps_block_out_of_use() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 3 * MiB, S1);
  std::string err;
  CHECK(a.record_stream(p, S2, &err));
  be.fail_events = true;
  CHECK(a.free(p, S1, &err));  // free never fails ...
  CHECK(err.find("kept out of use") != std::string::npos);  // ... but says what happened
  be.fail_events = false;
  CHECK_EQ(a.stats().lost_blocks, int64_t{1});
  be.complete(S2);
  CHECK(must_alloc(a, 3 * MiB, S1) != p);
}

// ---- splitting and merging -----------------------------------------------------------------------
void split_and_merge_neighbours() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* x = must_alloc(a, 4096, S1);
  void* y = must_alloc(a, 4096, S1);
  void* z = must_alloc(a, 4096, S1);
  CHECK(static_cast<char*>(y) == static_cast<char*>(x) + 4096);
  CHECK_EQ(a.stats().splits, int64_t{3});
  must_free(a, y, S1);
  CHECK_EQ(a.stats().merges, int64_t{0});  // y's neighbours are both in use
  must_free(a, x, S1);
  CHECK_EQ(a.stats().merges, int64_t{1});  // x + y
  must_free(a, z, S1);
  CHECK_EQ(a.stats().merges, int64_t{3});  // (x+y) + z + rest of the segment
  // The whole segment is one free block again: an 8 KiB request starts at the segment's start.
  void* w = must_alloc(a, 8192, S1);
  CHECK(w == x);
  must_free(a, w, S1);
  std::string err;
  CHECK(a.empty_cache(&err));
  CHECK_EQ(a.stats().reserved_bytes, int64_t{0});
  CHECK_EQ(be.bad_frees, 0);
  CHECK_EQ(be.used(), size_t{0});
}

void large_block_split_needs_more_than_1mib_left() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 12 * MiB, S1);  // 12 MiB segment, exact
  must_free(a, p, S1);
  const int64_t splits = a.stats().splits;
  void* q = must_alloc(a, 11 * MiB + 512, S1);  // rest just under 1 MiB: not split
  CHECK_EQ(a.stats().splits, splits);
  CHECK_EQ(a.block_size(q), size_t(12 * MiB));
  must_free(a, q, S1);
  void* r = must_alloc(a, 10 * MiB, S1);  // rest 2 MiB: split
  CHECK_EQ(a.stats().splits, splits + 1);
  CHECK_EQ(a.block_size(r), size_t(10 * MiB));
  must_free(a, r, S1);
}

void max_split_size_limits_oversize_blocks() {
  HostMemoryBackend be(128 * MiB);
  DeviceCachingAllocator a(0, &be, cfg("max_split_size_mb:4"));
  void* big = must_alloc(a, 12 * MiB, S1);  // its own 12 MiB segment
  must_free(a, big, S1);
  const int64_t splits = a.stats().splits;
  void* q = must_alloc(a, 3 * MiB, S1);  // below the limit: the cached 12 MiB block is not carved up
  CHECK(q != big);
  void* r = must_alloc(a, 6 * MiB, S1);  // above the limit: takes the oversize block whole, unsplit
  CHECK(r == big);
  CHECK_EQ(a.block_size(r), size_t(12 * MiB));
  CHECK_EQ(a.stats().splits, splits + 1);  // only q's 20 MiB segment was split
  must_free(a, q, S1);
  must_free(a, r, S1);
}

// ---- out of memory -------------------------------------------------------------------------------
void oom_frees_cache_and_retries_once() {
  HostMemoryBackend be(24 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 16 * MiB, S1);
  must_free(a, p, S1);  // 16 MiB cached
  void* q = must_alloc(a, 20 * MiB, S1);  // fits only once the cache is given back
  const AllocatorStats s = a.stats();
  CHECK_EQ(s.raw_mallocs, int64_t{2});
  CHECK_EQ(s.raw_frees, int64_t{1});
  CHECK_EQ(s.ooms, int64_t{1});
  CHECK_EQ(s.alloc_retries, int64_t{1});
  CHECK_EQ(s.reserved_bytes, int64_t(20 * MiB));
  CHECK_EQ(be.malloc_calls, 3);  // 16, 20 (refused), 20
  must_free(a, q, S1);
}

void oom_waits_for_pending_frees() {
  HostMemoryBackend be(24 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 16 * MiB, S1);
  std::string err;
  CHECK(a.record_stream(p, S2, &err));
  be.enqueue(S2);
  must_free(a, p, S1);  // pending on S2
  void* q = must_alloc(a, 20 * MiB, S1);
  CHECK(q != nullptr);
  CHECK(be.event_syncs >= 1);  // the retry waited for S2 instead of failing
  CHECK_EQ(a.stats().pending_free_blocks, int64_t{0});
  must_free(a, q, S1);
}

void oom_fails_cleanly_and_stays_usable() {
  HostMemoryBackend be(24 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* keep = must_alloc(a, 1024, S1);
  void* p = nullptr;
  std::string err;
  CHECK(a.allocate(32 * MiB, S1, &p, &err) == AllocStatus::OutOfMemory);
  CHECK(p == nullptr);
  CHECK(err.find("32.00 MiB") != std::string::npos);   // the size requested
  CHECK(err.find("2.00 MiB reserved") != std::string::npos);  // what is reserved
  CHECK(err.find("1.00 KiB is allocated") != std::string::npos);
  CHECK(err.find("SLIMTENSOR_CUDA_ALLOC_CONF") != std::string::npos);
  CHECK_EQ(a.stats().failed_allocations, int64_t{1});
  CHECK_EQ(a.stats().allocated_bytes, int64_t{1024});
  void* q = must_alloc(a, 2 * MiB, S1);  // still usable
  must_free(a, q, S1);
  must_free(a, keep, S1);
}

void backend_error_is_not_oom() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  be.fail_next_malloc_with_error = true;
  void* p = nullptr;
  std::string err;
  CHECK(a.allocate(4096, S1, &p, &err) == AllocStatus::Error);
  CHECK(err.find("injected backend error") != std::string::npos);
  CHECK_EQ(a.stats().alloc_retries, int64_t{0});
  must_free(a, must_alloc(a, 4096, S1), S1);
}

// ---- statistics, empty_cache, configuration ------------------------------------------------------
void statistics_and_peaks() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 3 * MiB, S1);
  void* q = must_alloc(a, 1000, S1);
  AllocatorStats s = a.stats();
  CHECK_EQ(s.allocated_bytes, int64_t(3 * MiB + 1024));
  CHECK_EQ(s.requested_bytes, int64_t(3 * MiB + 1000));
  CHECK_EQ(s.reserved_bytes, int64_t(22 * MiB));
  CHECK_EQ(s.active_blocks, int64_t{2});
  CHECK_EQ(s.segments, int64_t{2});
  must_free(a, p, S1);
  s = a.stats();
  CHECK_EQ(s.allocated_bytes, int64_t{1024});
  CHECK_EQ(s.peak_allocated_bytes, int64_t(3 * MiB + 1024));
  CHECK_EQ(s.cached_bytes, int64_t(22 * MiB - 1024));
  a.reset_peak_stats();
  CHECK_EQ(a.stats().peak_allocated_bytes, int64_t{1024});
  must_free(a, q, S1);
  CHECK_EQ(a.stats().allocated_bytes, int64_t{0});
  CHECK_EQ(a.stats().requested_bytes, int64_t{0});
}

void empty_cache_keeps_segments_in_use() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 1000, S1);   // segment A (small), in use
  void* q = must_alloc(a, 3 * MiB, S1);  // segment B (large)
  must_free(a, q, S1);
  std::string err;
  CHECK(a.empty_cache(&err));
  CHECK_EQ(a.stats().reserved_bytes, int64_t(2 * MiB));  // only B went back
  CHECK_EQ(a.stats().raw_frees, int64_t{1});
  must_free(a, p, S1);
  CHECK(a.empty_cache(&err));
  CHECK_EQ(a.stats().reserved_bytes, int64_t{0});
  CHECK_EQ(be.used(), size_t{0});
  CHECK_EQ(be.bad_frees, 0);
}

void double_free_is_an_error() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  void* p = must_alloc(a, 4096, S1);
  must_free(a, p, S1);
  std::string err;
  CHECK(!a.free(p, S1, &err));
  CHECK(err.find("double free") != std::string::npos);
  int x;
  CHECK(!a.free(&x, S1, &err));
  CHECK(!a.free(nullptr, S1, &err));
}

void caching_off_gives_everything_back() {
  HostMemoryBackend be(64 * MiB);
  DeviceCachingAllocator a(0, &be, cfg("caching:0"));
  void* p = must_alloc(a, 4096, S1);
  CHECK_EQ(a.stats().reserved_bytes, int64_t{4096});
  must_free(a, p, S1);
  CHECK_EQ(a.stats().reserved_bytes, int64_t{0});
  CHECK_EQ(be.used(), size_t{0});
  must_free(a, must_alloc(a, 4096, S1), S1);
  CHECK_EQ(a.stats().cache_hits, int64_t{0});
}

void config_parsing() {
  AllocatorConfig c;
  std::string err;
  CHECK(parse_allocator_config("", &c, &err));
  CHECK(c.caching && c.max_split_size == SIZE_MAX && c.large_segment == 20 * MiB);
  CHECK(parse_allocator_config(" max_split_size_mb:256 , large_segment_mb:32,caching:1,", &c, &err));
  CHECK_EQ(c.max_split_size, size_t(256 * MiB));
  CHECK_EQ(c.large_segment, size_t(32 * MiB));
  struct Bad {
    const char* text;
    const char* says;
  };
  for (const Bad& b : {Bad{"max_split_size_mb", "has no ':'"}, Bad{"max_split_size_mb:abc", "not a whole number"},
                       Bad{"max_split_size_mb:1", "out of range"}, Bad{"caching:2", "out of range"},
                       Bad{"max_split_size_mb:-5", "not a whole number"},
                       Bad{"max_split_size_mb:99999999999999999999999", "out of range"},
                       Bad{"roundup_power2:4", "unknown key 'roundup_power2'"}}) {
    AllocatorConfig keep;
    keep.large_segment = 4 * MiB;
    err.clear();
    CHECK(!parse_allocator_config(b.text, &keep, &err));
    if (err.find(b.says) == std::string::npos || err.find("SLIMTENSOR_CUDA_ALLOC_CONF") == std::string::npos) {
      throw Failure(std::string("config '") + b.text + "' gave: " + err);
    }
    CHECK_EQ(keep.large_segment, size_t(4 * MiB));  // left unchanged on error
  }
}

void threads_hammer() {
  HostMemoryBackend be(512 * MiB);
  DeviceCachingAllocator a(0, &be, AllocatorConfig{});
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&a, t] {
      void* s = stream_id(0x100 + t % 2);
      std::vector<void*> held;
      for (int i = 0; i < 2000; ++i) {
        const size_t n = 512u * static_cast<size_t>(1 + (i * 7919 + t * 31) % 5000);
        held.push_back(must_alloc(a, n, s));
        if (held.size() > 16) {
          must_free(a, held.front(), s);
          held.erase(held.begin());
        }
      }
      for (void* p : held) must_free(a, p, s);
    });
  }
  for (auto& t : ts) t.join();
  CHECK_EQ(a.stats().allocated_bytes, int64_t{0});
  CHECK_EQ(a.stats().active_blocks, int64_t{0});
  std::string err;
  CHECK(a.empty_cache(&err));
  CHECK_EQ(be.used(), size_t{0});
  CHECK_EQ(be.bad_frees, 0);
}

struct Test {
  const char* name;
  void (*fn)();
};
const Test kTests[] = {
    {"rounding", rounding},
    {"huge_request_is_out_of_memory", huge_request_is_out_of_memory},
    {"small_pool_carves_2mib_segments", small_pool_carves_2mib_segments},
    {"large_pool_segment_sizes", large_pool_segment_sizes},
    {"pools_are_separate", pools_are_separate},
    {"reuse_on_the_freeing_stream", reuse_on_the_freeing_stream},
    {"no_reuse_on_another_stream", no_reuse_on_another_stream},
    {"record_stream_delays_reuse_until_done", record_stream_delays_reuse_until_done},
    {"free_on_other_stream_counts_as_use", free_on_other_stream_counts_as_use},
    {"record_stream_on_own_stream_is_free", record_stream_on_own_stream_is_free},
    {"record_stream_unknown_pointer", record_stream_unknown_pointer},
    {"event_failure_keeps_block_out_of_use", event_failure_keeps_block_out_of_use},
    {"split_and_merge_neighbours", split_and_merge_neighbours},
    {"large_block_split_needs_more_than_1mib_left", large_block_split_needs_more_than_1mib_left},
    {"max_split_size_limits_oversize_blocks", max_split_size_limits_oversize_blocks},
    {"oom_frees_cache_and_retries_once", oom_frees_cache_and_retries_once},
    {"oom_waits_for_pending_frees", oom_waits_for_pending_frees},
    {"oom_fails_cleanly_and_stays_usable", oom_fails_cleanly_and_stays_usable},
    {"backend_error_is_not_oom", backend_error_is_not_oom},
    {"statistics_and_peaks", statistics_and_peaks},
    {"empty_cache_keeps_segments_in_use", empty_cache_keeps_segments_in_use},
    {"double_free_is_an_error", double_free_is_an_error},
    {"caching_off_gives_everything_back", caching_off_gives_everything_back},
    {"config_parsing", config_parsing},
    {"threads_hammer", threads_hammer},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const Test& t : kTests) std::printf("%s\n", t.name);
    return 0;
  }
  int failed = 0, ran = 0;
  for (const Test& t : kTests) {
    if (argc == 2 && std::strcmp(argv[1], t.name) != 0) continue;
    ++ran;
    try {
      t.fn();
      std::printf("PASS %s\n", t.name);
    } catch (const std::exception& e) {
      ++failed;
      std::printf("FAIL %s: %s\n", t.name, e.what());
    }
  }
  if (ran == 0) {
    std::fprintf(stderr, "allocator_policy_test: no test named '%s' (see --list)\n", argv[1]);
    return 2;
  }
  return failed == 0 ? 0 : 1;
}

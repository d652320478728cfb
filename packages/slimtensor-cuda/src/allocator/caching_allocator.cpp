// caching_allocator.cpp: the policy of Notes [Stream-ordered reuse], [Pools and splitting], [Out of memory].
#include "caching_allocator.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>

namespace slimtensor_cuda {

std::string format_bytes(int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024 && bytes > -1024) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " B", bytes);
  } else if (b < 1024.0 * 1024 && b > -1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024);
  } else if (b < 1024.0 * 1024 * 1024 && b > -1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  }
  return buf;
}

// Ordered by stream, then size, then address: lower_bound({stream, size}) is the best fit on that stream.
bool DeviceCachingAllocator::BlockLess::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return std::less<void*>()(a->stream, b->stream);
  if (a->size != b->size) return a->size < b->size;
  return std::less<char*>()(a->ptr, b->ptr);
}

DeviceCachingAllocator::DeviceCachingAllocator(int device, AllocatorBackend* backend, const AllocatorConfig& config,
                                               AllocatorObserver* observer)
    : device_(device), backend_(backend), config_(config), observer_(observer) {}

DeviceCachingAllocator::~DeviceCachingAllocator() {
  std::string ignored;
  std::lock_guard<std::mutex> lock(mutex_);
  synchronize_and_release(&ignored);
  // What is still handed out (or lost) keeps its device memory: its owners may outlive us (process exit).
  // Only our bookkeeping goes: every block of every remaining segment, found from any of its blocks.
  std::set<Block*> heads;
  auto head_of = [](Block* b) {
    while (b->prev) b = b->prev;
    return b;
  };
  for (auto& [p, b] : allocated_) heads.insert(head_of(b));
  for (Pool* pool : {&small_pool_, &large_pool_}) {
    for (Block* b : *pool) heads.insert(head_of(b));
  }
  for (const PendingEvent& e : pending_) {
    heads.insert(head_of(e.block));
    backend_->event_destroy(device_, e.event);
  }
  for (Block* b : heads) {
    while (b) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

size_t DeviceCachingAllocator::round_size(size_t bytes) {
  if (bytes > SIZE_MAX - kMinBlockSize) return 0;
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t DeviceCachingAllocator::segment_size(size_t rounded) const {
  if (rounded <= kSmallSize) return kSmallSegment;
  if (rounded < config_.large_segment / 2) return config_.large_segment;
  if (rounded > SIZE_MAX - kRoundLarge) return 0;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

DeviceCachingAllocator::Block* DeviceCachingAllocator::take_free_block(bool small, size_t rounded, void* stream) {
  Pool& pool = pool_for(small);
  Block key;
  key.stream = stream;
  key.size = rounded;
  key.ptr = nullptr;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  // Note [Allocator configuration]: an oversize block is not carved up for a request below the limit,
  // and an oversize request does not take a block much larger than itself.
  if (rounded < config_.max_split_size && b->size >= config_.max_split_size) return nullptr;
  if (rounded >= config_.max_split_size && b->size - rounded >= config_.large_segment) return nullptr;
  pool.erase(it);
  return b;
}

bool DeviceCachingAllocator::should_split(const Block* b, size_t rounded) const {
  const size_t rest = b->size - rounded;
  if (b->small) return rest >= kMinBlockSize;
  return rounded < config_.max_split_size && rest > kSmallSize;  // an oversize request takes the block whole
}

void DeviceCachingAllocator::update_peaks() {
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
}

std::string DeviceCachingAllocator::describe_usage() const {
  size_t free_b = 0, total_b = 0;
  backend_->memory_info(device_, &free_b, &total_b);
  std::string s;
  if (total_b > 0) {
    s += "the device has " + format_bytes(static_cast<int64_t>(free_b)) + " free of " +
         format_bytes(static_cast<int64_t>(total_b)) + "; ";
  }
  s += "slimtensor has " + format_bytes(stats_.reserved_bytes) + " reserved, of which " +
       format_bytes(stats_.allocated_bytes) + " is allocated and " + format_bytes(stats_.cached_bytes) +
       " cached in free blocks";
  return s;
}

AllocStatus DeviceCachingAllocator::allocate(size_t bytes, void* stream, void** ptr, std::string* error) {
  *ptr = nullptr;
  if (bytes == 0) {
    *error = "a request of 0 bytes; the caller must ask for at least one byte";
    return AllocStatus::Error;
  }
  const size_t rounded = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t seg = rounded ? segment_size(rounded) : 0;
  if (rounded == 0 || seg == 0 || seg > static_cast<size_t>(INT64_MAX)) {
    ++stats_.failed_allocations;
    *error = "a request of " + std::to_string(bytes) + " bytes is larger than any device memory";
    return AllocStatus::OutOfMemory;
  }
  const bool small = rounded <= kSmallSize;
  process_events();

  Block* b = config_.caching ? take_free_block(small, rounded, stream) : nullptr;
  if (b != nullptr) {
    ++stats_.cache_hits;
    stats_.cached_bytes -= static_cast<int64_t>(b->size);
    if (observer_) observer_->on_cache_hit(device_, rounded, stream);
  } else {
    ++stats_.cache_misses;
    const size_t want = config_.caching ? seg : rounded;  // caching:0: one block per segment
    void* raw = nullptr;
    std::string raw_error;
    RawMallocStatus st = backend_->raw_malloc(device_, want, &raw, &raw_error);
    if (st == RawMallocStatus::OutOfMemory) {
      ++stats_.ooms;
      std::string sync_error;
      synchronize_and_release(&sync_error);  // Note [Out of memory]: free the cache, retry once
      ++stats_.alloc_retries;
      raw_error.clear();
      st = backend_->raw_malloc(device_, want, &raw, &raw_error);
      if (st == RawMallocStatus::OutOfMemory) ++stats_.ooms;
    }
    if (st != RawMallocStatus::Ok) {
      ++stats_.failed_allocations;
      if (st == RawMallocStatus::OutOfMemory) {
        *error = "out of memory on device " + std::to_string(device_) + ": tried to allocate " +
                 format_bytes(static_cast<int64_t>(bytes)) + " (" + std::to_string(bytes) + " bytes, a segment of " +
                 format_bytes(static_cast<int64_t>(want)) + "); " + describe_usage() +
                 " (freeing the cache and retrying did not help). Free tensors you no longer need; if much is "
                 "reserved but not allocated, set " +
                 kAllocConfEnv + "=max_split_size_mb:N to limit fragmentation";
        return AllocStatus::OutOfMemory;
      }
      *error = "the device could not allocate " + std::to_string(want) + " bytes: " + raw_error;
      return AllocStatus::Error;
    }
    ++stats_.raw_mallocs;
    ++stats_.segments;
    stats_.reserved_bytes += static_cast<int64_t>(want);
    if (observer_) {
      observer_->on_segment_reserved(device_, want);
      observer_->on_raw_malloc(device_, want, stream);
    }
    b = new Block;
    b->stream = stream;
    b->size = want;
    b->ptr = static_cast<char*>(raw);
    b->small = small;
  }

  if (should_split(b, rounded)) {
    Block* rest = new Block;
    rest->stream = stream;
    rest->small = b->small;
    rest->ptr = b->ptr + rounded;
    rest->size = b->size - rounded;
    rest->prev = b;
    rest->next = b->next;
    if (b->next) b->next->prev = rest;
    b->next = rest;
    b->size = rounded;
    rest->state = State::Free;
    pool_for(rest->small).insert(rest);
    stats_.cached_bytes += static_cast<int64_t>(rest->size);
    ++stats_.splits;
  }
  b->state = State::Allocated;
  b->requested = bytes;
  b->stream_uses.clear();
  allocated_.emplace(b->ptr, b);
  stats_.allocated_bytes += static_cast<int64_t>(b->size);
  stats_.requested_bytes += static_cast<int64_t>(bytes);
  ++stats_.active_blocks;
  update_peaks();
  *ptr = b->ptr;
  return AllocStatus::Ok;
}

bool DeviceCachingAllocator::free(void* ptr, void* stream, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocated_.find(ptr);
  if (it == allocated_.end()) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "%p is not a live allocation of device %d's allocator (a double free, or memory from elsewhere)", ptr,
                  device_);
    *error = buf;
    return false;
  }
  Block* b = it->second;
  allocated_.erase(it);
  stats_.allocated_bytes -= static_cast<int64_t>(b->size);
  stats_.requested_bytes -= static_cast<int64_t>(b->requested);
  --stats_.active_blocks;
  // Freed on a stream other than its own: that stream used it last (Note [Stream-ordered reuse]).
  if (stream != b->stream && std::find(b->stream_uses.begin(), b->stream_uses.end(), stream) == b->stream_uses.end()) {
    b->stream_uses.push_back(stream);
  }
  if (b->stream_uses.empty()) {
    free_block(b);
  } else {
    b->state = State::Pending;
    ++stats_.pending_free_blocks;
    bool lost = false;
    int queued = 0;
    for (void* s : b->stream_uses) {
      void* event = nullptr;
      std::string ev_error;
      if (backend_->event_create(device_, &event, &ev_error) != 0 ||
          backend_->event_record(device_, event, s, &ev_error) != 0) {
        if (event) backend_->event_destroy(device_, event);
        lost = true;
        *error = "could not record an event for a block freed across streams (" + ev_error +
                 "); the block is kept out of use";
        continue;
      }
      ++queued;
      pending_.push_back({event, b});
    }
    b->stream_uses.clear();
    // Without an event we cannot know when that stream is done: the block stays out of use for good
    // (losing one block is safe; reusing it could corrupt the other stream's data).
    b->pending_events = lost ? -1 : queued;
    if (lost) ++stats_.lost_blocks;
  }
  if (!config_.caching) {
    std::string ignored;
    synchronize_and_release(&ignored);
  }
  return true;
}

bool DeviceCachingAllocator::record_stream(void* ptr, void* stream, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocated_.find(ptr);
  if (it == allocated_.end()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%p is not a live allocation of device %d's allocator", ptr, device_);
    *error = buf;
    return false;
  }
  Block* b = it->second;
  if (stream != b->stream && std::find(b->stream_uses.begin(), b->stream_uses.end(), stream) == b->stream_uses.end()) {
    b->stream_uses.push_back(stream);
  }
  return true;
}

void DeviceCachingAllocator::free_block(Block* b) {
  b->state = State::Free;
  b->pending_events = 0;
  b->requested = 0;
  Pool& pool = pool_for(b->small);
  // Merge with free neighbours of the same segment (they share the block's stream by construction).
  for (Block* n : {b->prev, b->next}) {
    if (n == nullptr || n->state != State::Free) continue;
    pool.erase(n);
    stats_.cached_bytes -= static_cast<int64_t>(n->size);
    if (n == b->prev) {
      b->ptr = n->ptr;
      b->prev = n->prev;
      if (b->prev) b->prev->next = b;
    } else {
      b->next = n->next;
      if (b->next) b->next->prev = b;
    }
    b->size += n->size;
    delete n;
    ++stats_.merges;
  }
  pool.insert(b);
  stats_.cached_bytes += static_cast<int64_t>(b->size);
}

void DeviceCachingAllocator::process_events() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    bool done = false;
    std::string ignored;
    if (backend_->event_query(device_, it->event, &done, &ignored) != 0 || !done) {
      ++it;
      continue;
    }
    backend_->event_destroy(device_, it->event);
    Block* b = it->block;
    it = pending_.erase(it);
    if (b->pending_events > 0 && --b->pending_events == 0) {
      --stats_.pending_free_blocks;
      free_block(b);
    }
  }
}

void DeviceCachingAllocator::release_segment(Block* b) {
  pool_for(b->small).erase(b);
  stats_.cached_bytes -= static_cast<int64_t>(b->size);
  stats_.reserved_bytes -= static_cast<int64_t>(b->size);
  --stats_.segments;
  ++stats_.raw_frees;
  backend_->raw_free(device_, b->ptr, b->size);
  if (observer_) observer_->on_segment_released(device_, b->size);
  delete b;
}

bool DeviceCachingAllocator::synchronize_and_release(std::string* error) {
  bool ok = true;
  for (const PendingEvent& p : pending_) {
    std::string ev_error;
    if (backend_->event_synchronize(device_, p.event, &ev_error) != 0) {
      ok = false;
      *error = "waiting for a pending free failed: " + ev_error;
    }
  }
  if (ok) process_events();
  for (Pool* pool : {&small_pool_, &large_pool_}) {
    std::vector<Block*> whole;
    for (Block* b : *pool) {
      if (b->prev == nullptr && b->next == nullptr) whole.push_back(b);
    }
    for (Block* b : whole) release_segment(b);
  }
  return ok;
}

bool DeviceCachingAllocator::empty_cache(std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  return synchronize_and_release(error);
}

AllocatorStats DeviceCachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

int64_t DeviceCachingAllocator::allocated_bytes_on(const void* stream) const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t total = 0;
  for (const auto& [p, b] : allocated_) {
    if (b->stream == stream) total += static_cast<int64_t>(b->size);
  }
  return total;
}

void DeviceCachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

size_t DeviceCachingAllocator::block_size(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocated_.find(ptr);
  return it == allocated_.end() ? 0 : it->second->size;
}

}  // namespace slimtensor_cuda

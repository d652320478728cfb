// host_memory_backend.h: a TEST DOUBLE for the allocator backend: host memory stands in for cudaMalloc.
//
// Note [Host-memory test double]
// Nothing here runs on a GPU. "Streams" are small integers cast to pointers; the test decides when their
// work runs: enqueue(s) queues one unit of work on s, complete(s) finishes everything queued on s so far.
// An event records how much work was queued on its stream; it is done once that much has completed.
// event_synchronize completes the recorded work (what waiting on a real event achieves). Memory has a
// capacity, so out-of-memory can be provoked; every raw call is counted.
#pragma once

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "allocator/backend.h"

namespace slimtensor_cuda::testing {

class HostMemoryBackend final : public AllocatorBackend {
 public:
  explicit HostMemoryBackend(size_t capacity) : capacity_(capacity) {}
  ~HostMemoryBackend() override {
    for (auto& [p, n] : live_) std::free(p);
  }

  RawMallocStatus raw_malloc(int, size_t bytes, void** ptr, std::string* error) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++malloc_calls;
    if (fail_next_malloc_with_error) {
      fail_next_malloc_with_error = false;
      *error = "injected backend error";
      return RawMallocStatus::Error;
    }
    if (bytes > capacity_ - used_) {
      *error = "host stand-in is full";
      return RawMallocStatus::OutOfMemory;
    }
    void* p = std::aligned_alloc(512, bytes);
    if (p == nullptr) return RawMallocStatus::OutOfMemory;
    std::memset(p, 0xA5, bytes);
    used_ += bytes;
    live_[p] = bytes;
    *ptr = p;
    return RawMallocStatus::Ok;
  }
  void raw_free(int, void* ptr, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++free_calls;
    auto it = live_.find(ptr);
    if (it == live_.end() || it->second != bytes) {
      ++bad_frees;  // the policy freed something that is not a whole segment
      return;
    }
    used_ -= bytes;
    live_.erase(it);
    std::free(ptr);
  }
  int event_create(int, void** event, std::string* error) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_events) {
      *error = "injected event failure";
      return 1;
    }
    *event = reinterpret_cast<void*>(++next_event_);
    events_[*event] = {nullptr, 0};
    ++events_created;
    return 0;
  }
  void event_destroy(int, void* event) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.erase(event);
    ++events_destroyed;
  }
  int event_record(int, void* event, void* stream, std::string*) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_[event] = {stream, submitted_[stream]};
    return 0;
  }
  int event_query(int, void* event, bool* done, std::string*) override {
    std::lock_guard<std::mutex> lock(mu_);
    const auto& [stream, mark] = events_.at(event);
    *done = completed_[stream] >= mark;
    return 0;
  }
  int event_synchronize(int, void* event, std::string*) override {
    std::lock_guard<std::mutex> lock(mu_);
    const auto& [stream, mark] = events_.at(event);
    if (completed_[stream] < mark) completed_[stream] = mark;
    ++event_syncs;
    return 0;
  }
  void memory_info(int, size_t* free_bytes, size_t* total_bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    *free_bytes = capacity_ - used_;
    *total_bytes = capacity_;
  }

  // The test's control of the simulated streams.
  void enqueue(void* stream) {
    std::lock_guard<std::mutex> lock(mu_);
    ++submitted_[stream];
  }
  void complete(void* stream) {
    std::lock_guard<std::mutex> lock(mu_);
    completed_[stream] = submitted_[stream];
  }
  size_t used() {
    std::lock_guard<std::mutex> lock(mu_);
    return used_;
  }
  size_t live_events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size();
  }

  int malloc_calls = 0, free_calls = 0, bad_frees = 0, events_created = 0, events_destroyed = 0, event_syncs = 0;
  bool fail_events = false, fail_next_malloc_with_error = false;

 private:
  std::mutex mu_;
  size_t capacity_, used_ = 0;
  std::map<void*, size_t> live_;
  uintptr_t next_event_ = 0;
  std::map<void*, std::pair<void*, uint64_t>> events_;
  std::map<void*, uint64_t> submitted_, completed_;
};

inline void* stream_id(uintptr_t n) { return reinterpret_cast<void*>(n); }

}  // namespace slimtensor_cuda::testing

// backend.h: the tiny interface between the caching allocator's policy and the memory it manages.
//
// Note [Allocator backend]
// The policy (caching_allocator.cpp) is plain C++ and never calls CUDA: everything device-specific goes
// through this interface, so that the policy is unit-tested without a GPU against a host-memory test
// double (tests/host_memory_backend.h) and runs on the GPU against cuda_backend.cpp. Streams and events
// are opaque pointers; the policy only compares streams for equality and asks whether an event is done.
// Every function returns 0 on success; on failure it fills *error with a readable sentence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace slimtensor_cuda {

enum class RawMallocStatus { Ok = 0, OutOfMemory = 1, Error = 2 };

class AllocatorBackend {
 public:
  virtual ~AllocatorBackend() = default;
  // Reserves `bytes` of device memory (cudaMalloc). OutOfMemory is recoverable (the policy frees its
  // cache and retries); Error is not.
  virtual RawMallocStatus raw_malloc(int device, size_t bytes, void** ptr, std::string* error) = 0;
  // Gives a segment back (cudaFree). Called only once no queued work can use it (Note [Stream-ordered reuse]).
  virtual void raw_free(int device, void* ptr, size_t bytes) = 0;
  virtual int event_create(int device, void** event, std::string* error) = 0;
  virtual void event_destroy(int device, void* event) = 0;
  // Records the event after the work queued so far on `stream`.
  virtual int event_record(int device, void* event, void* stream, std::string* error) = 0;
  // *done = true once the work before the recorded point has finished.
  virtual int event_query(int device, void* event, bool* done, std::string* error) = 0;
  virtual int event_synchronize(int device, void* event, std::string* error) = 0;
  // Free and total bytes of the device, for out-of-memory messages (0, 0 when unknown).
  virtual void memory_info(int device, size_t* free_bytes, size_t* total_bytes) = 0;
};

// Optional observer of the allocator (the plugin forwards these to the core's tracing and memory
// counters). Called with the allocator's lock held: must be cheap and must not call the allocator.
class AllocatorObserver {
 public:
  virtual ~AllocatorObserver() = default;
  virtual void on_segment_reserved(int device, size_t bytes) = 0;
  virtual void on_segment_released(int device, size_t bytes) = 0;
  virtual void on_cache_hit(int device, size_t bytes, void* stream) = 0;
  virtual void on_raw_malloc(int device, size_t bytes, void* stream) = 0;
  // A block handed back: into its pool now (deferred = false), or once the other streams that used it
  // have finished (deferred = true, Note [Stream-ordered reuse]).
  virtual void on_block_freed(int /*device*/, size_t /*bytes*/, void* /*stream*/, bool /*deferred*/) {}
};

}  // namespace slimtensor_cuda

// metal_context.h: one Metal device as the plugin sees it: the bridge, the device, its streams, buffers,
// cache, events and kernels; every device-table function and every MPS shim works through it.
//
// Note [Metal context]
// The device state (buffers, cache, streams) belongs to this context, made once per process by
// st_plugin_init (the device table must live until exit) or by a test. Model state never lives here: a
// model's shader libraries, kernel functions and buffers are objects of their own, and destroying one
// model releases only what it owns (pitfall 11 of the reference wiped every model's state on destroy).
// One mutex serialises the bookkeeping and the encoding of all threads; the streams' GPU work runs
// concurrently regardless.
//
// Note [Metal memory]
// Buffers are MTLBuffers in shared storage mode (unified memory, ST_DEVICE_MEMORY_HOST_VISIBLE, not
// addressable): the handle the core keeps is the MTLBuffer object pointer and the byte offset travels
// beside it, so a view at any offset aliases its base with no extra buffer. Host copies use the buffer's
// contents directly, but only once the GPU work queued on the stream has finished (the stream is
// synchronised first); device copies are blits, strided copies and fills Metal kernels.
// Every handle is checked before use (resolve_handle_locked): a buffer of the registry, else a host address
// inside a live buffer's contents (refused: an address is not a handle, and no Objective-C message may be
// sent to it), else a borrowed MTLBuffer in shared storage (DLPack import: the bridge checks its class).
// A pointer that is none of these (a dangling or foreign object) cannot be detected at full speed; it is
// the caller's promise, as for every plugin handle.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../bridge/metal_bridge.h"
#include "buffer_cache.h"
#include "buffer_registry.h"
#include "slimtensor/c/device_plugin.h"
#include "stream.h"

namespace slimtensor_metal {

// A resolved side of a copy: the buffer, the byte offset, and the host address of that byte.
struct Resolved {
  void* buffer = nullptr;
  uint64_t offset = 0;
  uint8_t* host = nullptr;
  uint64_t length = 0;  // the buffer's length
};

struct Event {
  void* shared_event = nullptr;
  uint64_t value = 0;        // the last value a record signals
  Stream* stream = nullptr;  // where it was last recorded
  uint64_t serial = 0;       // the command buffer of that record
};

class MetalContext {
 public:
  // api may be NULL (no Metal on this platform): the context then reports `unavailable`.
  MetalContext(const mtlb_api* api, const st_core_table* core, const char* unavailable);
  ~MetalContext();
  MetalContext(const MetalContext&) = delete;
  MetalContext& operator=(const MetalContext&) = delete;

  // NULL when usable; otherwise why not (Metal missing, no device).
  const char* unavailable_reason();
  int device_count(int32_t* count);

  // ---- memory (Note [Metal memory]) ----
  int allocate(int32_t index, uint64_t nbytes, void* stream, void** handle);
  void free_buffer(int32_t index, void* handle, uint64_t nbytes, void* stream);
  int retain(void* handle);                 // one more owner of a live buffer
  int release(void* handle, void* stream);  // one owner fewer; the last one recycles it
  int copy_from_host(st_memory_ref dst, const void* host, uint64_t nbytes, void* stream);
  int copy_to_host(void* host, st_memory_ref src, uint64_t nbytes, void* stream);
  int copy_on_device(st_memory_ref dst, st_memory_ref src, uint64_t nbytes, void* stream);
  int copy_strided(const st_strided_copy_v2* desc, void* stream);
  int fill(st_memory_ref dst, uint64_t nbytes, const void* pattern, uint32_t pattern_size, void* stream);
  int locate_pointer(const void* ptr, int32_t* index);
  int empty_cache();

  // ---- streams and events ----
  int synchronize_stream(int32_t index, void* stream);
  int synchronize_all(int32_t index);
  int current_stream(int32_t index, void** stream);
  int new_stream(void** stream);  // an extra stream (its own command queue), owned by the context
  int set_current_stream(void* stream);
  int event_create(int32_t index, void** event);
  void event_destroy(int32_t index, void* event);
  int event_record(int32_t index, void* event, void* stream);
  int stream_wait_event(int32_t index, void* stream, void* event);
  int event_synchronize(int32_t index, void* event);
  int get_current_device(int32_t* index);
  int set_current_device(int32_t index);

  // ---- statistics ----
  int allocator_stats(int32_t index, void (*emit)(void*, const char*, int64_t), void* user);
  int64_t live_buffers();

  // ---- for the MPS shims ----
  std::mutex& mutex() { return mu_; }
  const mtlb_api* api() const { return api_; }
  void* device() const { return device_; }
  const st_core_table* core() const { return core_; }
  // Requires the lock. The stream a shim works on (the calling thread's current one).
  Stream* current_stream_locked();
  Stream* resolve_stream_locked(const char* fn, void* stream);
  // Requires the lock. Resolves a memory reference of nbytes (index 0, known or shared buffer, in bounds).
  int resolve_locked(const char* fn, const st_memory_ref& ref, uint64_t nbytes, Resolved* out);
  int resolve_handle_locked(const char* fn, void* handle, uint64_t offset, uint64_t nbytes, Resolved* out);
  int allocate_locked(uint64_t nbytes, Stream* stream, void** handle);
  int release_locked(void* handle, Stream* stream);
  int ensure_available_locked(const char* fn);
  // Requires the lock. The pipeline of one of the plugin's own kernels (compiled at first use).
  int own_pipeline_locked(const char* name, void** pipeline, uint32_t* max_threads);
  int encode_byte_copy_locked(Stream* s, const Resolved& src, const Resolved& dst, uint64_t nbytes);

 private:
  int init_locked();
  void recycle_locked(void* handle, const BufferEntry& e, Stream* stream);
  void note_plugin_bytes(int64_t delta);

  const mtlb_api* api_;
  const st_core_table* core_;
  std::string unavailable_;
  bool initialised_ = false;
  std::mutex mu_;
  void* device_ = nullptr;
  std::vector<std::unique_ptr<Stream>> streams_;  // streams_[0] is the default stream
  BufferRegistry registry_;
  BufferCache cache_;
  std::vector<Event*> events_;
  void* own_library_ = nullptr;
  std::vector<std::pair<std::string, std::pair<void*, uint32_t>>> own_pipelines_;
  // statistics
  int64_t allocated_bytes_ = 0, peak_allocated_bytes_ = 0, reserved_bytes_ = 0, peak_reserved_bytes_ = 0;
  int64_t new_buffers_ = 0, host_converts_ = 0;
};

}  // namespace slimtensor_metal

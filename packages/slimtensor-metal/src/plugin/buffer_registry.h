// buffer_registry.h: the live MTLBuffers of the plugin: handle -> (contents, length, refcount), and the
// resolution of a host pointer into a shared buffer's contents back to (buffer, byte offset).
//
// Note [Buffer registry]
// Every buffer the plugin hands out is registered here until its last reference is released; a cached
// (free) buffer is not, so a stale pointer into recycled memory never resolves. Lookups by handle are
// exact (a handle is an object pointer, never offset: Note [Device memory handles]); lookups by host
// address find the buffer whose contents range [contents, contents + length) holds it, so an interior
// pointer (a view's data at any offset) binds as (base buffer, offset) and never becomes a copy or a
// second buffer (pitfalls 7 and 8 of the reference: sub-buffers of offset views, exact-key lookups).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <unordered_map>

namespace slimtensor_metal {

struct BufferEntry {
  void* contents = nullptr;  // host address of byte 0 (shared storage)
  uint64_t length = 0;       // the MTLBuffer's length (the cache bucket, >= what was asked for)
  uint64_t requested = 0;    // bytes asked for (what the statistics count as allocated)
  int64_t refcount = 0;      // owners: a storage, an aoti_torch_mps_malloc result, retain() calls
};

class BufferRegistry {
 public:
  // Registers a new buffer with refcount 1; false when the handle or its contents range is already known.
  bool add(void* handle, void* contents, uint64_t length, uint64_t requested);
  BufferEntry* find(void* handle);
  const BufferEntry* find(void* handle) const;
  // Removes the entry; the caller releases or recycles the buffer.
  void remove(void* handle);
  // (buffer, byte offset) of a host address inside a registered buffer's contents; false if none holds it.
  bool resolve_pointer(const void* ptr, void** handle, uint64_t* offset) const;
  size_t size() const { return by_handle_.size(); }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& kv : by_handle_) f(kv.first, kv.second);
  }

 private:
  std::unordered_map<void*, BufferEntry> by_handle_;
  std::map<uintptr_t, void*> by_contents_;  // contents address -> handle, for interior pointers
};

}  // namespace slimtensor_metal

// slimtensor/tensor/storage.h: a block of device memory with an atomic intrusive refcount.
//
// Note [Storage ownership]
// A StorageImpl is either owning (allocated by the core or a device plugin, freed the same way) or
// borrowed (someone else's memory; `deleter(data, context)` runs when the last reference goes and
// releases whatever keeps the owner alive: a numpy array, a DLPack capsule, a model's constants).
// The refcount is atomic, so tensors may be shared across threads. The id is unique for the process
// and never reused, so traces and pictures can name a storage after it is gone.
// Invariant: data != nullptr whenever nbytes > 0.
//
// Note [Storage handles]
// A storage holds (allocation handle, byte offset) (Note [Device memory handles] in c/device_plugin.h):
// data() is the handle (the base address on the CPU), handle_offset() the bytes from it to the storage's
// start (0 for owned allocations and every CPU storage). address() is handle + offset where that is an
// address (the CPU, and devices with ST_DEVICE_MEMORY_ADDRESSABLE), nullptr otherwise: the core never does
// arithmetic on, compares or dereferences a handle it was not told is an address. A device storage also
// keeps the stream it was allocated on, and frees on it (Note [Streams]).
#pragma once

#include <atomic>
#include <cstdint>
#include <new>
#include <utility>

#include "slimtensor/base/export.h"
#include "slimtensor/tensor/device.h"

namespace slimtensor {

using BorrowDeleter = void (*)(void* data, void* context);

class SLIMTENSOR_API StorageImpl {
 public:
  // The allocation handle (Note [Storage handles]); the base address for CPU storages.
  void* data() const noexcept { return data_; }
  uint64_t handle_offset() const noexcept { return handle_offset_; }
  // handle + handle_offset when that is an address, else nullptr (also for an empty storage).
  void* address() const noexcept { return address_; }
  bool is_addressable() const noexcept { return addressable_; }
  // The stream an owning device storage was allocated on (it frees on it); nullptr on the CPU.
  void* stream() const noexcept { return stream_; }
  int64_t nbytes() const noexcept { return nbytes_; }
  Device device() const noexcept { return device_; }
  bool is_owning() const noexcept { return owning_; }
  bool is_read_only() const noexcept { return read_only_; }
  uint64_t id() const noexcept { return id_; }
  int64_t use_count() const noexcept { return refcount_.load(std::memory_order_relaxed); }
  // Context of the deleter of borrowed memory (for example the owning PyObject); null when owning.
  void* borrow_context() const noexcept { return context_; }
  BorrowDeleter borrow_deleter() const noexcept { return deleter_; }

  void retain() noexcept { refcount_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    // A sole owner skips the locked decrement: with no other reference, no thread can retain
    // concurrently (there are no weak references). The acquire pairs with other owners' releases.
    if (refcount_.load(std::memory_order_acquire) == 1 || refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      destroy();
    }
  }

  // Allocates `nbytes` on `device` (64-byte aligned on the CPU; on a device, on its current stream, index
  // -1 meaning the current device). Throws Error(Memory) naming `function` when it cannot.
  static StorageImpl* allocate(Device device, int64_t nbytes, const char* function = "allocate()");
  // Wraps memory the core does not own. `deleter` may be null (nothing to release). `owner` describes
  // who owns the memory ("numpy.ndarray", "dlpack", "model constant") for traces; errors name `function`.
  // Throws only before the storage exists: then the deleter is neither kept nor called.
  // On a device, `data` is the allocation handle (for an addressable device, its address), offset 0.
  static StorageImpl* borrow(Device device, void* data, int64_t nbytes, BorrowDeleter deleter, void* context,
                             bool read_only, const char* owner = "borrowed", const char* function = "from_blob");
  // Device memory someone else owns (DLPack import, from_blob on a device): the storage starts
  // handle_offset bytes into the allocation `handle` (Note [Storage handles]). `deleter(handle, context)`
  // runs when the last reference goes. Index -1 is the current device. Throws only before the storage
  // exists (as borrow).
  static StorageImpl* borrow_device(Device device, void* handle, uint64_t handle_offset, int64_t nbytes,
                                    BorrowDeleter deleter, void* context, bool read_only,
                                    const char* owner = "borrowed", const char* function = "from_blob");

  // Headers come from a small per-thread cache: borrowed storages (from_blob, DLPack) are made and freed
  // at high rates by AOTI models and hosts, and malloc/free would be most of their cost.
  static void* operator new(size_t bytes);
  static void* operator new(size_t bytes, const std::nothrow_t&) noexcept;
  static void* operator new(size_t bytes, void* place) noexcept { return place; }
  static void operator delete(void* p) noexcept;

 private:
  StorageImpl() = default;
  void destroy() noexcept;

  std::atomic<int64_t> refcount_{1};
  void* data_ = nullptr;     // the handle (Note [Storage handles])
  void* address_ = nullptr;  // data_ + handle_offset_ when addressable, else nullptr
  int64_t nbytes_ = 0;
  Device device_;
  bool owning_ = false;
  bool read_only_ = false;
  bool addressable_ = true;
  uint64_t handle_offset_ = 0;
  void* stream_ = nullptr;
  void* inline_block_ = nullptr;  // the malloc block holding header and data of a small CPU storage
  uint64_t id_ = 0;
  BorrowDeleter deleter_ = nullptr;
  void* context_ = nullptr;
  void* borrowed_data_ = nullptr;
};

// An owning handle to a StorageImpl (one reference).
class Storage {
 public:
  Storage() = default;
  // Adopts one reference that the caller already holds.
  static Storage adopt(StorageImpl* impl) noexcept {
    Storage s;
    s.impl_ = impl;
    return s;
  }
  Storage(const Storage& other) noexcept : impl_(other.impl_) {
    if (impl_) impl_->retain();
  }
  Storage(Storage&& other) noexcept : impl_(std::exchange(other.impl_, nullptr)) {}
  Storage& operator=(Storage other) noexcept {
    std::swap(impl_, other.impl_);
    return *this;
  }
  ~Storage() {
    if (impl_) impl_->release();
  }

  StorageImpl* get() const noexcept { return impl_; }
  StorageImpl* operator->() const noexcept { return impl_; }
  explicit operator bool() const noexcept { return impl_ != nullptr; }

 private:
  StorageImpl* impl_ = nullptr;
};

}  // namespace slimtensor

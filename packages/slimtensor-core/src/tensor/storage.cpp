// tensor/storage.cpp: allocation, borrowing and destruction of storages (Note [Storage ownership]).
#include "slimtensor/tensor/storage.h"

#include <cstdlib>
#include <new>

#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/runtime/events.h"

#include "runtime/counters.h"
#include "runtime/device_calls.h"

namespace slimtensor {
namespace {

constexpr size_t kAlignment = 64;
// CPU storages up to this size share one allocation with their header: one malloc instead of two keeps
// small tensors fast. Larger ones get their own block, so big buffers start on a page of their own.
constexpr int64_t kInlineBlockLimit = 4096;
constexpr size_t kHeaderBytes = (sizeof(StorageImpl) + kAlignment - 1) / kAlignment * kAlignment;

// Storage ids: unique and never reused. Each thread takes a block of ids at a time, so making a storage
// does not touch a shared counter (Note [Per-thread counters]).
std::atomic<uint64_t> g_next_id_block{1};
constexpr uint64_t kIdBlock = 1024;

thread_local uint64_t t_next_id __attribute__((tls_model("initial-exec"))) = 0;
thread_local uint64_t t_end_id __attribute__((tls_model("initial-exec"))) = 0;

uint64_t next_storage_id() noexcept {
  uint64_t& next = t_next_id;
  uint64_t& end = t_end_id;
  if (next == end) {
    next = g_next_id_block.fetch_add(kIdBlock, std::memory_order_relaxed);
    end = next + kIdBlock;
  }
  return next++;
}

void* aligned_block(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
}

void trace_storage(EventKind kind, const StorageImpl& s, const char* op) noexcept {
  events::emit(kind, [&](Event& e) {
    e.id = s.id();
    e.storage_id = s.id();
    e.bytes = s.nbytes();
    e.device = s.device();
    e.owning = s.is_owning();
    e.op = op;
  });
}

// Note [Storage header cache]: freed headers go to the freeing thread's list (up to kCachedHeaders); the
// list lives behind an initial-exec TLS pointer and is emptied at thread exit.
constexpr int kCachedHeaders = 128;
struct HeaderCache;
thread_local HeaderCache* t_headers __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_headers_gone __attribute__((tls_model("initial-exec"))) = false;  // thread is exiting

struct HeaderCache {
  void* head = nullptr;
  int count = 0;
  ~HeaderCache() {
    t_headers = nullptr;
    t_headers_gone = true;  // storages freed later in this thread's exit go straight to the heap
    while (head) {
      void* next = *static_cast<void**>(head);
      ::operator delete(head);
      head = next;
    }
  }
};

__attribute__((noinline)) HeaderCache* first_header_cache_use() {
  thread_local HeaderCache cache;
  t_headers = &cache;
  return t_headers;
}

}  // namespace

void* StorageImpl::operator new(size_t bytes, const std::nothrow_t&) noexcept {
  if (t_headers_gone) return ::operator new(bytes, std::nothrow);
  HeaderCache* c = t_headers ? t_headers : first_header_cache_use();
  if (void* p = c->head) {
    c->head = *static_cast<void**>(p);
    --c->count;
    return p;
  }
  return ::operator new(bytes, std::nothrow);
}

void* StorageImpl::operator new(size_t bytes) {
  void* p = operator new(bytes, std::nothrow);
  if (!p) throw std::bad_alloc();
  return p;
}

void StorageImpl::operator delete(void* p) noexcept {
  if (t_headers_gone) {
    ::operator delete(p);
    return;
  }
  HeaderCache* c = t_headers ? t_headers : first_header_cache_use();
  if (c->count < kCachedHeaders) {
    *static_cast<void**>(p) = c->head;
    c->head = p;
    ++c->count;
  } else {
    ::operator delete(p);
  }
}

StorageImpl* StorageImpl::allocate(Device device, int64_t nbytes, const char* function) {
  ST_CHECK(nbytes >= 0, Value, function, ": expected a byte count >= 0 but got ", nbytes);
  StorageImpl* s = nullptr;
  if (device.type == kCPU) {
    device = kCPUDevice;
    if (nbytes <= kInlineBlockLimit) {
      // malloc + manual alignment: glibc's aligned_alloc costs several times more for small blocks.
      void* block = std::malloc(kHeaderBytes + static_cast<size_t>(nbytes) + kAlignment);
      ST_CHECK(block != nullptr, Memory, function, ": out of memory allocating ", nbytes, " bytes on cpu");
      const uintptr_t aligned = (reinterpret_cast<uintptr_t>(block) + kAlignment - 1) & ~(uintptr_t{kAlignment} - 1);
      s = new (reinterpret_cast<void*>(aligned)) StorageImpl();
      s->inline_block_ = block;
      s->data_ = nbytes > 0 ? reinterpret_cast<char*>(aligned) + kHeaderBytes : nullptr;
    } else {
      void* data = aligned_block(static_cast<size_t>(nbytes));
      ST_CHECK(data != nullptr, Memory, function, ": out of memory allocating ", nbytes, " bytes (",
               static_cast<double>(nbytes) / (1 << 30), " GiB) on cpu");
      s = new (std::nothrow) StorageImpl();
      if (!s) {
        std::free(data);
        throw Error(ErrorKind::Memory, std::string(function) + ": out of memory allocating a storage header");
      }
      s->data_ = data;
    }
    s->address_ = s->data_;
  } else {
    // "cuda": the current device (Note [Current device]); the plugin's current index is in range, so the
    // entry is checked once, not again after resolving (this is every device empty()'s path).
    const DeviceEntry& entry = usable_device(device.index < 0 ? Device{device.type, 0} : device, function);
    if (device.index < 0) device.index = static_cast<int16_t>(device_calls::current_device(entry, function));
    // The stream is resolved now, so the storage frees on the stream it was allocated on even if the
    // thread's current stream changes meanwhile.
    void* stream = device_calls::current_stream(entry, device.index, function);
    void* handle = nullptr;
    if (nbytes > 0) {
      handle = device_calls::allocate(entry, device.index, static_cast<uint64_t>(nbytes), stream, function);
    }
    s = new (std::nothrow) StorageImpl();
    if (!s) {
      if (handle) device_calls::free(entry, device.index, handle, static_cast<uint64_t>(nbytes), stream);
      throw Error(ErrorKind::Memory, std::string(function) + ": out of memory allocating a storage header");
    }
    s->data_ = handle;
    s->stream_ = stream;
    s->addressable_ = (entry.memory_flags & ST_DEVICE_MEMORY_ADDRESSABLE) != 0;
    s->address_ = s->addressable_ ? handle : nullptr;
  }
  s->nbytes_ = nbytes;
  s->device_ = device;
  s->owning_ = true;
  s->id_ = next_storage_id();
  counters::storage_created(device.type, nbytes, true);
  if (events::tracing_active()) trace_storage(EventKind::StorageAlloc, *s, "allocate");
  return s;
}

StorageImpl* StorageImpl::borrow(Device device, void* data, int64_t nbytes, BorrowDeleter deleter, void* context,
                                 bool read_only, const char* owner, const char* function) {
  if (!device.is_cpu()) return borrow_device(device, data, 0, nbytes, deleter, context, read_only, owner, function);
  ST_CHECK(nbytes >= 0, Value, call_name(function), ": expected a byte count >= 0 but got ", nbytes);
  ST_CHECK(data != nullptr || nbytes == 0, Value, call_name(function), ": data is NULL but the view has elements (",
           nbytes, " bytes from its base); pass a valid pointer (a null one is allowed only for zero elements)");
  auto* s = new StorageImpl();
  s->data_ = nbytes > 0 ? data : nullptr;
  s->address_ = s->data_;
  s->nbytes_ = nbytes;
  s->device_ = kCPUDevice;
  s->owning_ = false;
  s->read_only_ = read_only;
  s->deleter_ = deleter;
  s->context_ = context;
  s->id_ = next_storage_id();
  // The deleter gets the pointer it was given, even when the storage reports null for zero bytes.
  s->borrowed_data_ = data;
  counters::storage_created(kCPU, nbytes, false);
  if (events::tracing_active()) trace_storage(EventKind::StorageAlloc, *s, owner ? owner : "borrowed");
  return s;
}

StorageImpl* StorageImpl::borrow_device(Device device, void* handle, uint64_t handle_offset, int64_t nbytes,
                                        BorrowDeleter deleter, void* context, bool read_only, const char* owner,
                                        const char* function) {
  if (device.is_cpu()) {
    // Host memory is an address: the offset is applied here, once.
    ST_CHECK(handle != nullptr || nbytes == 0, Value, call_name(function),
             ": data is NULL but the view has "
             "elements; pass a valid pointer (a null one is allowed only for zero elements)");
    char* base = handle ? static_cast<char*>(handle) + handle_offset : nullptr;
    return borrow(device, base, nbytes, deleter, context, read_only, owner, function);
  }
  ST_CHECK(nbytes >= 0, Value, call_name(function), ": expected a byte count >= 0 but got ", nbytes);
  ST_CHECK(handle != nullptr || nbytes == 0, Value, call_name(function),
           ": the device memory handle is NULL but "
           "the view has elements (",
           nbytes, " bytes); pass the allocation's handle (NULL only for zero elements)");
  ST_CHECK(handle_offset <= static_cast<uint64_t>(INT64_MAX), Value, call_name(function), ": the byte offset ",
           handle_offset, " into the allocation does not fit in int64");
  device = resolve_device(device, function);
  const DeviceEntry& entry = usable_device(device, function);
  auto* s = new StorageImpl();
  s->data_ = nbytes > 0 ? handle : nullptr;
  s->handle_offset_ = nbytes > 0 ? handle_offset : 0;
  s->addressable_ = (entry.memory_flags & ST_DEVICE_MEMORY_ADDRESSABLE) != 0;
  // Addressable memory: handle + offset is a device address (Note [Storage handles]).
  s->address_ = s->addressable_ && s->data_ ? static_cast<char*>(s->data_) + s->handle_offset_ : nullptr;
  s->nbytes_ = nbytes;
  s->device_ = device;
  s->owning_ = false;
  s->read_only_ = read_only;
  s->deleter_ = deleter;
  s->context_ = context;
  s->id_ = next_storage_id();
  s->borrowed_data_ = handle;
  counters::storage_created(device.type, nbytes, false);
  if (events::tracing_active()) trace_storage(EventKind::StorageAlloc, *s, owner ? owner : "borrowed");
  return s;
}

void StorageImpl::destroy() noexcept {
  if (events::tracing_active()) trace_storage(EventKind::StorageFree, *this, owning_ ? "free" : "release");
  counters::storage_destroyed(device_.type, nbytes_, owning_);
  if (!owning_) {
    if (deleter_) deleter_(borrowed_data_, context_);
    delete this;
    return;
  }
  if (device_.type == kCPU) {
    if (inline_block_) {
      void* block = inline_block_;
      this->~StorageImpl();
      std::free(block);
      return;
    }
    std::free(data_);
    delete this;
    return;
  }
  if (data_) {
    // The entry exists: the storage was allocated through it, and entries are never removed. Freed on the
    // stream it was allocated on (Note [Storage handles]).
    const DeviceEntry* entry = find_device(device_.type);
    device_calls::free(*entry, device_.index, data_, static_cast<uint64_t>(nbytes_), stream_);
  }
  delete this;
}

}  // namespace slimtensor

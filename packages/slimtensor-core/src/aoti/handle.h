// src/aoti/handle.h: the AOTI tensor handle, its lifetime, argument checks and the C-ABI error guard.
//
// Note [AOTI handle ownership]
// An AtenTensorHandle points at an AtenTensorOpaque allocated by make_handle(): a heap object holding one
// slimtensor::Tensor, i.e. one owning reference to its storage. delete_handle() destroys exactly that
// object; the storage lives on while other tensors, views or handles reference it. Every handle that
// leaves the ABI was counted (counters::handle_created) and traced (HandleCreate); delete_handle
// undoes both. A handle may hold an undefined tensor (aoti_torch_new_uninitialized_tensor).
//
// Note [Handle checks]
// A handle is not a pointer: it is a 64-bit key naming a slot of a handle table and the generation of
// that slot (Note [Handle table]). Every entry point, getters included, checks that the key is the one
// its slot holds now, in every mode. A NULL, foreign, deleted or reused-then-stale handle is therefore
// always an error (never a read of freed memory, never the destruction of an unrelated new handle), for
// one table load and one compare more than a NULL test. SLIMTENSOR_DEBUG_HANDLES is still read (and
// reported by slimtensor_aoti_debug_handles) but no longer needed: the exact check is always on.
//
// Note [No exception crosses the C ABI]
// Every aoti_torch_* function returning AOTITorchError runs its body inside guarded(), which turns any
// exception into AOTI_TORCH_FAILURE and a thread-local message "<function>(): <what>". Only
// aoti_torch_check throws, by contract.
//
// This header is internal to libslimtensor (hosts use the C ABI: slimtensor/c/shim.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <new>

#include "runtime/counters.h"
#include "slimtensor/base/error.h"
#include "slimtensor/c/shim.h"
#include "slimtensor/runtime/events.h"
#include "slimtensor/tensor/tensor.h"

struct AtenTensorOpaque {
  struct BuildWith {};  // tags the constructor below, so that it never stands in for a copy
  // `make()` returns the tensor as a prvalue, which C++17 constructs straight into `tensor`.
  template <typename Make>
  AtenTensorOpaque(BuildWith, Make&& make) : tensor(make()) {}

  slimtensor::DeviceType counted_type = 0;  // the device type its creation was counted under
  slimtensor::Tensor tensor;
};

namespace slimtensor::aoti {

// SLIMTENSOR_DEBUG_HANDLES, read once when the library loads (Note [Handle checks]).
extern const bool g_debug_handles;
inline bool debug_handles() noexcept { return g_debug_handles; }

// Note [Handle table]
// Handles live in slots of a table that only grows: chunks of kChunkSlots slots, never freed or moved, so
// reading a slot through any 64-bit value is always defined. A handle's value is its key:
//   bit 63 set | 31-bit generation (bits 32..62) | 26-bit slot index (bits 0..25), bits 26..31 zero.
// A slot's generation grows by one per handle made in it; a slot that has used all 2^31 - 1 generations is
// retired (never handed out again), so no key is ever issued twice: a stale copy of a deleted handle can
// never name a later handle. Bit 63 makes every key a non-canonical address, so no user-space pointer
// (top bit clear on x86-64 and AArch64) is ever taken for a handle, and a key dereferenced as a pointer
// faults at once. Slot 0 is never handed out; its key is all ones, which no value with index 0 equals,
// so NULL fails the same compare as any other non-handle.
//
// Note [Handle blocks]
// Handles are made and deleted at a high rate (every intermediate buffer of a model run). Each thread keeps
// up to kCachedSlots free slot indices and reuses them before taking the table's lock; the hot path reads
// an initial-exec TLS pointer (no __tls_get_addr call). The cache is made on a thread's first handle and
// handed back to the table when the thread exits, after which that thread uses the table directly.
struct HandleSlot {
  std::atomic<uint64_t> key{0};  // the live handle's key; 0 while the slot is free
  uint32_t gen = 0;              // generations used so far
  uint32_t index = 0;
  alignas(AtenTensorOpaque) unsigned char body[sizeof(AtenTensorOpaque)];
  AtenTensorOpaque* opaque() noexcept { return std::launder(reinterpret_cast<AtenTensorOpaque*>(body)); }
};
constexpr int kIndexBits = 26, kChunkBits = 10;
constexpr uint32_t kChunkSlots = 1u << kChunkBits;
constexpr uint32_t kNumChunks = 1u << (kIndexBits - kChunkBits);
constexpr uint32_t kMaxGen = 0x7FFFFFFFu;
extern std::atomic<HandleSlot*> g_chunks[kNumChunks];

inline uint64_t handle_key(uint32_t index, uint32_t gen) noexcept {
  return (uint64_t{0x80000000u | gen} << 32) | index;
}
// The slot a handle value names, or NULL if it names no live handle (NULL, foreign, deleted, stale).
inline HandleSlot* live_slot(AtenTensorHandle h) noexcept {
  const uint64_t v = reinterpret_cast<uintptr_t>(h);
  HandleSlot* chunk = g_chunks[(v >> kChunkBits) & (kNumChunks - 1)].load(std::memory_order_acquire);
  if (__builtin_expect(chunk == nullptr, 0)) return nullptr;
  HandleSlot* slot = chunk + (v & (kChunkSlots - 1));
  return __builtin_expect(slot->key.load(std::memory_order_relaxed) == v, 1) ? slot : nullptr;
}
// The handle object of a live handle, or NULL.
inline AtenTensorOpaque* live_opaque(AtenTensorHandle h) noexcept {
  HandleSlot* s = live_slot(h);
  return s ? s->opaque() : nullptr;
}

struct SlotCache {
  uint32_t free[256];
  int count = 0;
  ~SlotCache();
};
constexpr int kCachedSlots = 256;
extern thread_local SlotCache* t_slots
    __attribute__((tls_model("initial-exec"), visibility("hidden"))) ST_CONSTANT_INIT;
HandleSlot* take_slot_slow();
void give_slot_slow(HandleSlot* slot) noexcept;
inline HandleSlot* slot_at(uint32_t index) noexcept {
  return g_chunks[index >> kChunkBits].load(std::memory_order_relaxed) + (index & (kChunkSlots - 1));
}

inline HandleSlot* take_slot() {
  SlotCache* c = t_slots;
  if (__builtin_expect(c != nullptr && c->count > 0, 1)) return slot_at(c->free[--c->count]);
  return take_slot_slow();
}

// A slot whose handle is gone (key already 0): back to the cache, or retired when out of generations.
inline void give_slot(HandleSlot* s) noexcept {
  SlotCache* c = t_slots;
  if (__builtin_expect(c != nullptr && c->count < kCachedSlots && s->gen < kMaxGen, 1)) {
    c->free[c->count++] = s->index;
    return;
  }
  give_slot_slow(s);
}

// Registration (debug registry) and tracing of a new handle, when either is on. If registration fails the
// handle is destroyed and the exception rethrown.
void handle_made_slow(AtenTensorHandle h, const char* op);
// Tracing of a handle about to be deleted.
void handle_deleting_slow(AtenTensorHandle h) noexcept;

// A new handle (counted and traced) holding the tensor `make()` returns, built in place; `op` names the
// creator in traces. If make() throws, nothing is left behind.
template <typename Make>
AtenTensorHandle emplace_handle(const char* op, Make&& make) {
  HandleSlot* slot = take_slot();
  AtenTensorOpaque* o;
  try {
    o = new (slot->body) AtenTensorOpaque(AtenTensorOpaque::BuildWith{}, make);
  } catch (...) {
    give_slot(slot);
    throw;
  }
  o->counted_type = o->tensor.defined() ? o->tensor.storage_impl()->device().type : kCPU;
  const uint64_t key = handle_key(slot->index, ++slot->gen);
  slot->key.store(key, std::memory_order_release);
  auto h = reinterpret_cast<AtenTensorHandle>(static_cast<uintptr_t>(key));
  counters::handle_created(o->counted_type);
  if (__builtin_expect(events::tracing_active(), 0)) handle_made_slow(h, op);
  return h;
}

// Wraps a tensor in a new handle (counted and traced).
inline AtenTensorHandle make_handle(Tensor&& tensor, const char* op) {
  return emplace_handle(op, [&] { return std::move(tensor); });
}

// The slow path of check_handle: throws the right error for a value that is not a live handle.
[[noreturn]] void bad_handle(AtenTensorHandle h, const char* function, const char* arg);
// The handle object of h; throws unless h is a live handle (NULL, foreign, deleted, stale).
inline AtenTensorOpaque* check_handle(AtenTensorHandle h, const char* function, const char* arg) {
  HandleSlot* s = live_slot(h);
  if (__builtin_expect(s == nullptr, 0)) bad_handle(h, function, arg);
  return s->opaque();
}

// Destroys a live handle (callers check_handle first). The key is cleared first, so the value is dead
// before the tensor's destructor runs.
inline void delete_handle(AtenTensorHandle h) noexcept {
  if (__builtin_expect(events::tracing_active(), 0)) handle_deleting_slow(h);
  HandleSlot* s = slot_at(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(h)) & ((1u << kIndexBits) - 1));
  AtenTensorOpaque* o = s->opaque();
  const DeviceType type = o->counted_type;
  s->key.store(0, std::memory_order_relaxed);
  o->~AtenTensorOpaque();
  give_slot(s);
  counters::handle_destroyed(type);
}
char* last_error_buffer() noexcept;  // the thread's NUL-terminated last error (1024 bytes)
int64_t live_handles() noexcept;

// Sets the thread's last error to "<function>(): <message>".
void set_last_error(const char* function, const char* message) noexcept;

// The tensor behind a handle argument, checked live and (if `need_defined`) defined.
inline const Tensor& tensor_arg(AtenTensorHandle h, const char* function, const char* arg, bool need_defined = true) {
  AtenTensorOpaque* o = check_handle(h, function, arg);
  if (need_defined && !o->tensor.defined()) {
    fail(ErrorKind::Value, function, "(): ", arg,
         " is an undefined tensor (made by aoti_torch_new_uninitialized_tensor); assign a tensor to it first");
  }
  return o->tensor;
}

[[noreturn]] void bad_shape_arg(int64_t ndim, const char* function);

template <typename T>
inline T* out_arg(T* p, const char* function, const char* arg) {
  if (!p) fail(ErrorKind::Value, function, "(): ", arg, " is NULL; pass the address of a variable for the result");
  return p;
}

// ndim and sizes of a shape argument: ndim in [0, kMaxDims], sizes non-NULL when ndim > 0. The sizes
// themselves are checked where the tensor is made (Tensor::make, empty_strided, from_blob).
inline IntList shape_arg(int64_t ndim, const int64_t* sizes, const char* function) {
  if (__builtin_expect(ndim < 0 || ndim > kMaxDims || (ndim > 0 && !sizes), 0)) bad_shape_arg(ndim, function);
  return IntList(sizes, ndim);
}
// A shape argument with its strides: the given ones, or row-major ones (kept here) when strides is NULL.
class LayoutArgs {
 public:
  LayoutArgs(int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, const char* function)
      : sizes(shape_arg(ndim, sizes_ptr, function)) {
    if (strides_ptr) {
      strides = IntList(strides_ptr, ndim);
    } else {
      contiguous_strides(sizes.data, static_cast<int>(ndim), row_major_);
      strides = IntList(row_major_, ndim);
    }
  }
  LayoutArgs(const LayoutArgs&) = delete;  // strides may point into this object
  LayoutArgs& operator=(const LayoutArgs&) = delete;

  IntList sizes, strides;

 private:
  int64_t row_major_[kMaxDims];
};
inline ScalarType dtype_arg(int32_t code, const char* function) { return scalar_type_from_code(code, function); }
// A device_type/device_index pair; any index but -1 and 0 is refused for the cpu.
Device device_arg_slow(int32_t device_type, int32_t device_index, const char* function);
inline Device device_arg(int32_t device_type, int32_t device_index, const char* function) {
  if (device_type == kCPU && (device_index == -1 || device_index == 0)) return kCPUDevice;
  return device_arg_slow(device_type, device_index, function);
}

// Runs body; returns AOTI_TORCH_SUCCESS, or AOTI_TORCH_FAILURE with the last error set. Never throws.
template <typename Body>
inline AOTITorchError guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return AOTI_TORCH_SUCCESS;
  } catch (const std::bad_alloc&) {
    set_last_error(function, "out of memory");
  } catch (const std::exception& e) {
    set_last_error(function, e.what());
  } catch (...) {
    set_last_error(function, "unknown C++ exception");
  }
  return AOTI_TORCH_FAILURE;
}

}  // namespace slimtensor::aoti

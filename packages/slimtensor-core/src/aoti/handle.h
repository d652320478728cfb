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
// Getters only NULL-check (they must cost a few ns). Every other entry point also checks the handle's
// magic word, which delete_handle clears, so most double deletes are caught even without the debug
// registry. With SLIMTENSOR_DEBUG_HANDLES=1 (read once, at load) every live handle is in a registry and
// any pointer that is not in it (foreign, already deleted) is an error instead of undefined behaviour.
//
// Note [No exception crosses the C ABI]
// Every aoti_torch_* function returning AOTITorchError runs its body inside guarded(), which turns any
// exception into AOTI_TORCH_FAILURE and a thread-local message "<function>(): <what>". Only
// aoti_torch_check throws, by contract.
//
// This header is internal to libslimtensor (hosts use the C ABI: slimtensor/c/shim.h).
#pragma once

#include <cstdint>
#include <exception>
#include <new>

#include "runtime/counters.h"
#include "slimtensor/c/shim.h"
#include "slimtensor/base/error.h"
#include "slimtensor/runtime/events.h"
#include "slimtensor/tensor/tensor.h"

struct AtenTensorOpaque {
  struct BuildWith {};  // tags the constructor below, so that it never stands in for a copy
  // `make()` returns the tensor as a prvalue, which C++17 constructs straight into `tensor`.
  template <typename Make>
  AtenTensorOpaque(BuildWith, Make&& make) : tensor(make()) {}

  uint32_t magic = 0;                         // kHandleMagic while the handle is live
  slimtensor::DeviceType counted_type = 0;    // the device type its creation was counted under
  slimtensor::Tensor tensor;
};

namespace slimtensor::aoti {

constexpr uint32_t kHandleMagic = 0x51AB7E45u;

// SLIMTENSOR_DEBUG_HANDLES, read once when the library loads (Note [Handle checks]).
extern const bool g_debug_handles;
inline bool debug_handles() noexcept { return g_debug_handles; }

// Note [Handle blocks]
// Handles are made and deleted at a high rate (every intermediate buffer of a model run). Each thread keeps
// up to kCachedBlocks freed handle blocks and reuses them before asking malloc; a block freed on another
// thread simply joins that thread's cache. The hot path reads an initial-exec TLS pointer (no
// __tls_get_addr call); the cache is made on a thread's first handle and emptied when the thread exits,
// after which that thread's handles come from the heap directly.
struct BlockCache {
  void* head = nullptr;
  int count = 0;
  ~BlockCache();
};
constexpr int kCachedBlocks = 256;
extern thread_local BlockCache* t_blocks __attribute__((tls_model("initial-exec"), visibility("hidden")));
void* take_block_slow();
void give_block_slow(void* block) noexcept;

inline void* take_block() {
  BlockCache* c = t_blocks;
  if (__builtin_expect(c != nullptr && c->head != nullptr, 1)) {
    void* p = c->head;
    c->head = *static_cast<void**>(p);
    --c->count;
    return p;
  }
  return take_block_slow();
}

inline void give_block(void* p) noexcept {
  BlockCache* c = t_blocks;
  if (__builtin_expect(c != nullptr && c->count < kCachedBlocks, 1)) {
    *static_cast<void**>(p) = c->head;
    c->head = p;
    ++c->count;
    return;
  }
  give_block_slow(p);
}

// Registration (debug registry) and tracing of a new handle, when either is on. If registration fails the
// handle is destroyed and the exception rethrown.
void handle_made_slow(AtenTensorHandle h, const char* op);
// Tracing and deregistration of a handle about to be deleted, when either is on.
void handle_deleting_slow(AtenTensorHandle h) noexcept;

// A new handle (counted and traced) holding the tensor `make()` returns, built in place; `op` names the
// creator in traces. If make() throws, nothing is left behind.
template <typename Make>
AtenTensorHandle emplace_handle(const char* op, Make&& make) {
  void* block = take_block();
  AtenTensorHandle h;
  try {
    h = new (block) AtenTensorOpaque(AtenTensorOpaque::BuildWith{}, make);
  } catch (...) {
    give_block(block);
    throw;
  }
  h->magic = kHandleMagic;
  h->counted_type = h->tensor.defined() ? h->tensor.storage_impl()->device().type : kCPU;
  counters::handle_created(h->counted_type);
  if (__builtin_expect(g_debug_handles || events::tracing_active(), 0)) handle_made_slow(h, op);
  return h;
}

// Wraps a tensor in a new handle (counted and traced).
inline AtenTensorHandle make_handle(Tensor&& tensor, const char* op) {
  return emplace_handle(op, [&] { return std::move(tensor); });
}

// Destroys a handle made by emplace_handle (no checks: callers check_handle first).
inline void delete_handle(AtenTensorHandle h) noexcept {
  if (__builtin_expect(g_debug_handles || events::tracing_active(), 0)) handle_deleting_slow(h);
  const DeviceType type = h->counted_type;
  h->magic = 0;
  h->~AtenTensorOpaque();
  give_block(h);
  counters::handle_destroyed(type);
}
// The slow path of check_handle: throws the right error, or checks the debug registry.
void check_handle_slow(AtenTensorHandle h, const char* function, const char* arg);
// Throws unless h is a live handle (NULL, cleared magic, or not registered in debug mode).
inline void check_handle(AtenTensorHandle h, const char* function, const char* arg) {
  if (__builtin_expect(h != nullptr && !g_debug_handles && h->magic == kHandleMagic, 1)) return;
  check_handle_slow(h, function, arg);
}
char* last_error_buffer() noexcept;  // the thread's NUL-terminated last error (1024 bytes)
int64_t live_handles() noexcept;

// Sets the thread's last error to "<function>(): <message>".
void set_last_error(const char* function, const char* message) noexcept;

// The tensor behind a handle argument, checked live and (if `need_defined`) defined.
inline const Tensor& tensor_arg(AtenTensorHandle h, const char* function, const char* arg,
                                bool need_defined = true) {
  check_handle(h, function, arg);
  if (need_defined && !h->tensor.defined()) {
    fail(ErrorKind::Value, function, "(): ", arg,
         " is an undefined tensor (made by aoti_torch_new_uninitialized_tensor); assign a tensor to it first");
  }
  return h->tensor;
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

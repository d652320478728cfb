// src/aoti/handle.h: the AOTI tensor handle, its lifetime, argument checks and the C-ABI error guard.
//
// Note [AOTI handle ownership]
// An AtenTensorHandle points at an AtenTensorOpaque allocated by make_handle(): a heap object holding one
// slimtensor::Tensor, i.e. one owning reference to its storage. delete_handle() destroys exactly that
// object; the storage lives on while other tensors, views or handles reference it. Every handle that
// leaves the ABI was counted (stats::aoti_handle_created) and traced (HandleCreate); delete_handle
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

#include "slimtensor/c/shim.h"
#include "slimtensor/error.h"
#include "slimtensor/tensor.h"

struct AtenTensorOpaque {
  uint32_t magic;
  slimtensor::DeviceType counted_type;  // the device type its creation was counted under
  slimtensor::Tensor tensor;
};

namespace slimtensor::aoti {

constexpr uint32_t kHandleMagic = 0x51AB7E45u;
constexpr int64_t kMaxDims = 64;  // more dims than any model uses; bounds the stack arrays below

// Wraps a tensor in a new handle (counted and traced); `op` names the creator in traces.
AtenTensorHandle make_handle(Tensor&& tensor, const char* op);
// Destroys a handle made by make_handle (no checks; see check_for_delete).
void delete_handle(AtenTensorHandle h) noexcept;
// SLIMTENSOR_DEBUG_HANDLES, read once when the library loads (Note [Handle checks]).
extern const bool g_debug_handles;
inline bool debug_handles() noexcept { return g_debug_handles; }
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

template <typename T>
inline T* out_arg(T* p, const char* function, const char* arg) {
  if (!p) fail(ErrorKind::Value, function, "(): ", arg, " is NULL; pass the address of a variable for the result");
  return p;
}

// ndim and sizes of a shape argument: ndim in [0, kMaxDims], sizes non-NULL when ndim > 0.
IntList shape_arg(int64_t ndim, const int64_t* sizes, const char* function);
// Strides for a shape: the given ones, or row-major ones written to `scratch` (kMaxDims long) when NULL.
IntList strides_arg(IntList sizes, const int64_t* strides, int64_t* scratch, const char* function);
ScalarType dtype_arg(int32_t code, const char* function);
Device device_arg(int32_t device_type, int32_t device_index, const char* function);

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

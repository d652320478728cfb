// runtime.h: lazy discovery of the CUDA driver and devices, and the device guard (Note [Lazy CUDA]).
//
// Note [Lazy CUDA]
// Loading the plugin calls no CUDA function: importing slimtensor or slimtensor_cuda initialises no driver
// and creates no context, so a process may still fork and use CUDA in the child. The first question
// about devices (unavailable_reason, device_count) checks that the driver library opens (dlopen of
// libcuda.so.1, whose absence cudart reports only as an "insufficient driver") and asks cudart for the
// device count, which initialises the driver but creates no context. A context is created by the first
// call that works on a device (DeviceGuard). state() reports both steps, so tests can check laziness.
// CUDA_VISIBLE_DEVICES is honoured because cudart applies it.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

namespace slimtensor_cuda {

inline constexpr int kMaxDevices = 64;

struct RuntimeState {
  bool probed;              // unavailable_reason/device_count has run
  bool driver_initialised;  // cudart was asked for the device count (cuInit ran)
  bool context_touched;     // a call that creates a context ran (DeviceGuard)
};
RuntimeState runtime_state();

// Null when CUDA is usable; else the reason (computed once).
const char* unavailable_reason();
// The number of visible devices (0 when unavailable).
int device_count();
// 0 when `index` is a usable device; else fills last_error naming `function` and returns 1.
int check_device(const char* function, int64_t index);

// Makes `index` the current device of the calling thread for the guard's lifetime (restoring the
// previous one after); creates the device's primary context on first use (Note [Lazy CUDA]).
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;
  cudaError_t status_ = cudaSuccess;
};

// Peer access from `device` to `peer` (enabled once); false when the GPUs cannot.
bool enable_peer_access(int device, int peer);

}  // namespace slimtensor_cuda

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

// Note [Peer copies]
// A copy from GPU `src` to GPU `dst` runs on dst's stream after the work queued so far on src's current
// stream (an event recorded there and waited on). A strided or converting copy then reads the source
// directly when dst may access src's memory (cudaDeviceCanAccessPeer, peer access enabled once per pair);
// otherwise it is *staged*: the source's extent is first moved into a block of dst's allocator with
// cudaMemcpyPeerAsync (which the runtime routes through the host when the GPUs cannot reach each other),
// the kernel reads that block, and the block is freed stream-ordered after it. Contiguous same-dtype copies
// are one cudaMemcpyPeerAsync, which stages by itself. PeerRoute::Staged forces the staged route on every
// device-to-device copy, the same GPU included, so that a machine with one GPU tests it (the private
// slimtensor_cuda._C._set_peer_route("staged")); peer_copy_counts() counts the routes taken.
enum class PeerRoute { Auto, Staged };
void set_peer_route(PeerRoute route);
// True when a copy from `src` to `dst` takes the peer path (different GPUs, or the staged route forced).
bool takes_peer_path(int dst, int src);
// True when that copy reads `src` directly; false when it is staged. Counts the route taken.
bool peer_reads_directly(int dst, int src);
struct PeerCopyCounts {
  int64_t direct;
  int64_t staged;
};
PeerCopyCounts peer_copy_counts();

}  // namespace slimtensor_cuda

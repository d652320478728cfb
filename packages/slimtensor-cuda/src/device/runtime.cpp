// runtime.cpp: Note [Lazy CUDA]: the driver probe, device count and device guard.
#include "device/runtime.h"

#include <dlfcn.h>

#include <cstdio>
#include <mutex>
#include <string>

#include "device/error.h"

namespace slimtensor_cuda {
namespace {

std::once_flag g_probe_once;
std::string g_reason;  // empty: usable
int g_count = 0;
std::atomic<bool> g_probed{false}, g_driver_init{false}, g_context{false};

void probe() {
  // The driver: cudart opens it itself, but when it is missing it only says "insufficient driver".
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    const char* why = dlerror();
    g_reason = std::string("no CUDA driver found (libcuda.so.1 could not be opened: ") + (why ? why : "unknown") +
               "); install the NVIDIA driver, or use a machine with an NVIDIA GPU";
    g_probed = true;
    return;
  }
  // Kept open: cudart holds it for the process anyway.
  g_driver_init = true;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    g_reason = std::string("CUDA is not usable: cudaGetDeviceCount failed with ") + cudaGetErrorName(err) + " (" +
               cudaGetErrorString(err) + ")";
    if (err == cudaErrorInsufficientDriver) g_reason += "; the NVIDIA driver is older than CUDA 13 needs: update it";
    if (err == cudaErrorNoDevice) g_reason += "; check CUDA_VISIBLE_DEVICES";
  } else if (count == 0) {
    g_reason = "no CUDA device is visible (cudaGetDeviceCount gave 0); check CUDA_VISIBLE_DEVICES";
  } else {
    g_count = count > kMaxDevices ? kMaxDevices : count;
  }
  g_probed = true;
}

}  // namespace

RuntimeState runtime_state() { return {g_probed.load(), g_driver_init.load(), g_context.load()}; }

const char* unavailable_reason() {
  std::call_once(g_probe_once, probe);
  return g_reason.empty() ? nullptr : g_reason.c_str();
}

int device_count() {
  std::call_once(g_probe_once, probe);
  return g_count;
}

int check_device(const char* function, int64_t index) {
  if (const char* why = unavailable_reason())
    return fail("slimtensor_cuda %s(): the CUDA device is unavailable: %s", function, why);
  if (index < 0 || index >= g_count) {
    return fail(
        "slimtensor_cuda %s(): device index %lld is out of range: %d CUDA device%s visible (indices 0..%d); "
        "pick an index below %d or check CUDA_VISIBLE_DEVICES",
        function, static_cast<long long>(index), g_count, g_count == 1 ? " is" : "s are", g_count - 1, g_count);
  }
  return 0;
}

DeviceGuard::DeviceGuard(int index) {
  g_context = true;
  int current = -1;
  status_ = cudaGetDevice(&current);
  if (status_ != cudaSuccess) return;
  if (current != index) {
    previous_ = current;
    status_ = cudaSetDevice(index);
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

bool enable_peer_access(int device, int peer) {
  static std::mutex mu;
  static signed char state[kMaxDevices][kMaxDevices] = {};  // 0 unknown, 1 enabled, -1 impossible
  if (device == peer) return true;
  std::lock_guard<std::mutex> lock(mu);
  signed char& s = state[device][peer];
  if (s == 0) {
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, device, peer) != cudaSuccess || !can) {
      cudaGetLastError();
      s = -1;
    } else {
      DeviceGuard guard(device);
      const cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
      s = (err == cudaSuccess || err == cudaErrorPeerAccessAlreadyEnabled) ? 1 : -1;
      cudaGetLastError();
    }
  }
  return s == 1;
}

namespace {
std::atomic<int> g_peer_route{static_cast<int>(PeerRoute::Auto)};
std::atomic<int64_t> g_direct_copies{0}, g_staged_copies{0};
}  // namespace

void set_peer_route(PeerRoute route) { g_peer_route.store(static_cast<int>(route), std::memory_order_relaxed); }

bool takes_peer_path(int dst, int src) {
  return dst != src || g_peer_route.load(std::memory_order_relaxed) == static_cast<int>(PeerRoute::Staged);
}

bool peer_reads_directly(int dst, int src) {
  const bool forced = g_peer_route.load(std::memory_order_relaxed) == static_cast<int>(PeerRoute::Staged);
  const bool direct = !forced && enable_peer_access(dst, src);
  (direct ? g_direct_copies : g_staged_copies).fetch_add(1, std::memory_order_relaxed);
  return direct;
}

PeerCopyCounts peer_copy_counts() {
  return {g_direct_copies.load(std::memory_order_relaxed), g_staged_copies.load(std::memory_order_relaxed)};
}

}  // namespace slimtensor_cuda

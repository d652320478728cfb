// streams.cpp: Notes [Current streams] and [Stream pool].
#include "device/streams.h"

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "device/error.h"
#include "device/runtime.h"
#include "slimtensor/c/device_plugin.h"

namespace slimtensor_cuda {
namespace {
thread_local cudaStream_t t_current[kMaxDevices] = {};
std::mutex g_pool_mutex;
std::map<std::pair<int, int>, std::vector<cudaStream_t>>* g_pool = new std::map<std::pair<int, int>, std::vector<cudaStream_t>>;
}  // namespace

cudaStream_t current_stream(int device) {
  return (device >= 0 && device < kMaxDevices) ? t_current[device] : nullptr;
}

void set_current_stream(int device, cudaStream_t stream) {
  if (device >= 0 && device < kMaxDevices) t_current[device] = stream == cudaStreamLegacy ? nullptr : stream;
}

cudaStream_t resolve_stream(int device, void* stream) {
  if (stream == ST_STREAM_CURRENT) return current_stream(device);
  if (stream == static_cast<void*>(cudaStreamLegacy)) return nullptr;
  return static_cast<cudaStream_t>(stream);
}

int acquire_stream(int device, int priority, cudaStream_t* stream) {
  if (check_device("Stream", device)) return 1;
  {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    auto& free_list = (*g_pool)[{device, priority}];
    if (!free_list.empty()) {
      *stream = free_list.back();
      free_list.pop_back();
      return 0;
    }
  }
  DeviceGuard guard(device);
  ST_CUDA_TRY("Stream", "cudaSetDevice", guard.status());
  ST_CUDA_TRY("Stream", "cudaStreamCreateWithPriority", cudaStreamCreateWithPriority(stream, cudaStreamNonBlocking, priority));
  return 0;
}

void release_stream(int device, int priority, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  (*g_pool)[{device, priority}].push_back(stream);
}

}  // namespace slimtensor_cuda

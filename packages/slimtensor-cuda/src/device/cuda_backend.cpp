// cuda_backend.cpp: AllocatorBackend over the CUDA runtime, and the per-device allocators.
//
// Note [Allocator lifetime]
// The allocators are never destroyed: at process exit the CUDA runtime may already be torn down, and
// storages freed by late destructors (Python objects, AOTI models) must still find their allocator.
#include "device/cuda_backend.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "device/error.h"
#include "device/runtime.h"

namespace slimtensor_cuda {
namespace {

const st_core_table* g_core = nullptr;

bool core_has_1_1() { return g_core && g_core->abi_minor >= 1 && g_core->struct_size >= ST_CORE_TABLE_SIZE_1_1; }

class CudaBackend final : public AllocatorBackend {
 public:
  RawMallocStatus raw_malloc(int device, size_t bytes, void** ptr, std::string* error) override {
    DeviceGuard guard(device);
    cudaError_t err = guard.status();
    if (err == cudaSuccess) err = cudaMalloc(ptr, bytes);
    if (err == cudaSuccess) return RawMallocStatus::Ok;
    cudaGetLastError();  // cudaMalloc's out-of-memory is not sticky; clear it for later calls
    *error = std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
    return err == cudaErrorMemoryAllocation ? RawMallocStatus::OutOfMemory : RawMallocStatus::Error;
  }
  void raw_free(int device, void* ptr, size_t) override {
    DeviceGuard guard(device);
    if (cudaFree(ptr) != cudaSuccess) cudaGetLastError();  // at exit the runtime may be gone: nothing to do
  }
  int event_create(int device, void** event, std::string* error) override {
    DeviceGuard guard(device);
    cudaEvent_t e = nullptr;
    const cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (err != cudaSuccess) return describe(err, error);
    *event = e;
    return 0;
  }
  void event_destroy(int device, void* event) override {
    DeviceGuard guard(device);
    if (cudaEventDestroy(static_cast<cudaEvent_t>(event)) != cudaSuccess) cudaGetLastError();
  }
  int event_record(int device, void* event, void* stream, std::string* error) override {
    DeviceGuard guard(device);
    const cudaError_t err = cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream));
    return err == cudaSuccess ? 0 : describe(err, error);
  }
  int event_query(int, void* event, bool* done, std::string* error) override {
    const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (err == cudaSuccess) {
      *done = true;
      return 0;
    }
    if (err == cudaErrorNotReady) {
      cudaGetLastError();
      *done = false;
      return 0;
    }
    return describe(err, error);
  }
  int event_synchronize(int, void* event, std::string* error) override {
    const cudaError_t err = cudaEventSynchronize(static_cast<cudaEvent_t>(event));
    return err == cudaSuccess ? 0 : describe(err, error);
  }
  void memory_info(int device, size_t* free_bytes, size_t* total_bytes) override {
    DeviceGuard guard(device);
    if (cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess) {
      cudaGetLastError();
      *free_bytes = *total_bytes = 0;
    }
  }

 private:
  static int describe(cudaError_t err, std::string* error) {
    cudaGetLastError();
    *error = std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
    return 1;
  }
};

// Forwards the allocator's events to the core (memory counters as plugin_bytes, and the trace).
class CoreObserver final : public AllocatorObserver {
 public:
  void on_segment_reserved(int device, size_t bytes) override {
    if (g_core && g_core->note_device_memory) g_core->note_device_memory(1, device, static_cast<int64_t>(bytes));
  }
  void on_segment_released(int device, size_t bytes) override {
    if (g_core && g_core->note_device_memory) g_core->note_device_memory(1, device, -static_cast<int64_t>(bytes));
  }
  void on_cache_hit(int device, size_t bytes, void* stream) override {
    if (core_has_1_1() && g_core->trace_device_event)
      g_core->trace_device_event(1, device, "cache_hit", static_cast<int64_t>(bytes), stream);
  }
  void on_raw_malloc(int device, size_t bytes, void* stream) override {
    if (core_has_1_1() && g_core->trace_device_event)
      g_core->trace_device_event(1, device, "malloc", static_cast<int64_t>(bytes), stream);
  }
};

CudaBackend* g_backend = new CudaBackend;  // Note [Allocator lifetime]
CoreObserver* g_observer = new CoreObserver;
std::atomic<DeviceCachingAllocator*> g_allocators[kMaxDevices];
std::mutex g_make_mutex;

}  // namespace

void set_core_table(const st_core_table* core) { g_core = core; }

void trace_event(int device, const char* op, int64_t bytes, void* stream) {
  if (core_has_1_1() && g_core->trace_device_event) g_core->trace_device_event(1, device, op, bytes, stream);
}

DeviceCachingAllocator* existing_allocator(int index) {
  if (index < 0 || index >= kMaxDevices) return nullptr;
  return g_allocators[index].load(std::memory_order_acquire);
}

DeviceCachingAllocator* device_allocator(int index) {
  if (DeviceCachingAllocator* a = existing_allocator(index)) return a;
  std::lock_guard<std::mutex> lock(g_make_mutex);
  if (DeviceCachingAllocator* a = g_allocators[index].load(std::memory_order_acquire)) return a;
  AllocatorConfig config;
  std::string error;
  const char* text = std::getenv(kAllocConfEnv);
  if (!parse_allocator_config(text ? text : "", &config, &error)) {
    fail("slimtensor_cuda allocator: %s", error.c_str());
    return nullptr;
  }
  auto* a = new DeviceCachingAllocator(index, g_backend, config, g_observer);  // Note [Allocator lifetime]
  g_allocators[index].store(a, std::memory_order_release);
  return a;
}

}  // namespace slimtensor_cuda

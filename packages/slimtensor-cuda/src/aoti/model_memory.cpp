// model_memory.cpp: the device memory a model's runtime takes outside the shims (Note [Model device memory]).
//
// Note [Model device memory]
// The generated code allocates its constants (the weights blob, copied in at container creation) with raw
// cudaMalloc, or with aoti_torch_cuda_caching_allocator_raw_alloc when built with the caching allocator,
// bypassing aoti_torch_empty_strided. The model binds cudaMalloc/cudaFree to this library (Note [Model
// cudart calls]); both routes make each block a slimtensor storage: a 1-D uint8 tensor from the core's
// aoti_torch_empty_strided on the current device and stream, held by one AOTI handle until the model
// frees it. So the weights come from the plugin's allocator and show in st.memory_stats("cuda") (bytes,
// storages, AOTI handles), in an active trace (an "aoti_model_malloc"/"aoti_model_free" device event beside
// the storage's alloc and free) and in the leak checks (everything is back once the model is closed).
// cudaFree of a pointer this library did not hand out goes to the CUDA runtime unchanged.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "aoti/cuda_shim.h"
#include "aoti/real_cudart.h"
#include "device/cuda_backend.h"
#include "device/error.h"
#include "device/streams.h"

using namespace slimtensor_cuda;

namespace {

struct Block {
  AtenTensorHandle handle;
  int64_t bytes;
  int device;
};

std::mutex g_mutex;
// Leaked on purpose: models may free their blocks from static destructors at exit.
auto* g_blocks = new std::unordered_map<void*, Block>;
std::atomic<int64_t> g_bytes{0};
std::atomic<int64_t> g_count{0};

int allocate(const char* fn, uint64_t nbytes, void** ret) {
  if (ret == nullptr) return fail("slimtensor_cuda %s(): the result pointer is NULL", fn);
  *ret = nullptr;
  if (nbytes == 0) return 0;
  if (nbytes > static_cast<uint64_t>(INT64_MAX)) return fail("slimtensor_cuda %s(): %llu bytes is too large", fn,
                                                              static_cast<unsigned long long>(nbytes));
  int device = 0;
  ST_CUDA_TRY(fn, "cudaGetDevice", cudaGetDevice(&device));
  const int64_t size = static_cast<int64_t>(nbytes), stride = 1;
  AtenTensorHandle h = nullptr;
  if (aoti_torch_empty_strided(1, &size, &stride, aoti_torch_dtype_uint8(), aoti_torch_device_type_cuda(), device,
                               &h) != 0)
    return fail("slimtensor_cuda %s(): allocating %lld bytes on cuda:%d failed: %s", fn,
                static_cast<long long>(size), device, slimtensor_last_error());
  void* p = nullptr;
  if (aoti_torch_get_data_ptr(h, &p) != 0) {
    aoti_torch_delete_tensor_object(h);
    return fail("slimtensor_cuda %s(): %s", fn, slimtensor_last_error());
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    (*g_blocks)[p] = Block{h, size, device};
  }
  g_bytes += size;
  g_count += 1;
  trace_event(device, "aoti_model_malloc", size, current_stream(device));
  *ret = p;
  return 0;
}

// 1 when `ptr` was ours (and is released now), 0 when it was not.
int release(void* ptr) {
  Block b{};
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_blocks->find(ptr);
    if (it == g_blocks->end()) return 0;
    b = it->second;
    g_blocks->erase(it);
  }
  g_bytes -= b.bytes;
  g_count -= 1;
  trace_event(b.device, "aoti_model_free", b.bytes, current_stream(b.device));
  aoti_torch_delete_tensor_object(b.handle);
  return 1;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) cudaError_t cudaMalloc(void** dev_ptr, size_t size) {
  if (dev_ptr == nullptr) return cudaErrorInvalidValue;
  if (allocate("cudaMalloc", size, dev_ptr) != 0) return cudaErrorMemoryAllocation;
  return cudaSuccess;
}

extern "C" __attribute__((visibility("default"))) cudaError_t cudaFree(void* dev_ptr) {
  if (dev_ptr == nullptr || release(dev_ptr)) return cudaSuccess;
  return real_cudart().free(dev_ptr);
}

AOTITorchError aoti_torch_cuda_caching_allocator_raw_alloc(uint64_t nbytes, void** ret_ptr) {
  return allocate("aoti_torch_cuda_caching_allocator_raw_alloc", nbytes, ret_ptr);
}

AOTITorchError aoti_torch_cuda_caching_allocator_raw_delete(void* ptr) {
  if (ptr == nullptr || release(ptr)) return 0;
  return fail(
      "slimtensor_cuda aoti_torch_cuda_caching_allocator_raw_delete(): %p was not allocated by "
      "aoti_torch_cuda_caching_allocator_raw_alloc (or was freed already)",
      ptr);
}

int64_t slimtensor_cuda_aoti_model_bytes(void) { return g_bytes.load(); }
int64_t slimtensor_cuda_aoti_model_blocks(void) { return g_count.load(); }

// model_cudart.cpp: the CUDA runtime names a model binds to this library, and the graph-capture state.
//
// Note [Model cudart calls]
// A model .so calls the CUDA runtime (cudaMalloc, cudaMemcpy, cudaEvent*, cudaSetDevice, ...) without a
// DT_NEEDED on libcudart. The loader gives it one DT_NEEDED, on this library (Note [Binding a CUDA model]),
// whose own dependencies are libslimtensor and the plugin's libcudart.so.13, so every such name resolves,
// searched in that order. This library defines three of them, which therefore win for the model:
//   cudaMalloc / cudaFree: the weights go through slimtensor (Note [Model device memory]);
//   cudaEventRecord: skipped while this thread captures a model run into a CUDA graph on that stream
//     (Note [Capturing a model]); otherwise the runtime's.
// Inside this library nothing calls those three by name; real_cudart() reaches the runtime's own.
// Everything else (events, copies, devices) is the runtime's, unchanged.
//
// Note [Capturing a model]
// The stock container records a "run finished" event on the model's stream after every run, and queries it
// before the next. Recorded during stream capture, the event would become a node of the graph and could no
// longer be queried (cudaErrorCapturedEvent): every later eager run would fail. So while
// slimtensor_cuda_aoti_capture_begin(stream) is in effect on the calling thread, cudaEventRecord on that
// stream does nothing: the model stays "finished" as of its last eager run, which is true, since capturing
// runs nothing. The capture itself is in relaxed mode (the container queries events and the allocator may
// call cudaMalloc while capturing); its allocations go to a graph pool (Note [Graph pools]).
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "aoti/cuda_shim.h"
#include "aoti/real_cudart.h"

namespace slimtensor_cuda {
namespace {
thread_local cudaStream_t t_capture_stream = nullptr;
thread_local bool t_capturing = false;

void* resolve(void* lib, const char* name) {
  void* f = lib ? dlsym(lib, name) : nullptr;
  if (f == nullptr) {
    std::fprintf(stderr, "slimtensor_cuda_aoti: %s not found in libcudart.so.13 (%s); reinstall nvidia-cuda-runtime\n",
                 name, dlerror());
    std::abort();
  }
  return f;
}
}  // namespace

const RealCudart& real_cudart() {
  static const RealCudart r = [] {
    // Loaded already (libslimtensor_cuda depends on it): RTLD_NOLOAD returns that instance.
    void* lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    RealCudart out{};
    out.free = reinterpret_cast<cudaError_t (*)(void*)>(resolve(lib, "cudaFree"));
    out.event_record = reinterpret_cast<cudaError_t (*)(cudaEvent_t, cudaStream_t)>(resolve(lib, "cudaEventRecord"));
    return out;
  }();
  return r;
}

bool capturing_on(cudaStream_t stream) { return t_capturing && stream == t_capture_stream; }
void set_capturing(bool on, cudaStream_t stream) {
  t_capturing = on;
  t_capture_stream = stream;
}

}  // namespace slimtensor_cuda

extern "C" __attribute__((visibility("default"))) cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (slimtensor_cuda::capturing_on(stream)) return cudaSuccess;  // Note [Capturing a model]
  return slimtensor_cuda::real_cudart().event_record(event, stream);
}

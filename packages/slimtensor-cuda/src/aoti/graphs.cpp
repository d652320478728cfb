// graphs.cpp: CUDA graphs of model runs (Notes [Capturing a model] in model_cudart.cpp, [Graph pools]).
#include <cuda_runtime_api.h>

#include <new>
#include <string>
#include <utility>
#include <vector>

#include "aoti/cuda_shim.h"
#include "aoti/graph_inputs.h"
#include "aoti/real_cudart.h"
#include "device/cuda_backend.h"
#include "device/error.h"
#include "device/runtime.h"

namespace slimtensor_cuda {
void set_capturing(bool on, cudaStream_t stream);  // model_cudart.cpp
}

using namespace slimtensor_cuda;

namespace {

struct ModelGraph {
  int device = 0;
  uint64_t pool = 0;
  cudaGraphExec_t exec = nullptr;
  // One event per stream the graph was replayed on, recorded after each replay (destroy waits for them).
  std::vector<std::pair<cudaStream_t, cudaEvent_t>> replays;
};

void release(ModelGraph* g) {
  if (g->exec) cudaGraphExecDestroy(g->exec);
  for (auto& [s, e] : g->replays) cudaEventDestroy(e);
  if (g->pool) {
    if (DeviceCachingAllocator* a = existing_allocator(g->device)) a->release_graph_pool(g->pool);
    trace_event(g->device, "graph_pool_release", 0, nullptr);
  }
  delete g;
}

}  // namespace

int32_t slimtensor_cuda_aoti_capture_begin(int32_t device, void* stream, void** graph) {
  const char* fn = "slimtensor_cuda_aoti_capture_begin";
  if (graph == nullptr) return fail("slimtensor_cuda %s(): graph is NULL", fn);
  *graph = nullptr;
  if (check_device(fn, device)) return 1;
  if (stream == nullptr || stream == static_cast<void*>(cudaStreamLegacy))
    return fail(
        "slimtensor_cuda %s(): the legacy default stream cannot be captured; capture on a slimtensor_cuda.Stream()",
        fn);
  DeviceCachingAllocator* a = device_allocator(device);
  if (a == nullptr) return 1;
  auto* g = new (std::nothrow) ModelGraph;
  if (g == nullptr) return fail("slimtensor_cuda %s(): out of host memory", fn);
  g->device = device;
  auto s = static_cast<cudaStream_t>(stream);
  {
    DeviceGuard guard(device);
    g->pool = a->begin_graph_pool(stream);
    const cudaError_t err = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
    if (err != cudaSuccess) {
      cudaGetLastError();
      release(g);
      return fail_cuda(fn, "cudaStreamBeginCapture", err);
    }
  }
  trace_event(device, "graph_pool", 0, stream);
  set_capturing(true, s);
  *graph = g;
  return 0;
}

int32_t slimtensor_cuda_aoti_capture_end(void* graph, void* stream) {
  const char* fn = "slimtensor_cuda_aoti_capture_end";
  if (graph == nullptr) return fail("slimtensor_cuda %s(): graph is NULL", fn);
  auto* g = static_cast<ModelGraph*>(graph);
  auto s = static_cast<cudaStream_t>(stream);
  set_capturing(false, nullptr);
  DeviceGuard guard(g->device);
  cudaGraph_t captured = nullptr;
  const cudaError_t err = cudaStreamEndCapture(s, &captured);
  if (DeviceCachingAllocator* a = existing_allocator(g->device)) a->end_graph_capture(g->pool);
  if (err != cudaSuccess || captured == nullptr) {
    cudaGetLastError();
    if (captured) cudaGraphDestroy(captured);
    release(g);
    return fail(
        "slimtensor_cuda %s(): the model's run cannot be captured into a CUDA graph: CUDA invalidated the capture "
        "(%s: %s); a model that synchronises the device or the host during its run (a copy to the host, a "
        "data-dependent shape, a CPU op) must run eagerly",
        fn, cudaGetErrorName(err), cudaGetErrorString(err));
  }
  const cudaError_t inst = cudaGraphInstantiate(&g->exec, captured, 0);
  cudaGraphDestroy(captured);
  if (inst != cudaSuccess) {
    cudaGetLastError();
    g->exec = nullptr;
    release(g);
    return fail_cuda(fn, "cudaGraphInstantiate", inst);
  }
  return 0;
}

// Note [Replay in one call]
// A replay of a small model is host-bound: what the GPU sees between two replays is the time the host takes to
// queue the input copies and the launch. So replay() hands every input copy and the launch to one C call (the
// Python side checks shapes, dtypes, devices and density, and keeps the sources alive across the call), and the
// copies go as one kernel (graph_inputs.cu, up to 32 inputs per launch) rather than a cudaMemcpyAsync each: on
// the H200 each cudaMemcpyAsync cost ~4.7 us of host time, more than the replay of a one-kernel graph.
int32_t slimtensor_cuda_aoti_graph_replay_inputs(void* graph, void* stream, int32_t n, void* const* dsts,
                                                 const void* const* srcs, const uint64_t* nbytes) {
  const char* fn = "slimtensor_cuda_aoti_graph_replay";
  if (graph == nullptr) return fail("slimtensor_cuda %s(): graph is NULL", fn);
  auto* g = static_cast<ModelGraph*>(graph);
  if (g->exec == nullptr) return fail("slimtensor_cuda %s(): the graph was not captured", fn);
  if (n < 0 || (n > 0 && (dsts == nullptr || srcs == nullptr || nbytes == nullptr)))
    return fail("slimtensor_cuda %s(): %d inputs with a NULL pointer or size array", fn, static_cast<int>(n));
  auto s = static_cast<cudaStream_t>(stream);
  DeviceGuard guard(g->device);
  void* to[kMaxGraphInputCopies];
  const void* from[kMaxGraphInputCopies];
  uint64_t bytes[kMaxGraphInputCopies];
  int queued = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (srcs[i] == dsts[i] || nbytes[i] == 0) continue;  // the static input itself, or nothing to copy
    if (srcs[i] == nullptr || dsts[i] == nullptr)
      return fail("slimtensor_cuda %s(): input %d has a NULL data pointer", fn, static_cast<int>(i));
    to[queued] = dsts[i], from[queued] = srcs[i], bytes[queued] = nbytes[i];
    if (++queued == kMaxGraphInputCopies) {
      ST_CUDA_TRY(fn, "the input copy kernel", launch_graph_input_copies(queued, to, from, bytes, s));
      queued = 0;
    }
  }
  if (queued > 0) ST_CUDA_TRY(fn, "the input copy kernel", launch_graph_input_copies(queued, to, from, bytes, s));
  ST_CUDA_TRY(fn, "cudaGraphLaunch", cudaGraphLaunch(g->exec, s));
  cudaEvent_t done = nullptr;
  for (auto& [rs, e] : g->replays) {
    if (rs == s) done = e;
  }
  if (done == nullptr) {
    ST_CUDA_TRY(fn, "cudaEventCreateWithFlags", cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    g->replays.emplace_back(s, done);
  }
  ST_CUDA_TRY(fn, "cudaEventRecord", real_cudart().event_record(done, s));
  return 0;
}

int32_t slimtensor_cuda_aoti_graph_replay(void* graph, void* stream) {
  return slimtensor_cuda_aoti_graph_replay_inputs(graph, stream, 0, nullptr, nullptr, nullptr);
}

void slimtensor_cuda_aoti_graph_destroy(void* graph) {
  if (graph == nullptr) return;
  auto* g = static_cast<ModelGraph*>(graph);
  DeviceGuard guard(g->device);
  for (auto& [s, e] : g->replays) cudaEventSynchronize(e);
  release(g);
}

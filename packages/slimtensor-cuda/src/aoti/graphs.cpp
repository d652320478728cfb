// graphs.cpp: CUDA graphs of model runs (Notes [Capturing a model] in model_cudart.cpp, [Graph pools]).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <mutex>
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
  cudaGraph_t graph = nullptr;  // kept while exec lives: its nodes name exec's nodes for retargeting
  cudaGraphExec_t exec = nullptr;
  // The static inputs the graph's first nodes copy into, and those copy kernels, one per kMaxGraphInputCopies
  // inputs (Note [Replay in one call]).
  std::vector<void*> inputs;
  std::vector<uint64_t> nbytes;
  std::vector<cudaGraphNode_t> copy_nodes;
  std::mutex replaying;  // one replay at a time retargets the copy nodes and launches
  // One event per stream the graph was replayed on, recorded after each replay (destroy waits for them).
  std::vector<std::pair<cudaStream_t, cudaEvent_t>> replays;
};

void release(ModelGraph* g) {
  if (g->exec) cudaGraphExecDestroy(g->exec);
  if (g->graph) cudaGraphDestroy(g->graph);
  for (auto& [s, e] : g->replays) cudaEventDestroy(e);
  if (g->pool) {
    if (DeviceCachingAllocator* a = existing_allocator(g->device)) a->release_graph_pool(g->pool);
    trace_event(g->device, "graph_pool_release", 0, nullptr);
  }
  delete g;
}

// Queues the capture's first work: one copy kernel per kMaxGraphInputCopies static inputs (sources = the static
// inputs themselves, so copying nothing until a replay retargets them), each kept as the node capture made of it.
cudaError_t capture_input_copies(ModelGraph* g, cudaStream_t s) {
  const int n = static_cast<int>(g->inputs.size());
  for (int first = 0; first < n; first += kMaxGraphInputCopies) {
    const int k = std::min(kMaxGraphInputCopies, n - first);
    void* const* dsts = g->inputs.data() + first;
    cudaError_t err = launch_graph_input_copies(k, dsts, dsts, g->nbytes.data() + first, s);
    if (err != cudaSuccess) return err;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaGraphNode_t* deps = nullptr;
    size_t ndeps = 0;
    err = cudaStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, nullptr, &ndeps);
    if (err != cudaSuccess) return err;
    if (status != cudaStreamCaptureStatusActive || ndeps != 1) return cudaErrorStreamCaptureInvalidated;
    g->copy_nodes.push_back(deps[0]);  // the stream's one dependency now: the kernel just captured
  }
  return cudaSuccess;
}

}  // namespace

int32_t slimtensor_cuda_aoti_capture_begin(int32_t device, void* stream, int32_t n, void* const* static_inputs,
                                           const uint64_t* nbytes, void** graph) {
  const char* fn = "slimtensor_cuda_aoti_capture_begin";
  if (graph == nullptr) return fail("slimtensor_cuda %s(): graph is NULL", fn);
  *graph = nullptr;
  if (check_device(fn, device)) return 1;
  if (n < 0 || (n > 0 && (static_inputs == nullptr || nbytes == nullptr)))
    return fail("slimtensor_cuda %s(): %d static inputs with a NULL pointer or size array", fn, static_cast<int>(n));
  for (int32_t i = 0; i < n; ++i) {
    if (static_inputs[i] == nullptr && nbytes[i] != 0)
      return fail("slimtensor_cuda %s(): static input %d has a NULL data pointer", fn, static_cast<int>(i));
  }
  if (stream == nullptr || stream == static_cast<void*>(cudaStreamLegacy))
    return fail(
        "slimtensor_cuda %s(): the legacy default stream cannot be captured; capture on a slimtensor_cuda.Stream()",
        fn);
  DeviceCachingAllocator* a = device_allocator(device);
  if (a == nullptr) return 1;
  auto* g = new (std::nothrow) ModelGraph;
  if (g == nullptr) return fail("slimtensor_cuda %s(): out of host memory", fn);
  g->device = device;
  try {
    g->inputs.assign(static_inputs, static_inputs + n);
    g->nbytes.assign(nbytes, nbytes + n);
  } catch (const std::bad_alloc&) {
    delete g;
    return fail("slimtensor_cuda %s(): out of host memory", fn);
  }
  auto s = static_cast<cudaStream_t>(stream);
  {
    DeviceGuard guard(device);
    cudaError_t err = prepare_graph_input_copies();
    if (err != cudaSuccess) {
      cudaGetLastError();
      delete g;
      return fail_cuda(fn, "loading the input copy kernel", err);
    }
    g->pool = a->begin_graph_pool(stream);
    err = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
    if (err != cudaSuccess) {
      cudaGetLastError();
      release(g);
      return fail_cuda(fn, "cudaStreamBeginCapture", err);
    }
    err = capture_input_copies(g, s);
    if (err != cudaSuccess) {
      cudaGetLastError();
      cudaGraph_t abandoned = nullptr;
      cudaStreamEndCapture(s, &abandoned);  // leaves the stream out of capture
      cudaGetLastError();
      if (abandoned) cudaGraphDestroy(abandoned);
      a->end_graph_capture(g->pool);
      release(g);
      return fail_cuda(fn, "capturing the input copy kernel", err);
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
  g->graph = captured;
  const cudaError_t inst = cudaGraphInstantiate(&g->exec, captured, 0);
  if (inst != cudaSuccess) {
    cudaGetLastError();
    g->exec = nullptr;
    release(g);
    return fail_cuda(fn, "cudaGraphInstantiate", inst);
  }
  // Uploaded now, on the capture's stream, so that the first replay costs what the others do.
  const cudaError_t up = cudaGraphUpload(g->exec, s);
  if (up != cudaSuccess) {
    cudaGetLastError();
    release(g);
    return fail_cuda(fn, "cudaGraphUpload", up);
  }
  return 0;
}

// Note [Replay in one call]
// A replay of a small model is host-bound: what the GPU sees between two replays is the time the host takes to
// queue the input copies and the launch. So the copies are nodes of the graph: capture begins with one copy
// kernel per 32 static inputs (their sources the static inputs themselves), and a replay points those nodes at
// the new sources (cudaGraphExecKernelNodeSetParams, host-only; launches already queued keep their arguments)
// and launches the graph: one launch per replay, where each cudaMemcpyAsync had cost ~4.7 us of host time on the
// H200 and a separate copy kernel ~2 us. The Python side is one call too (Note [Graph replay from Python] in
// slimtensor's aoti_bridge.cpp): it checks that every source is a dense tensor with its static input's dtype,
// shape and device, so a source is exactly nbytes[i] bytes; a source that is the static input itself is not
// copied.
int32_t slimtensor_cuda_aoti_graph_replay(void* graph, void* stream, int32_t n, const void* const* srcs) {
  const char* fn = "slimtensor_cuda_aoti_graph_replay";
  if (graph == nullptr) return fail("slimtensor_cuda %s(): graph is NULL", fn);
  auto* g = static_cast<ModelGraph*>(graph);
  if (g->exec == nullptr) return fail("slimtensor_cuda %s(): the graph was not captured", fn);
  if (n != static_cast<int32_t>(g->inputs.size()) || (n > 0 && srcs == nullptr))
    return fail("slimtensor_cuda %s(): %d sources for a graph of %d static inputs", fn, static_cast<int>(n),
                static_cast<int>(g->inputs.size()));
  for (int32_t i = 0; i < n; ++i) {
    if (srcs[i] == nullptr && g->nbytes[i] != 0)
      return fail("slimtensor_cuda %s(): input %d has a NULL data pointer", fn, static_cast<int>(i));
  }
  auto s = static_cast<cudaStream_t>(stream);
  std::lock_guard<std::mutex> lock(g->replaying);
  DeviceGuard guard(g->device);
  for (size_t c = 0; c < g->copy_nodes.size(); ++c) {
    const size_t first = c * kMaxGraphInputCopies;
    const int k = static_cast<int>(std::min<size_t>(kMaxGraphInputCopies, g->inputs.size() - first));
    ST_CUDA_TRY(fn, "cudaGraphExecKernelNodeSetParams (the input copies)",
                retarget_graph_input_copies(g->exec, g->copy_nodes[c], k, g->inputs.data() + first, srcs + first,
                                            g->nbytes.data() + first));
  }
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

void slimtensor_cuda_aoti_graph_destroy(void* graph) {
  if (graph == nullptr) return;
  auto* g = static_cast<ModelGraph*>(graph);
  DeviceGuard guard(g->device);
  for (auto& [s, e] : g->replays) cudaEventSynchronize(e);
  release(g);
}

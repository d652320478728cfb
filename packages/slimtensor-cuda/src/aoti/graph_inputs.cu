// graph_inputs.cu: the copy kernel of a graph replay's inputs (Note [Replay in one call] in graphs.cpp).
#include <algorithm>

#include "aoti/graph_inputs.h"

namespace slimtensor_cuda {
namespace {

struct InputCopies {
  char* dst[kMaxGraphInputCopies];
  const char* src[kMaxGraphInputCopies];
  uint64_t nbytes[kMaxGraphInputCopies];  // 0 where the source is the static input itself
};

// blockIdx.y is the input; the blocks of one row stride over its bytes, 16 at a time where both ends allow.
__global__ void copy_inputs(InputCopies c) {
  const int i = blockIdx.y;
  char* dst = c.dst[i];
  const char* src = c.src[i];
  const uint64_t n = c.nbytes[i];
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0) {
    const uint64_t vectors = n / 16;
    for (uint64_t k = first; k < vectors; k += step)
      reinterpret_cast<uint4*>(dst)[k] = reinterpret_cast<const uint4*>(src)[k];
    for (uint64_t k = vectors * 16 + first; k < n; k += step) dst[k] = src[k];
  } else {
    for (uint64_t k = first; k < n; k += step) dst[k] = src[k];
  }
}

constexpr int kThreads = 256;

// The kernel's arguments and grid. The grid depends on the static sizes only, so a retargeted node keeps the
// shape it was captured with.
cudaKernelNodeParams copy_params(int n, void* const* dsts, const void* const* srcs, const uint64_t* nbytes,
                                 InputCopies& c, void** args) {
  uint64_t most = 0;
  for (int i = 0; i < n; ++i) {
    c.dst[i] = static_cast<char*>(dsts[i]);
    c.src[i] = static_cast<const char*>(srcs[i]);
    c.nbytes[i] = srcs[i] == dsts[i] ? 0 : nbytes[i];
    most = std::max(most, nbytes[i]);
  }
  constexpr uint64_t kPerBlock = kThreads * 16;  // one 16-byte vector per thread per round
  const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>((most + kPerBlock - 1) / kPerBlock, 1024));
  args[0] = &c;
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(copy_inputs);
  p.gridDim = dim3(std::max(blocks, 1u), static_cast<unsigned>(n));
  p.blockDim = dim3(kThreads);
  p.sharedMemBytes = 0;
  p.kernelParams = args;
  p.extra = nullptr;
  return p;
}

}  // namespace

cudaError_t prepare_graph_input_copies() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, copy_inputs);
}

cudaError_t launch_graph_input_copies(int n, void* const* dsts, const void* const* srcs, const uint64_t* nbytes,
                                      cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (n > kMaxGraphInputCopies) return cudaErrorInvalidValue;
  InputCopies c;
  void* args[1];
  const cudaKernelNodeParams p = copy_params(n, dsts, srcs, nbytes, c, args);
  return cudaLaunchKernel(p.func, p.gridDim, p.blockDim, p.kernelParams, p.sharedMemBytes, stream);
}

cudaError_t retarget_graph_input_copies(cudaGraphExec_t exec, cudaGraphNode_t node, int n, void* const* dsts,
                                        const void* const* srcs, const uint64_t* nbytes) {
  if (n <= 0 || n > kMaxGraphInputCopies) return cudaErrorInvalidValue;
  InputCopies c;
  void* args[1];
  const cudaKernelNodeParams p = copy_params(n, dsts, srcs, nbytes, c, args);
  return cudaGraphExecKernelNodeSetParams(exec, node, &p);  // the arguments are copied: c may go
}

}  // namespace slimtensor_cuda

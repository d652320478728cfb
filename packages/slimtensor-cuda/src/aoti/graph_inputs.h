// graph_inputs.h: the copies of a CUDA graph replay's new inputs into its static inputs, as one kernel
// (Note [Replay in one call]).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace slimtensor_cuda {

// The most inputs one launch copies (the arrays go by value in the kernel's parameters).
inline constexpr int kMaxGraphInputCopies = 32;

// Queues dsts[i] <- srcs[i] (nbytes[i] bytes, device memory, not overlapping) for i < n, n <= kMaxGraphInputCopies,
// as one kernel on `stream`. cudaSuccess or the launch error.
cudaError_t launch_graph_input_copies(int n, void* const* dsts, const void* const* srcs, const uint64_t* nbytes,
                                      cudaStream_t stream);

}  // namespace slimtensor_cuda

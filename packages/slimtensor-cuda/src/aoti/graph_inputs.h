// graph_inputs.h: the copies of a CUDA graph replay's new inputs into its static inputs, as kernel nodes of the
// graph itself (Note [Replay in one call] in graphs.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace slimtensor_cuda {

// The most inputs one copy kernel takes (the arrays go by value in the kernel's parameters).
inline constexpr int kMaxGraphInputCopies = 32;

// Loads the copy kernel's module now: a lazily loaded kernel's first launch must not happen under capture.
cudaError_t prepare_graph_input_copies();

// Queues dsts[i] <- srcs[i] (nbytes[i] bytes of device memory, not overlapping unless equal) for i < n, n <=
// kMaxGraphInputCopies, as one kernel on `stream`; under stream capture that is one kernel node. A pair with
// srcs[i] == dsts[i] copies nothing. cudaSuccess or the launch error.
cudaError_t launch_graph_input_copies(int n, void* const* dsts, const void* const* srcs, const uint64_t* nbytes,
                                      cudaStream_t stream);

// Points `node` of `exec` (a copy kernel captured by launch_graph_input_copies with the same n, dsts and nbytes)
// at new sources for the launches of `exec` queued from now on (launches already queued keep theirs).
cudaError_t retarget_graph_input_copies(cudaGraphExec_t exec, cudaGraphNode_t node, int n, void* const* dsts,
                                        const void* const* srcs, const uint64_t* nbytes);

}  // namespace slimtensor_cuda

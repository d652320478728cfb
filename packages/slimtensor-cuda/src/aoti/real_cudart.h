// real_cudart.h: the CUDA runtime's own entry points for the names this library defines itself (Note [Model
// cudart calls]): looked up in the libcudart.so.13 already loaded, never through our own definitions.
#pragma once

#include <cuda_runtime_api.h>

namespace slimtensor_cuda {

struct RealCudart {
  cudaError_t (*free)(void*);
  cudaError_t (*event_record)(cudaEvent_t, cudaStream_t);
};
// Resolved once; a missing function is a broken installation and aborts with the reason (never silently).
const RealCudart& real_cudart();

}  // namespace slimtensor_cuda

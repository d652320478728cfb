// cuda_shim.h: the CUDA shims of torch's shim.h (torch/csrc/inductor/aoti_torch/c/shim.h, USE_CUDA part) and
// the host functions of libslimtensor_cuda_aoti.so (slimtensor_cuda_aoti_*), as this library exports them.
//
// Note [CUDA guards]
// A CUDA guard makes a device the calling thread's current CUDA device for its lifetime and restores the
// previous one when deleted (torch's c10::cuda::CUDAGuard). A stream guard also makes `stream` the
// thread's current stream of that device *in the plugin* (slimtensor_cuda::current_stream, Note [Current
// streams]), restoring the previous stream when deleted (c10::cuda::CUDAStreamGuard): everything the model
// allocates, copies or frees through the shims while its Run holds the guard is ordered on the model's
// stream. Guards nest (each restores what it found) and belong to the thread that made them.
#pragma once

#include <stdint.h>

#include "slimtensor/c/shim.h"

#define SLIMTENSOR_CUDA_AOTI_API extern "C" __attribute__((visibility("default")))

struct CUDAGuardOpaque;
using CUDAGuardHandle = CUDAGuardOpaque*;
struct CUDAStreamGuardOpaque;
using CUDAStreamGuardHandle = CUDAStreamGuardOpaque*;

SLIMTENSOR_CUDA_AOTI_API AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret_guard);
SLIMTENSOR_CUDA_AOTI_API AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard);
SLIMTENSOR_CUDA_AOTI_API AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard, int32_t device_index);
SLIMTENSOR_CUDA_AOTI_API AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index,
                                                                            CUDAStreamGuardHandle* ret_guard);
SLIMTENSOR_CUDA_AOTI_API AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard);
SLIMTENSOR_CUDA_AOTI_API AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream);
// Device memory for the model runtime (Note [Model device memory]).
SLIMTENSOR_CUDA_AOTI_API AOTITorchError aoti_torch_cuda_caching_allocator_raw_alloc(uint64_t nbytes, void** ret_ptr);
SLIMTENSOR_CUDA_AOTI_API AOTITorchError aoti_torch_cuda_caching_allocator_raw_delete(void* ptr);

// ---- host functions (the loader's, through ctypes or C++) ----------------------------------------------
// The calling thread's message for the last failed call of this library ("" if none).
SLIMTENSOR_CUDA_AOTI_API const char* slimtensor_cuda_aoti_last_error(void);
// Empties it: called before a call whose failure is read through it (Note [Plugin errors] in device/error.h).
SLIMTENSOR_CUDA_AOTI_API void slimtensor_cuda_aoti_clear_last_error(void);
// Device memory the model runtime holds through cudaMalloc / raw_alloc now (Note [Model device memory]):
// bytes and blocks, all devices.
SLIMTENSOR_CUDA_AOTI_API int64_t slimtensor_cuda_aoti_model_bytes(void);
SLIMTENSOR_CUDA_AOTI_API int64_t slimtensor_cuda_aoti_model_blocks(void);

// ---- CUDA graphs of model runs (Notes [Capturing a model], [Graph pools], [Replay in one call]) ------------
// Begins capturing the work queued on `stream` (a stream of `device`, not the legacy default stream) in
// relaxed mode, its allocations into a new graph pool. The graph starts with the copies into its n static
// inputs (static_inputs[i], nbytes[i] bytes of dense device memory each), which replay() points at new sources.
// The calling thread must run the model and call capture_end on the same stream.
SLIMTENSOR_CUDA_AOTI_API int32_t slimtensor_cuda_aoti_capture_begin(int32_t device, void* stream, int32_t n,
                                                                    void* const* static_inputs, const uint64_t* nbytes,
                                                                    void** graph);
// Ends the capture and instantiates the graph. On failure (the model did something that cannot be captured)
// the graph is destroyed, its pool released, and the error says what CUDA refused.
SLIMTENSOR_CUDA_AOTI_API int32_t slimtensor_cuda_aoti_capture_end(void* graph, void* stream);
// Launches the graph on `stream` (any stream of its device), its static input i copied from srcs[i] first:
// n is the graph's number of static inputs, and each source is dense device memory of the static input's size
// on the graph's device (srcs[i] equal to the static input copies nothing). The sources are read when the
// launch runs: keep them alive and unwritten until then (stream order). Replays of one graph are serialised;
// they share its static inputs and outputs.
SLIMTENSOR_CUDA_AOTI_API int32_t slimtensor_cuda_aoti_graph_replay(void* graph, void* stream, int32_t n,
                                                                   const void* const* srcs);
// Waits for the graph's replays, destroys it and releases its pool. NULL is ignored.
SLIMTENSOR_CUDA_AOTI_API void slimtensor_cuda_aoti_graph_destroy(void* graph);

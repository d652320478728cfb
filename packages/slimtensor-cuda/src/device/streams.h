// streams.h: the calling thread's current stream per device, and the pool streams come from.
//
// Note [Current streams]
// Each thread has one current stream per device, initially the legacy default stream (NULL), as in
// torch. ST_STREAM_CURRENT in a table call means that stream of the memory's device. cudaStreamLegacy
// (DLPack's 1) is the same stream as NULL and is stored as NULL, so the allocator sees one stream.
//
// Note [Stream pool]
// Streams handed to Python (slimtensor_cuda.Stream()) are never destroyed: when their object dies they
// go back to a pool and are handed out again. Destroying them would be unsafe: the allocator caches
// blocks per stream (Note [Stream-ordered reuse]), and a new stream with a recycled handle value could
// take a block whose work on the old stream has not run yet. It also keeps the ABI's promise (Note
// [Streams] in device_plugin.h): the core keeps the stream a storage was allocated on and frees on it, so
// every stream this plugin hands out (pool streams, NULL, cudaStreamPerThread) outlives memory allocated on
// it. A foreign stream made current through set_stream (torch's, cupy's) must outlive the memory allocated
// while it was current, as in torch.
#pragma once

#include <cuda_runtime_api.h>

namespace slimtensor_cuda {

cudaStream_t current_stream(int device);
void set_current_stream(int device, cudaStream_t stream);
// ST_STREAM_CURRENT -> the current stream of `device`; cudaStreamLegacy -> NULL; others unchanged.
cudaStream_t resolve_stream(int device, void* stream);
// A non-blocking stream of `device` from the pool (priority: lower is higher, as CUDA). 0 or an error.
int acquire_stream(int device, int priority, cudaStream_t* stream);
void release_stream(int device, int priority, cudaStream_t stream);

}  // namespace slimtensor_cuda

// cuda_backend.h: the caching allocator over CUDA (cudaMalloc, events), one allocator per device.
#pragma once

#include "allocator/caching_allocator.h"
#include "slimtensor/c/device_plugin.h"

namespace slimtensor_cuda {

// The core's table (for note_device_memory and tracing); set once by st_plugin_init.
void set_core_table(const st_core_table* core);
// Records `op` with `bytes` in an active trace of the core (nothing when there is none or the core is 1.0).
void trace_event(int device, const char* op, int64_t bytes, void* stream);
// The allocator of device `index` (made on first use; lives for the process, Note [Allocator lifetime]).
// NULL with last_error set when SLIMTENSOR_CUDA_ALLOC_CONF is malformed.
DeviceCachingAllocator* device_allocator(int index);
// For stats/empty_cache: the allocator if it exists yet, else NULL (without making one).
DeviceCachingAllocator* existing_allocator(int index);

}  // namespace slimtensor_cuda

// slimtensor/runtime/device_memory.h: pinned host memory, record_stream and pointer checks, through device plugins.
//
// Note [Pinned memory]
// Pinned (page-locked) host memory comes from a device plugin's host_allocate and goes back through its
// host_free (c/device_plugin.h). A pinned tensor is a CPU tensor whose storage borrows that memory: the
// plugin owns it (Storage.is_owning is False, its owner in traces is "pinned"), and the storage's deleter
// gives it back when the last tensor over it is gone. The pinning device is the one the caller names, or
// else the first registered, available plugin device that has host_allocate. is_pinned() knows storages
// it pinned itself without asking anyone, and asks the plugins' host_is_pinned for any other host memory
// (memory pinned by torch or cupy, a view of a numpy array over pinned memory).
//
// Note [record_stream in the core]
// Tensor.record_stream(s), as torch's: the tensor's memory is used on stream s too, so its allocator must
// not hand the memory to other work before the work queued on s has finished, even after the storage is
// freed on its own allocation stream. The core calls the plugin's record_stream with the storage's
// allocation handle. A plugin without record_stream gets a synchronisation of s instead (the work queued on
// s so far is done; work queued on s later must be ordered by the caller). Borrowed memory (DLPack,
// from_blob) is not the allocator's: as in torch, record_stream does nothing for it.
#pragma once

#include <cstdint>

#include "slimtensor/base/export.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/tensor/dims.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor::device_memory {

// The plugin that pins host memory: device type `type`, or kCPU for the default (Note [Pinned memory]).
// Throws Error(Runtime) naming `function` when that device cannot pin, or when none can (with the reasons).
SLIMTENSOR_API const DeviceEntry& pinning_device(DeviceType type, const char* function);
// An uninitialised CPU tensor with these sizes and strides over pinned memory of `pinning`.
SLIMTENSOR_API Tensor empty_pinned(IntList sizes, IntList strides, ScalarType dtype, const DeviceEntry& pinning,
                                   const char* function);
// A pinned copy of CPU tensor t (dense strides kept, as empty_like), or t itself when it is pinned already.
SLIMTENSOR_API Tensor pin_memory(const Tensor& t, const DeviceEntry& pinning, const char* function);
// Whether t's memory is pinned host memory: by the plugin of device type `type`, or (kCPU) by any plugin.
// False for device tensors.
SLIMTENSOR_API bool is_pinned(const Tensor& t, DeviceType type, const char* function);

// Note [record_stream in the core]. `stream` is a stream of t's device (from streams::from_dlpack, or the
// plugin's own handle).
SLIMTENSOR_API void record_stream(const Tensor& t, void* stream, const char* function);

// For from_blob on a plugin device: checks with the plugin's locate_pointer (where it has one) that `ptr` is
// memory of `device`, and returns the device with its index (index -1 becomes the memory's own index).
// Throws Error(Value) naming `function` when the memory is not that device's, Error(Runtime) when the
// device is unusable. The CPU, and plugins without locate_pointer, return `device` unchecked.
SLIMTENSOR_API Device check_device_pointer(Device device, const void* ptr, const char* function);

}  // namespace slimtensor::device_memory

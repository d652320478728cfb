// src/runtime/device_calls.h: the one place that calls a plugin's memory, stream and event functions.
//
// Note [Plugin minors in the core] (see slimtensor/runtime/device_registry.h): every function here speaks
// ABI 1.1 to its callers (handles with byte offsets, streams) and adapts a 1.0 plugin inside: its memory is
// addressable, so handle + offset is the address its 1.0 functions take, and its calls are synchronous, so
// streams are ignored and a stream synchronisation is its device's `synchronize` (when it has one).
//
// Failures throw Error (Memory for allocations, Runtime otherwise) whose message names `function`, the
// device, the plugin function and the plugin's own last_error. free never throws (destructors call it).
#pragma once

#include <cstdint>

#include "slimtensor/c/device_plugin.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/tensor/device.h"

namespace slimtensor::device_calls {

// --- memory ---------------------------------------------------------------------------------------
// nbytes > 0 on `index` for use on `stream`; returns the (non-null) allocation handle.
void* allocate(const DeviceEntry& e, int32_t index, uint64_t nbytes, void* stream, const char* function);
void free(const DeviceEntry& e, int32_t index, void* handle, uint64_t nbytes, void* stream) noexcept;
void copy_from_host(const DeviceEntry& e, st_memory_ref dst, const void* host, uint64_t nbytes, void* stream,
                    uint32_t flags, const char* function);
void copy_to_host(const DeviceEntry& e, void* host, st_memory_ref src, uint64_t nbytes, void* stream, uint32_t flags,
                  const char* function);
// Same device type; dst and src may have different indices. `stream` is a stream of dst's device.
void copy_on_device(const DeviceEntry& e, st_memory_ref dst, st_memory_ref src, uint64_t nbytes, void* stream,
                    const char* function);
// Whether the plugin converts and copies strided layouts itself between these two indices.
bool can_copy_strided(const DeviceEntry& e, int32_t dst_index, int32_t src_index) noexcept;
void copy_strided(const DeviceEntry& e, const st_strided_copy_v2& desc, void* stream, const char* function);
// Whether the plugin fills memory itself (else the core uploads the pattern).
bool can_fill(const DeviceEntry& e) noexcept;
void fill(const DeviceEntry& e, st_memory_ref dst, uint64_t nbytes, const void* pattern, uint32_t pattern_size,
          void* stream, const char* function);
// Optional (record_stream): false when the plugin has none (then the caller synchronises instead).
bool record_stream(const DeviceEntry& e, int32_t index, void* handle, void* stream, const char* function);

// --- host memory: pinned allocations, pointer location (optional; 1.1 only) ----------------------
// Whether the plugin pins host memory (host_allocate and host_free).
bool can_pin(const DeviceEntry& e) noexcept;
// nbytes > 0 of pinned host memory; throws Error(Memory) naming the size and the plugin's message.
void* host_allocate(const DeviceEntry& e, uint64_t nbytes, const char* function);
void host_free(const DeviceEntry& e, void* ptr, uint64_t nbytes) noexcept;
// false when the plugin has no host_is_pinned; else *pinned says whether ptr lies in pinned memory.
bool host_is_pinned(const DeviceEntry& e, const void* ptr, bool* pinned, const char* function);
// Whether the plugin can say whose memory a pointer is (locate_pointer).
bool can_locate(const DeviceEntry& e) noexcept;
// true and *index when ptr is memory of the plugin's device; false with *why (the plugin's message) if not.
bool locate_pointer(const DeviceEntry& e, const void* ptr, int32_t* index, const char** why) noexcept;

// --- streams and devices --------------------------------------------------------------------------
// The calling thread's current stream of `index` (a real stream, never ST_STREAM_CURRENT); nullptr for a
// 1.0 plugin without current_stream (its one, synchronous, stream).
void* current_stream(const DeviceEntry& e, int32_t index, const char* function);
void synchronize_stream(const DeviceEntry& e, int32_t index, void* stream, const char* function);
void synchronize_device(const DeviceEntry& e, int32_t index, const char* function);
int32_t current_device(const DeviceEntry& e, const char* function);
void set_current_device(const DeviceEntry& e, int32_t index, const char* function);

// --- events (all or none: has_events) -------------------------------------------------------------
bool has_events(const DeviceEntry& e) noexcept;
void* event_create(const DeviceEntry& e, int32_t index, const char* function);
void event_destroy(const DeviceEntry& e, int32_t index, void* event) noexcept;
void event_record(const DeviceEntry& e, int32_t index, void* event, void* stream, const char* function);
void stream_wait_event(const DeviceEntry& e, int32_t index, void* stream, void* event, const char* function);

// --- DLPack streams: false when the device defines none ------------------------------------------
bool stream_to_dlpack(const DeviceEntry& e, int32_t index, void* stream, int64_t* value, const char* function);
bool stream_from_dlpack(const DeviceEntry& e, int32_t index, int64_t value, void** stream, const char* function);

// --- statistics -----------------------------------------------------------------------------------
// Calls emit(user, key, value) for each of the allocator's statistics; false when the plugin has none.
bool allocator_stats(const DeviceEntry& e, int32_t index, void (*emit)(void*, const char*, int64_t), void* user,
                     const char* function);

}  // namespace slimtensor::device_calls

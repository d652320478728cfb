// table.cpp: the st_device_table functions of the CUDA device (ABI 1.1), and st_plugin_init.
#include "device/table.h"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "device/cuda_backend.h"
#include "device/error.h"
#include "device/runtime.h"
#include "device/streams.h"
#include "kernels/convert.cuh"
#include "kernels/copy_kernels.h"

#ifndef SLIMTENSOR_CUDA_VERSION
#  define SLIMTENSOR_CUDA_VERSION "0.0.0"
#endif

namespace slimtensor_cuda {
namespace {

// ---- helpers -------------------------------------------------------------------------------------------
// handle + byte_offset as a device address (ST_DEVICE_MEMORY_ADDRESSABLE); overflow-checked.
int address_of(const char* fn, const char* side, const st_memory_ref& ref, char** out) {
  if (ref.handle == nullptr)
    return fail("slimtensor_cuda %s(): the %s handle is NULL; expected memory from allocate_v2 or DLPack", fn, side);
  uintptr_t a = 0;
  if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(ref.handle), ref.byte_offset, &a)) {
    return fail("slimtensor_cuda %s(): %s handle %p + byte_offset %llu overflows the address space", fn, side,
                ref.handle, static_cast<unsigned long long>(ref.byte_offset));
  }
  *out = reinterpret_cast<char*>(a);
  return 0;
}

int itemsize_of(int32_t code) {
  switch (code) {
    case dt::U8:
    case dt::I8:
    case dt::BOOL:
    case 23:
    case 24:
    case 25:
    case 26:
    case 44:
    case 45: return 1;
    case dt::I16:
    case dt::F16:
    case dt::BF16:
    case dt::U16: return 2;
    case dt::I32:
    case dt::F32:
    case dt::C32:
    case dt::U32: return 4;
    case dt::I64:
    case dt::F64:
    case dt::C64:
    case dt::U64: return 8;
    case dt::C128: return 16;
    default: return 0;
  }
}

// Record an event on the producer side and make `stream` wait (cross-device ordering of peer copies).
int order_after(const char* fn, int producer_device, int consumer_device, cudaStream_t stream) {
  if (producer_device == consumer_device) return 0;
  cudaEvent_t ev = nullptr;
  {
    DeviceGuard g(producer_device);
    ST_CUDA_TRY(fn, "cudaSetDevice", g.status());
    ST_CUDA_TRY(fn, "cudaEventCreateWithFlags", cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    const cudaError_t err = cudaEventRecord(ev, current_stream(producer_device));
    if (err != cudaSuccess) {
      cudaEventDestroy(ev);
      ST_CUDA_TRY(fn, "cudaEventRecord on the source device", err);
    }
  }
  const cudaError_t err = cudaStreamWaitEvent(stream, ev, 0);
  cudaEventDestroy(ev);  // legal once the wait is queued
  ST_CUDA_TRY(fn, "cudaStreamWaitEvent", err);
  return 0;
}

// ---- the table's functions ------------------------------------------------------------------------------
const char* t_unavailable_reason(void*) { return unavailable_reason(); }

int t_device_count(void*, int32_t* count) {
  if (count == nullptr) return fail("slimtensor_cuda device_count(): count is NULL");
  *count = device_count();
  return 0;
}

int t_synchronize(void*, int32_t index) {
  if (check_device("synchronize", index)) return 1;
  DeviceGuard g(index);
  ST_CUDA_TRY("synchronize", "cudaSetDevice", g.status());
  ST_CUDA_TRY("synchronize", "cudaDeviceSynchronize", cudaDeviceSynchronize());
  return 0;
}

int t_current_stream(void*, int32_t index, void** stream) {
  if (stream == nullptr) return fail("slimtensor_cuda current_stream(): stream is NULL");
  if (check_device("current_stream", index)) return 1;
  *stream = current_stream(index);
  return 0;
}

const char* t_last_error(void*) { return last_error(); }

int t_allocate_v2(void*, int32_t index, uint64_t nbytes, void* stream, void** handle) {
  if (handle == nullptr) return fail("slimtensor_cuda allocate_v2(): handle is NULL");
  *handle = nullptr;
  if (check_device("allocate_v2", index)) return 1;
  if (nbytes == 0)
    return fail(
        "slimtensor_cuda allocate_v2(): nbytes is 0; expected > 0 (the core allocates nothing for empty storages)");
  if (nbytes > SIZE_MAX)
    return fail("slimtensor_cuda allocate_v2(): nbytes %llu exceeds size_t", static_cast<unsigned long long>(nbytes));
  DeviceCachingAllocator* a = device_allocator(index);
  if (a == nullptr) return 1;
  std::string error;
  const AllocStatus st = a->allocate(static_cast<size_t>(nbytes), resolve_stream(index, stream), handle, &error);
  if (st == AllocStatus::Ok) return 0;
  // "CUDA out of memory" is what slimtensor's Python layer (and users' eyes) look for to raise MemoryError.
  return fail("slimtensor_cuda allocate_v2(): CUDA %s%s",
              st == AllocStatus::OutOfMemory ? "" : "allocation error: ", error.c_str());
}

void t_free_v2(void*, int32_t index, void* handle, uint64_t, void* stream) {
  if (handle == nullptr || index < 0 || index >= kMaxDevices) return;
  DeviceCachingAllocator* a = existing_allocator(index);
  if (a == nullptr) {
    fail("slimtensor_cuda free_v2(): device %d has no allocator; %p was not allocated by slimtensor_cuda", index,
         handle);
    return;
  }
  std::string error;
  if (!a->free(handle, resolve_stream(index, stream), &error)) fail("slimtensor_cuda free_v2(): %s", error.c_str());
}

// One host<->device copy of `nbytes` between `host` and the device memory `device_side` (the "dst" of
// copy_from_host, the "src" of copy_to_host), stream-ordered, then synchronised unless ST_COPY_NON_BLOCKING.
int copy_with_host(const char* fn, cudaMemcpyKind kind, st_memory_ref device_side, const void* host, uint64_t nbytes,
                   void* stream, uint32_t flags) {
  if (nbytes == 0) return 0;
  if (host == nullptr) return fail("slimtensor_cuda %s(): the host address is NULL", fn);
  const bool to_device = kind == cudaMemcpyHostToDevice;
  if (check_device(fn, device_side.device_index)) return 1;
  char* d = nullptr;
  if (address_of(fn, to_device ? "dst" : "src", device_side, &d)) return 1;
  DeviceGuard g(device_side.device_index);
  ST_CUDA_TRY(fn, "cudaSetDevice", g.status());
  const cudaStream_t s = resolve_stream(device_side.device_index, stream);
  if (to_device) {
    ST_CUDA_TRY(fn, "cudaMemcpyAsync (host to device)", cudaMemcpyAsync(d, host, nbytes, kind, s));
  } else {  // copy_to_host's host buffer is its writable destination
    ST_CUDA_TRY(fn, "cudaMemcpyAsync (device to host)", cudaMemcpyAsync(const_cast<void*>(host), d, nbytes, kind, s));
  }
  if (!(flags & ST_COPY_NON_BLOCKING)) ST_CUDA_TRY(fn, "cudaStreamSynchronize", cudaStreamSynchronize(s));
  return 0;
}

int t_copy_from_host(void*, st_memory_ref dst, const void* host, uint64_t nbytes, void* stream, uint32_t flags) {
  return copy_with_host("copy_from_host", cudaMemcpyHostToDevice, dst, host, nbytes, stream, flags);
}

int t_copy_to_host(void*, void* host, st_memory_ref src, uint64_t nbytes, void* stream, uint32_t flags) {
  return copy_with_host("copy_to_host", cudaMemcpyDeviceToHost, src, host, nbytes, stream, flags);
}

int t_copy_on_device(void*, st_memory_ref dst, st_memory_ref src, uint64_t nbytes, void* stream) {
  if (nbytes == 0) return 0;
  if (check_device("copy_on_device", dst.device_index) || check_device("copy_on_device", src.device_index)) return 1;
  char *d = nullptr, *s_ptr = nullptr;
  if (address_of("copy_on_device", "dst", dst, &d) || address_of("copy_on_device", "src", src, &s_ptr)) return 1;
  DeviceGuard g(dst.device_index);
  ST_CUDA_TRY("copy_on_device", "cudaSetDevice", g.status());
  const cudaStream_t s = resolve_stream(dst.device_index, stream);
  if (!takes_peer_path(dst.device_index, src.device_index)) {
    ST_CUDA_TRY("copy_on_device", "cudaMemcpyAsync (device to device)",
                cudaMemcpyAsync(d, s_ptr, nbytes, cudaMemcpyDeviceToDevice, s));
    return 0;
  }
  // Peer copy (Note [Peer copies]): direct when the GPUs allow peer access, else the runtime stages it.
  peer_reads_directly(dst.device_index, src.device_index);
  if (order_after("copy_on_device", src.device_index, dst.device_index, s)) return 1;
  ST_CUDA_TRY("copy_on_device", "cudaMemcpyPeerAsync",
              cudaMemcpyPeerAsync(d, dst.device_index, s_ptr, src.device_index, nbytes, s));
  return 0;
}

int t_copy_strided_v2(void*, const st_strided_copy_v2* desc, void* stream) {
  const char* fn = "copy_strided_v2";
  if (desc == nullptr) return fail("slimtensor_cuda copy_strided_v2(): desc is NULL");
  if (desc->struct_size < sizeof(st_strided_copy_v2)) {
    return fail(
        "slimtensor_cuda copy_strided_v2(): desc->struct_size is %u, expected at least %zu; "
        "the core and plugin disagree on the ABI: pip install -U slimtensor-core slimtensor-cuda",
        desc->struct_size, sizeof(st_strided_copy_v2));
  }
  const int ds = itemsize_of(desc->dst_dtype), ss = itemsize_of(desc->src_dtype);
  if (ds == 0 || ss == 0)
    return fail("slimtensor_cuda copy_strided_v2(): unknown dtype code (dst %d, src %d)", desc->dst_dtype,
                desc->src_dtype);
  if (desc->dst_dtype != desc->src_dtype && !(convertible(desc->dst_dtype) && convertible(desc->src_dtype))) {
    return fail(
        "slimtensor_cuda copy_strided_v2(): no conversion from dtype %d to dtype %d (float8/float4 types are only "
        "moved, never converted); convert through the CPU if you need it",
        desc->src_dtype, desc->dst_dtype);
  }
  const int di = desc->dst.device_index, si = desc->src.device_index;
  if (check_device(fn, di) || check_device(fn, si)) return 1;
  CopyLayout l;
  std::string error;
  if (!normalize_copy(desc->ndim, desc->sizes, desc->dst_strides, desc->src_strides, &l, &error)) {
    return fail("slimtensor_cuda copy_strided_v2(): %s", error.c_str());
  }
  if (l.numel == 0) return 0;
  char *d = nullptr, *s_ptr = nullptr;
  if (address_of(fn, "dst", desc->dst, &d) || address_of(fn, "src", desc->src, &s_ptr)) return 1;
  DeviceGuard g(di);
  ST_CUDA_TRY(fn, "cudaSetDevice", g.status());
  const cudaStream_t st = resolve_stream(di, stream);
  void* staged = nullptr;
  if (takes_peer_path(di, si)) {  // Note [Peer copies]
    if (order_after(fn, si, di, st)) return 1;
    if (!peer_reads_directly(di, si)) {
      // No peer access: move the source's extent to this device first (stream-ordered), then convert here.
      int64_t extent = 0, bytes = 0;
      if (!extent_elements(l, true, &extent) || __builtin_mul_overflow(extent, static_cast<int64_t>(ss), &bytes)) {
        return fail("slimtensor_cuda copy_strided_v2(): the source extent overflows int64");
      }
      DeviceCachingAllocator* a = device_allocator(di);
      if (a == nullptr) return 1;
      if (a->allocate(static_cast<size_t>(bytes), st, &staged, &error) != AllocStatus::Ok) {
        return fail("slimtensor_cuda copy_strided_v2(): staging a peer copy: CUDA %s", error.c_str());
      }
      const cudaError_t err = cudaMemcpyPeerAsync(staged, di, s_ptr, si, static_cast<size_t>(bytes), st);
      if (err != cudaSuccess) {
        a->free(staged, st, &error);
        ST_CUDA_TRY(fn, "cudaMemcpyPeerAsync (staging)", err);
      }
      s_ptr = static_cast<char*>(staged);
    }
  }
  const cudaError_t err = launch_strided_copy(l, d, desc->dst_dtype, ds, s_ptr, desc->src_dtype, ss, st);
  if (staged) device_allocator(di)->free(staged, st, &error);  // stream-ordered: after the kernel
  ST_CUDA_TRY(fn, "launching the copy kernel", err);
  return 0;
}

int t_fill_v2(void*, st_memory_ref dst, uint64_t nbytes, const void* pattern, uint32_t pattern_size, void* stream) {
  if (pattern == nullptr) return fail("slimtensor_cuda fill_v2(): pattern is NULL");
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8 && pattern_size != 16) {
    return fail("slimtensor_cuda fill_v2(): pattern_size is %u; expected 1, 2, 4, 8 or 16", pattern_size);
  }
  if (nbytes % pattern_size != 0) {
    return fail("slimtensor_cuda fill_v2(): nbytes %llu is not a multiple of pattern_size %u",
                static_cast<unsigned long long>(nbytes), pattern_size);
  }
  if (nbytes > static_cast<uint64_t>(INT64_MAX)) return fail("slimtensor_cuda fill_v2(): nbytes exceeds int64");
  if (nbytes == 0) return 0;
  if (check_device("fill_v2", dst.device_index)) return 1;
  char* d = nullptr;
  if (address_of("fill_v2", "dst", dst, &d)) return 1;
  DeviceGuard g(dst.device_index);
  ST_CUDA_TRY("fill_v2", "cudaSetDevice", g.status());
  ST_CUDA_TRY("fill_v2", "launching the fill kernel",
              launch_fill(d, nbytes, pattern, pattern_size, resolve_stream(dst.device_index, stream)));
  return 0;
}

int t_synchronize_stream(void*, int32_t index, void* stream) {
  if (check_device("synchronize_stream", index)) return 1;
  DeviceGuard g(index);
  ST_CUDA_TRY("synchronize_stream", "cudaSetDevice", g.status());
  ST_CUDA_TRY("synchronize_stream", "cudaStreamSynchronize", cudaStreamSynchronize(resolve_stream(index, stream)));
  return 0;
}

int t_get_current_device(void*, int32_t* index) {
  if (index == nullptr) return fail("slimtensor_cuda get_current_device(): index is NULL");
  if (const char* why = unavailable_reason())
    return fail("slimtensor_cuda get_current_device(): the CUDA device is unavailable: %s", why);
  int d = 0;
  ST_CUDA_TRY("get_current_device", "cudaGetDevice", cudaGetDevice(&d));  // creates no context
  *index = d;
  return 0;
}

int t_set_current_device(void*, int32_t index) {
  if (check_device("set_current_device", index)) return 1;
  ST_CUDA_TRY("set_current_device", "cudaSetDevice", cudaSetDevice(index));
  return 0;
}

int t_event_create(void*, int32_t index, void** event) {
  if (event == nullptr) return fail("slimtensor_cuda event_create(): event is NULL");
  if (check_device("event_create", index)) return 1;
  DeviceGuard g(index);
  ST_CUDA_TRY("event_create", "cudaSetDevice", g.status());
  cudaEvent_t e = nullptr;
  ST_CUDA_TRY("event_create", "cudaEventCreateWithFlags", cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  *event = e;
  return 0;
}

void t_event_destroy(void*, int32_t, void* event) {
  if (event && cudaEventDestroy(static_cast<cudaEvent_t>(event)) != cudaSuccess) cudaGetLastError();
}

int t_event_record(void*, int32_t index, void* event, void* stream) {
  if (event == nullptr) return fail("slimtensor_cuda event_record(): event is NULL");
  if (check_device("event_record", index)) return 1;
  DeviceGuard g(index);
  ST_CUDA_TRY("event_record", "cudaSetDevice", g.status());
  ST_CUDA_TRY("event_record", "cudaEventRecord",
              cudaEventRecord(static_cast<cudaEvent_t>(event), resolve_stream(index, stream)));
  return 0;
}

int t_stream_wait_event(void*, int32_t index, void* stream, void* event) {
  if (event == nullptr) return fail("slimtensor_cuda stream_wait_event(): event is NULL");
  if (check_device("stream_wait_event", index)) return 1;
  DeviceGuard g(index);
  ST_CUDA_TRY("stream_wait_event", "cudaSetDevice", g.status());
  ST_CUDA_TRY("stream_wait_event", "cudaStreamWaitEvent",
              cudaStreamWaitEvent(resolve_stream(index, stream), static_cast<cudaEvent_t>(event), 0));
  return 0;
}

int t_event_synchronize(void*, int32_t, void* event) {
  if (event == nullptr) return fail("slimtensor_cuda event_synchronize(): event is NULL");
  ST_CUDA_TRY("event_synchronize", "cudaEventSynchronize", cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
  return 0;
}

// DLPack's kDLCUDA stream integers: 1 the legacy default stream, 2 the per-thread default, else the handle.
int t_stream_to_dlpack(void*, int32_t index, void* stream, int64_t* value) {
  if (value == nullptr) return fail("slimtensor_cuda stream_to_dlpack(): value is NULL");
  if (check_device("stream_to_dlpack", index)) return 1;  // ST_STREAM_CURRENT resolves per device
  const cudaStream_t s = resolve_stream(index, stream);
  if (s == nullptr)
    *value = 1;
  else if (s == cudaStreamPerThread)
    *value = 2;
  else
    *value = static_cast<int64_t>(reinterpret_cast<intptr_t>(s));
  return 0;
}

int t_stream_from_dlpack(void*, int32_t, int64_t value, void** stream) {
  if (stream == nullptr) return fail("slimtensor_cuda stream_from_dlpack(): stream is NULL");
  if (value == 0 || value < -1) {
    return fail(
        "slimtensor_cuda stream_from_dlpack(): stream %lld is not a CUDA stream for DLPack (0 is ambiguous and "
        "disallowed by the protocol); pass 1 (legacy default), 2 (per-thread default), a cudaStream_t, or -1 "
        "for no synchronisation",
        static_cast<long long>(value));
  }
  if (value == -1)
    return fail(
        "slimtensor_cuda stream_from_dlpack(): -1 means no synchronisation; the core handles it without a stream");
  if (value == 1)
    *stream = nullptr;
  else if (value == 2)
    *stream = cudaStreamPerThread;
  else
    *stream = reinterpret_cast<void*>(static_cast<intptr_t>(value));
  return 0;
}

int t_locate_pointer(void*, const void* ptr, int32_t* index) {
  if (index == nullptr) return fail("slimtensor_cuda locate_pointer(): index is NULL");
  if (ptr == nullptr) return fail("slimtensor_cuda locate_pointer(): the pointer is NULL");
  if (const char* why = unavailable_reason())
    return fail("slimtensor_cuda locate_pointer(): the CUDA device is unavailable: %s", why);
  cudaPointerAttributes attr{};
  const cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return fail(
        "slimtensor_cuda locate_pointer(): %p is not memory CUDA knows (%s); expected device memory of this process",
        ptr, cudaGetErrorName(err));
  }
  if (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged) {
    *index = attr.device;
    return 0;
  }
  if (attr.type == cudaMemoryTypeHost)
    return fail("slimtensor_cuda locate_pointer(): %p is pinned host memory, not device memory; use device=\"cpu\"",
                ptr);
  return fail(
      "slimtensor_cuda locate_pointer(): %p is host memory (not registered with CUDA), not device memory; use "
      "device=\"cpu\"",
      ptr);
}

// ---- pinned host memory ---------------------------------------------------------------------------------
std::mutex g_pinned_mutex;
auto* g_pinned = new std::unordered_map<const void*, uint64_t>;  // ours, for host_is_pinned without CUDA calls

int t_host_allocate(void*, uint64_t nbytes, void** ptr) {
  if (ptr == nullptr) return fail("slimtensor_cuda host_allocate(): ptr is NULL");
  *ptr = nullptr;
  if (nbytes == 0) return fail("slimtensor_cuda host_allocate(): nbytes is 0; expected > 0");
  if (const char* why = unavailable_reason()) {
    return fail("slimtensor_cuda host_allocate(): pinned memory needs a usable CUDA device: %s; use pin_memory=False",
                why);
  }
  // Portable: usable for copies with any device and any current device.
  const cudaError_t err = cudaHostAlloc(ptr, nbytes, cudaHostAllocPortable);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return fail(
        "slimtensor_cuda host_allocate(): cudaHostAlloc of %llu bytes failed: %s (%s); pin less memory or "
        "raise the locked-memory limit (ulimit -l)",
        static_cast<unsigned long long>(nbytes), cudaGetErrorName(err), cudaGetErrorString(err));
  }
  std::lock_guard<std::mutex> lock(g_pinned_mutex);
  (*g_pinned)[*ptr] = nbytes;
  return 0;
}

void t_host_free(void*, void* ptr, uint64_t) {
  if (ptr == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    g_pinned->erase(ptr);
  }
  if (cudaFreeHost(ptr) != cudaSuccess) cudaGetLastError();
}

int t_host_is_pinned(void*, const void* ptr, int32_t* pinned) {
  if (pinned == nullptr) return fail("slimtensor_cuda host_is_pinned(): pinned is NULL");
  *pinned = 0;
  if (ptr == nullptr) return 0;
  {
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    for (const auto& [base, n] : *g_pinned) {
      const uintptr_t b = reinterpret_cast<uintptr_t>(base), p = reinterpret_cast<uintptr_t>(ptr);
      if (p >= b && p - b < n) {
        *pinned = 1;
        return 0;
      }
    }
  }
  // Pinned by someone else (torch, cupy)? Only asked when CUDA is already in use: never initialise it here.
  if (unavailable_reason() != nullptr || !runtime_state().context_touched) return 0;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  *pinned = attr.type == cudaMemoryTypeHost ? 1 : 0;
  return 0;
}

int t_record_stream(void*, int32_t index, void* handle, void* stream) {
  if (check_device("record_stream", index)) return 1;
  DeviceCachingAllocator* a = existing_allocator(index);
  if (a == nullptr)
    return fail("slimtensor_cuda record_stream(): device %d has allocated nothing yet; %p is not ours", index, handle);
  std::string error;
  if (!a->record_stream(handle, resolve_stream(index, stream), &error)) {
    return fail(
        "slimtensor_cuda record_stream(): %s; record_stream applies to memory slimtensor allocated, not borrowed "
        "memory",
        error.c_str());
  }
  return 0;
}

int t_allocator_stats(void*, int32_t index, void (*emit)(void*, const char*, int64_t), void* user) {
  if (emit == nullptr) return fail("slimtensor_cuda allocator_stats(): emit is NULL");
  if (index < 0 || index >= kMaxDevices)
    return fail("slimtensor_cuda allocator_stats(): device index %d is out of range", index);
  DeviceCachingAllocator* a = existing_allocator(index);
  const AllocatorStats s = a ? a->stats() : AllocatorStats{};
#define ST_EMIT(field) emit(user, #field, s.field);
  ST_ALLOCATOR_STATS(ST_EMIT)
#undef ST_EMIT
  return 0;
}

st_device_table make_table() {
  st_device_table t;
  std::memset(&t, 0, sizeof t);  // the 1.0 memory fields stay NULL (Note [Device memory handles])
  t.struct_size = sizeof(st_device_table);
  t.abi_major = ST_PLUGIN_ABI_MAJOR;
  t.abi_minor = 1;  // the minor this table implements (docs/plugins.md), not whatever the header is at
  t.name = "cuda";
  t.device_type = 1;         // c10 CUDA
  t.dlpack_device_type = 2;  // kDLCUDA
  t.plugin_version = SLIMTENSOR_CUDA_VERSION;
  t.ctx = nullptr;
  t.unavailable_reason = t_unavailable_reason;
  t.device_count = t_device_count;
  t.synchronize = t_synchronize;
  t.current_stream = t_current_stream;
  t.last_error = t_last_error;
  t.memory_flags = ST_DEVICE_MEMORY_ADDRESSABLE;
  t.allocate_v2 = t_allocate_v2;
  t.free_v2 = t_free_v2;
  t.copy_from_host = t_copy_from_host;
  t.copy_to_host = t_copy_to_host;
  t.copy_on_device = t_copy_on_device;
  t.copy_strided_v2 = t_copy_strided_v2;
  t.fill_v2 = t_fill_v2;
  t.synchronize_stream = t_synchronize_stream;
  t.get_current_device = t_get_current_device;
  t.set_current_device = t_set_current_device;
  t.event_create = t_event_create;
  t.event_destroy = t_event_destroy;
  t.event_record = t_event_record;
  t.stream_wait_event = t_stream_wait_event;
  t.event_synchronize = t_event_synchronize;
  t.stream_to_dlpack = t_stream_to_dlpack;
  t.stream_from_dlpack = t_stream_from_dlpack;
  t.locate_pointer = t_locate_pointer;
  t.host_allocate = t_host_allocate;
  t.host_free = t_host_free;
  t.host_is_pinned = t_host_is_pinned;
  t.record_stream = t_record_stream;
  t.allocator_stats = t_allocator_stats;
  return t;
}

const st_device_table g_table = make_table();

}  // namespace

const st_device_table* device_table() { return &g_table; }

}  // namespace slimtensor_cuda

extern "C" __attribute__((visibility("default"))) int st_plugin_init(const st_core_table* core,
                                                                     const st_device_table** out) {
  using namespace slimtensor_cuda;
  if (out == nullptr) return fail("slimtensor_cuda st_plugin_init(): out is NULL");
  *out = nullptr;
  if (core == nullptr) return fail("slimtensor_cuda st_plugin_init(): the core table is NULL");
  if (core->abi_major != ST_PLUGIN_ABI_MAJOR || core->struct_size < ST_CORE_TABLE_SIZE_1_0) {
    return fail(
        "slimtensor_cuda st_plugin_init(): the core speaks plugin ABI %u.%u (table of %u bytes); this plugin needs "
        "%d.x: install matching packages (pip install -U slimtensor-core slimtensor-cuda)",
        core->abi_major, core->abi_minor, core->struct_size, ST_PLUGIN_ABI_MAJOR);
  }
  set_core_table(core);
  *out = device_table();
  return 0;
}

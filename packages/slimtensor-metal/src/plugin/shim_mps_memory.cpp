// shim_mps_memory.cpp: torch's MPS memory shims (malloc, free, memcpy of constants, buffer copies) over the
// plugin's buffers: handles are MTLBuffers of the registry, offsets are separate (Note [Metal memory]).
#include <cinttypes>
#include <cstring>

#include "checked.h"
#include "dtypes.h"
#include "errors.h"
#include "plugin.h"
#include "shim_mps.h"

using namespace slimtensor_metal;

namespace {
MetalContext* ctx_or_fail(const char* fn) {
  MetalContext* c = mps_context();
  if (!c) fail("%s: the MPS plugin is not initialised; import slimtensor and use device 'mps' first", fn);
  return c;
}
}  // namespace

extern "C" {

int32_t aoti_torch_device_type_mps(void) { return kMpsDeviceType; }

AOTITorchError aoti_torch_mps_malloc(void** buffer, size_t num_bytes) {
  const char* fn = "aoti_torch_mps_malloc()";
  return guarded(fn, [&] {
    if (!buffer) return fail("%s: needs an output pointer but got NULL", fn);  // checked before any write
    *buffer = nullptr;
    if (num_bytes == 0) return 0;  // as torch: no buffer for zero bytes
    MetalContext* c = ctx_or_fail(fn);
    if (!c) return 1;
    return c->allocate(0, num_bytes, ST_STREAM_CURRENT, buffer);
  });
}

AOTITorchError aoti_torch_mps_free(void* ptr) {
  const char* fn = "aoti_torch_mps_free()";
  return guarded(fn, [&] {
    if (!ptr) return 0;  // as torch
    MetalContext* c = ctx_or_fail(fn);
    if (!c) return 1;
    if (c->release(ptr, ST_STREAM_CURRENT))
      return fail("%s: %p is not a live buffer from aoti_torch_mps_malloc (freed twice?)", fn, ptr);
    return 0;
  });
}

AOTITorchError aoti_torch_mps_memcpy(void* buffer, size_t constant_offset, size_t bytes_read, size_t data_size,
                                     uint8_t* constants_start) {
  const char* fn = "aoti_torch_mps_memcpy()";
  return guarded(fn, [&] {
    if (data_size == 0) return 0;
    if (!constants_start) return fail("%s: needs the constants blob but got NULL", fn);
    uintptr_t src;
    if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(constants_start), bytes_read, &src))
      return fail("%s: constants_start + bytes_read (%zu) overflows", fn, bytes_read);
    MetalContext* c = ctx_or_fail(fn);
    if (!c) return 1;
    std::lock_guard<std::mutex> g(c->mutex());
    if (c->ensure_available_locked(fn)) return 1;
    Resolved d;
    if (c->resolve_handle_locked(fn, buffer, constant_offset, data_size, &d)) return 1;
    Stream* s = c->current_stream_locked();
    if (s->has_pending_work() && s->synchronize()) return 1;  // the GPU may still read the old bytes
    // Straight into the shared contents at the offset: no sub-buffer is made (pitfall 12 leaked one).
    std::memcpy(d.host, reinterpret_cast<const void*>(src), data_size);
    return 0;
  });
}

AOTITorchError aoti_torch_mps_copy_buffer(void* src_buffer, void* dst_buffer, size_t data_size, size_t src_offset,
                                          size_t dst_offset) {
  const char* fn = "aoti_torch_mps_copy_buffer()";
  return guarded(fn, [&] {
    if (data_size == 0) return 0;
    MetalContext* c = ctx_or_fail(fn);
    if (!c) return 1;
    std::lock_guard<std::mutex> g(c->mutex());
    if (c->ensure_available_locked(fn)) return 1;
    Resolved s_, d_;
    if (c->resolve_handle_locked("aoti_torch_mps_copy_buffer() source", src_buffer, src_offset, data_size, &s_) ||
        c->resolve_handle_locked("aoti_torch_mps_copy_buffer() destination", dst_buffer, dst_offset, data_size, &d_))
      return 1;
    Stream* s = c->current_stream_locked();
    if (c->encode_byte_copy_locked(s, s_, d_, data_size)) return 1;
    return s->synchronize();  // torch's copy_and_sync: the copy has finished when this returns
  });
}

}  // extern "C"

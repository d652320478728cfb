// runtime/device_calls.cpp: ABI 1.1 calls into plugins, and their 1.0 equivalents (Note [Plugin minors in the core]).
#include "runtime/device_calls.h"

#include "slimtensor/base/error.h"

namespace slimtensor::device_calls {
namespace {

bool is_1_0(const DeviceEntry& e) noexcept { return e.abi_minor == 0; }

const char* plugin_error(const DeviceEntry& e) noexcept {
  const char* m = e.table->last_error ? e.table->last_error(e.table->ctx) : nullptr;
  return m && *m ? m : "(the plugin gave no message)";
}

[[noreturn, gnu::cold]] void failed(ErrorKind kind, const DeviceEntry& e, int32_t index, const char* function,
                                    const char* what) {
  fail(kind, call_name(function), ": ", e.name, ":", index, " ", what, " failed: ", plugin_error(e));
}

inline void check(int rc, const DeviceEntry& e, int32_t index, const char* function, const char* what) {
  if (__builtin_expect(rc != 0, 0)) failed(ErrorKind::Runtime, e, index, function, what);
}

// A 1.0 plugin's memory is addressable (Note [Plugin minors in the core]): handle + offset is its address.
inline char* address_1_0(st_memory_ref r) noexcept { return static_cast<char*>(r.handle) + r.byte_offset; }

}  // namespace

void* allocate(const DeviceEntry& e, int32_t index, uint64_t nbytes, void* stream, const char* function) {
  const st_device_table& t = *e.table;
  void* handle = nullptr;
  const int rc =
      is_1_0(e) ? t.allocate(t.ctx, index, nbytes, &handle) : t.allocate_v2(t.ctx, index, nbytes, stream, &handle);
  if (rc != 0 || handle == nullptr) {
    fail(ErrorKind::Memory, call_name(function), ": ", e.name, ":", index, " could not allocate ", nbytes,
         " bytes: ", rc != 0 ? plugin_error(e) : "the plugin returned success but a NULL handle");
  }
  return handle;
}

void free(const DeviceEntry& e, int32_t index, void* handle, uint64_t nbytes, void* stream) noexcept {
  const st_device_table& t = *e.table;
  if (is_1_0(e)) {
    t.free(t.ctx, index, handle, nbytes);
  } else {
    t.free_v2(t.ctx, index, handle, nbytes, stream);
  }
}

void copy_from_host(const DeviceEntry& e, st_memory_ref dst, const void* host, uint64_t nbytes, void* stream,
                    uint32_t flags, const char* function) {
  const st_device_table& t = *e.table;
  const int rc = is_1_0(e) ? t.copy_host_to_device(t.ctx, dst.device_index, address_1_0(dst), host, nbytes)
                           : t.copy_from_host(t.ctx, dst, host, nbytes, stream, flags);
  check(rc, e, dst.device_index, function, "copy from the host");
}

void copy_to_host(const DeviceEntry& e, void* host, st_memory_ref src, uint64_t nbytes, void* stream, uint32_t flags,
                  const char* function) {
  const st_device_table& t = *e.table;
  const int rc = is_1_0(e) ? t.copy_device_to_host(t.ctx, src.device_index, host, address_1_0(src), nbytes)
                           : t.copy_to_host(t.ctx, host, src, nbytes, stream, flags);
  check(rc, e, src.device_index, function, "copy to the host");
}

void copy_on_device(const DeviceEntry& e, st_memory_ref dst, st_memory_ref src, uint64_t nbytes, void* stream,
                    const char* function) {
  const st_device_table& t = *e.table;
  const int rc = is_1_0(e) ? t.copy_device_to_device(t.ctx, dst.device_index, address_1_0(dst), src.device_index,
                                                     address_1_0(src), nbytes)
                           : t.copy_on_device(t.ctx, dst, src, nbytes, stream);
  check(rc, e, dst.device_index, function, "device-to-device copy");
}

bool can_copy_strided(const DeviceEntry& e, int32_t dst_index, int32_t src_index) noexcept {
  // 1.0's copy_strided names one index for both sides.
  return is_1_0(e) ? e.table->copy_strided != nullptr && dst_index == src_index : e.table->copy_strided_v2 != nullptr;
}

void copy_strided(const DeviceEntry& e, const st_strided_copy_v2& d, void* stream, const char* function) {
  const st_device_table& t = *e.table;
  int rc;
  if (is_1_0(e)) {
    const st_strided_copy_desc old{d.ndim,        d.sizes,     address_1_0(d.dst),
                                   d.dst_strides, d.dst_dtype, address_1_0(d.src),
                                   d.src_strides, d.src_dtype};
    rc = t.copy_strided(t.ctx, d.dst.device_index, &old);
  } else {
    rc = t.copy_strided_v2(t.ctx, &d, stream);
  }
  check(rc, e, d.dst.device_index, function, "strided copy");
}

bool can_fill(const DeviceEntry& e) noexcept {
  return is_1_0(e) ? e.table->fill != nullptr : e.table->fill_v2 != nullptr;
}

void fill(const DeviceEntry& e, st_memory_ref dst, uint64_t nbytes, const void* pattern, uint32_t pattern_size,
          void* stream, const char* function) {
  const st_device_table& t = *e.table;
  const int rc = is_1_0(e) ? t.fill(t.ctx, dst.device_index, address_1_0(dst), nbytes, pattern, pattern_size)
                           : t.fill_v2(t.ctx, dst, nbytes, pattern, pattern_size, stream);
  check(rc, e, dst.device_index, function, "fill");
}

bool record_stream(const DeviceEntry& e, int32_t index, void* handle, void* stream, const char* function) {
  if (is_1_0(e) || !e.table->record_stream) return false;
  check(e.table->record_stream(e.table->ctx, index, handle, stream), e, index, function, "record_stream");
  return true;
}

bool can_pin(const DeviceEntry& e) noexcept { return !is_1_0(e) && e.table->host_allocate && e.table->host_free; }

void* host_allocate(const DeviceEntry& e, uint64_t nbytes, const char* function) {
  void* ptr = nullptr;
  const int rc = e.table->host_allocate(e.table->ctx, nbytes, &ptr);
  if (rc != 0 || ptr == nullptr) {
    fail(ErrorKind::Memory, call_name(function), ": ", e.name, " could not pin ", nbytes,
         " bytes of host memory: ", rc != 0 ? plugin_error(e) : "the plugin returned success but a NULL pointer");
  }
  return ptr;
}

void host_free(const DeviceEntry& e, void* ptr, uint64_t nbytes) noexcept {
  e.table->host_free(e.table->ctx, ptr, nbytes);
}

bool host_is_pinned(const DeviceEntry& e, const void* ptr, bool* pinned, const char* function) {
  if (is_1_0(e) || !e.table->host_is_pinned) return false;
  int32_t p = 0;
  check(e.table->host_is_pinned(e.table->ctx, ptr, &p), e, -1, function, "host_is_pinned");
  *pinned = p != 0;
  return true;
}

bool can_locate(const DeviceEntry& e) noexcept { return !is_1_0(e) && e.table->locate_pointer; }

bool locate_pointer(const DeviceEntry& e, const void* ptr, int32_t* index, const char** why) noexcept {
  *index = -1;
  if (e.table->locate_pointer(e.table->ctx, ptr, index) == 0) return true;
  *why = plugin_error(e);
  return false;
}

void* current_stream(const DeviceEntry& e, int32_t index, const char* function) {
  const st_device_table& t = *e.table;
  if (!t.current_stream) return nullptr;  // only a 1.0 plugin (1.1 requires it): one synchronous stream
  void* stream = nullptr;
  check(t.current_stream(t.ctx, index, &stream), e, index, function, "current_stream");
  if (stream == ST_STREAM_CURRENT) {
    fail(ErrorKind::Runtime, call_name(function), ": ", e.name, ":", index,
         " current_stream returned "
         "ST_STREAM_CURRENT instead of a real stream; the plugin is broken: report it to its authors");
  }
  return stream;
}

void synchronize_stream(const DeviceEntry& e, int32_t index, void* stream, const char* function) {
  const st_device_table& t = *e.table;
  if (is_1_0(e)) {
    // Its copies are synchronous; a device-wide synchronize, where it has one, covers any work it queues.
    if (t.synchronize) check(t.synchronize(t.ctx, index), e, index, function, "synchronize");
    return;
  }
  check(t.synchronize_stream(t.ctx, index, stream), e, index, function, "synchronize_stream");
}

void synchronize_device(const DeviceEntry& e, int32_t index, const char* function) {
  const st_device_table& t = *e.table;
  if (t.synchronize) check(t.synchronize(t.ctx, index), e, index, function, "synchronize");
}

int32_t current_device(const DeviceEntry& e, const char* function) {
  if (is_1_0(e)) return 0;  // ABI 1.0 has no current device: index 0, as before 1.1
  int32_t index = -1;
  check(e.table->get_current_device(e.table->ctx, &index), e, -1, function, "get_current_device");
  if (index < 0 || index > INT16_MAX) {
    fail(ErrorKind::Runtime, call_name(function), ": ", e.name, " get_current_device returned index ", index,
         ", which is not a device index; the plugin is broken: report it to its authors");
  }
  return index;
}

void set_current_device(const DeviceEntry& e, int32_t index, const char* function) {
  if (is_1_0(e)) {
    ST_CHECK(index == 0, Runtime, call_name(function), ": '", e.name,
             "' is a device-plugin ABI 1.0 plugin, "
             "which has no current device (always index 0); pass the index explicitly ('",
             e.name, ":", index, "') or upgrade the plugin");
    return;
  }
  check(e.table->set_current_device(e.table->ctx, index), e, index, function, "set_current_device");
}

bool has_events(const DeviceEntry& e) noexcept { return !is_1_0(e) && e.table->event_create != nullptr; }

void* event_create(const DeviceEntry& e, int32_t index, const char* function) {
  void* event = nullptr;
  check(e.table->event_create(e.table->ctx, index, &event), e, index, function, "event_create");
  return event;
}

void event_destroy(const DeviceEntry& e, int32_t index, void* event) noexcept {
  e.table->event_destroy(e.table->ctx, index, event);
}

void event_record(const DeviceEntry& e, int32_t index, void* event, void* stream, const char* function) {
  check(e.table->event_record(e.table->ctx, index, event, stream), e, index, function, "event_record");
}

void stream_wait_event(const DeviceEntry& e, int32_t index, void* stream, void* event, const char* function) {
  check(e.table->stream_wait_event(e.table->ctx, index, stream, event), e, index, function, "stream_wait_event");
}

bool stream_to_dlpack(const DeviceEntry& e, int32_t index, void* stream, int64_t* value, const char* function) {
  if (is_1_0(e) || !e.table->stream_to_dlpack) return false;
  check(e.table->stream_to_dlpack(e.table->ctx, index, stream, value), e, index, function, "stream_to_dlpack");
  return true;
}

bool stream_from_dlpack(const DeviceEntry& e, int32_t index, int64_t value, void** stream, const char* function) {
  if (is_1_0(e) || !e.table->stream_from_dlpack) return false;
  check(e.table->stream_from_dlpack(e.table->ctx, index, value, stream), e, index, function, "stream_from_dlpack");
  return true;
}

bool allocator_stats(const DeviceEntry& e, int32_t index, void (*emit)(void*, const char*, int64_t), void* user,
                     const char* function) {
  if (is_1_0(e) || !e.table->allocator_stats) return false;
  check(e.table->allocator_stats(e.table->ctx, index, emit, user), e, index, function, "allocator_stats");
  return true;
}

}  // namespace slimtensor::device_calls

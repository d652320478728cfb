// runtime/core_table.cpp: the functions the core lends plugins: itemsizes, exact host conversions, memory
// accounting and tracing of plugin memory, the core's last error and its exported C symbols.
//
// Note [Core table]
// Plugins call these from any thread (a stream's worker, a destructor), so none of them throws: failures
// return non-zero and leave a thread-local message for core_last_error (the buffer of slimtensor_last_error). convert
// and convert_strided are the CPU copy_'s own kernels (plan_copy_dims + run_cpu_copy, Note [Conversion rules]), never a
// second set of conversion rules; they touch no storage, counter or trace.
#include "runtime/core_table.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "aoti/handle.h"
#include "copy/copy_kernels.h"
#include "copy/copy_plan.h"
#include "layout/layout.h"
#include "runtime/counters.h"
#include "runtime/shared_library.h"
#include "slimtensor/base/checked_math.h"
#include "slimtensor/base/error.h"
#include "slimtensor/runtime/events.h"
#include "slimtensor/tensor/scalar_type.h"

namespace slimtensor {
namespace {

// The message goes to the thread's C-ABI error buffer (the one slimtensor_last_error reads): no TLS of its
// own, since libslimtensor's TLS must fit in the static TLS that dlopen leaves (Note [Per-thread counters]).
int core_fail(const std::string& message) noexcept {
  std::snprintf(aoti::last_error_buffer(), 1024, "%s", message.c_str());
  return 1;
}

// Runs fn, turning any exception into a non-zero return with the message kept (Note [Core table]).
template <typename Fn>
int guarded(Fn&& fn) noexcept {
  try {
    fn();
    return 0;
  } catch (const std::exception& e) {
    return core_fail(e.what());
  } catch (...) {
    return core_fail("unknown C++ exception");
  }
}

const char* core_last_error() { return aoti::last_error_buffer(); }

int32_t core_itemsize(int32_t code) {
  const ScalarTypeInfo* i = scalar_type_info(code);
  return i ? i->itemsize : 0;
}

// The dtype of a code, checked, with conversions allowed between the two.
void check_pair(const char* fn, int32_t dst_code, int32_t src_code, ScalarType* dst, ScalarType* src) {
  const ScalarTypeInfo* d = scalar_type_info(dst_code);
  const ScalarTypeInfo* s = scalar_type_info(src_code);
  ST_CHECK(d && s, Value, fn, ": dtype code ", d ? src_code : dst_code,
           " is not a c10 ScalarType that "
           "slimtensor knows; pass c10 codes (6 float32, 15 bfloat16, ...)");
  *dst = static_cast<ScalarType>(dst_code);
  *src = static_cast<ScalarType>(src_code);
  ST_CHECK(*dst == *src || (d->convertible && s->convertible), Value, fn, ": conversion from ", s->name, " to ",
           d->name,
           " is not supported (float8/float4 types only move between tensors of the same dtype); "
           "copy their bytes as uint8");
}

int core_convert(void* dst, int32_t dst_dtype, const void* src, int32_t src_dtype, uint64_t count) {
  return guarded([&] {
    const char* fn = "st_core_table.convert()";
    ScalarType dt, stp;
    check_pair(fn, dst_dtype, src_dtype, &dt, &stp);
    if (count == 0) return;
    ST_CHECK(dst && src, Value, fn, ": dst or src is NULL with ", count, " elements; pass host buffers");
    int64_t dst_bytes = 0, src_bytes = 0;
    ST_CHECK(count <= static_cast<uint64_t>(INT64_MAX) &&
                 !mul_overflows(static_cast<int64_t>(count), itemsize(dt), &dst_bytes) &&
                 !mul_overflows(static_cast<int64_t>(count), itemsize(stp), &src_bytes),
             Value, fn, ": ", count, " elements overflow int64 bytes");
    if (dt == stp) {
      std::memmove(dst, src, static_cast<size_t>(dst_bytes));  // same dtype: a byte copy
      return;
    }
    CpuCopyPlan p;
    p.ndim = 1;
    p.sizes[0] = static_cast<int64_t>(count);
    p.dst_strides[0] = itemsize(dt);
    p.src_strides[0] = itemsize(stp);
    p.dst = static_cast<char*>(dst);
    p.src = static_cast<const char*>(src);
    p.dst_type = dt;
    p.src_type = stp;
    run_cpu_copy(p);
  });
}

int core_convert_strided(const st_strided_copy_v2* desc) {
  return guarded([&] {
    const char* fn = "st_core_table.convert_strided()";
    ST_CHECK(desc != nullptr, Value, fn, ": desc is NULL");
    ST_CHECK(desc->struct_size >= sizeof(st_strided_copy_v2), Value, fn, ": desc->struct_size is ", desc->struct_size,
             " but st_strided_copy_v2 has ", sizeof(st_strided_copy_v2),
             " bytes; set it to sizeof(st_strided_copy_v2)");
    const int n = desc->ndim;
    ST_CHECK(n >= 0 && n <= kMaxCopyDims, Value, fn, ": ndim must be in [0, ", kMaxCopyDims, "] but is ", n);
    ST_CHECK(n == 0 || (desc->sizes && desc->dst_strides && desc->src_strides), Value, fn,
             ": sizes, dst_strides and src_strides must not be NULL when ndim > 0");
    ScalarType dt, stp;
    check_pair(fn, desc->dst_dtype, desc->src_dtype, &dt, &stp);
    int64_t numel = 1;
    for (int d = 0; d < n; ++d) {
      ST_CHECK(desc->sizes[d] >= 0 && desc->dst_strides[d] >= 0 && desc->src_strides[d] >= 0, Value, fn,
               ": sizes and strides must be >= 0 but dim ", d, " has size ", desc->sizes[d], ", dst stride ",
               desc->dst_strides[d], ", src stride ", desc->src_strides[d]);
      ST_CHECK(!mul_overflows(numel, desc->sizes[d], &numel), Value, fn, ": the number of elements overflows int64");
    }
    if (numel == 0) return;
    // The byte extents must fit, so the kernels' offset arithmetic cannot wrap.
    storage_bytes_needed(IntList(desc->sizes, n), IntList(desc->dst_strides, n), 0, itemsize(dt), fn);
    storage_bytes_needed(IntList(desc->sizes, n), IntList(desc->src_strides, n), 0, itemsize(stp), fn);
    ST_CHECK(internal_overlap(desc->sizes, desc->dst_strides, n) != Overlap::Yes, Value, fn,
             ": two elements of the destination share memory (a stride of 0 or overlapping strides); the "
             "destination must not overlap itself");
    ST_CHECK(desc->dst.handle && desc->src.handle, Value, fn,
             ": dst.handle or src.handle is NULL; pass host "
             "addresses (byte_offset is added to them)");
    CpuCopyPlan p;
    plan_copy_dims(n, desc->sizes, desc->dst_strides, itemsize(dt), desc->src_strides, itemsize(stp), p);
    p.dst = static_cast<char*>(desc->dst.handle) + desc->dst.byte_offset;
    p.src = static_cast<const char*>(desc->src.handle) + desc->src.byte_offset;
    p.dst_type = dt;
    p.src_type = stp;
    run_cpu_copy(p);
  });
}

bool valid_type(int32_t device_type) noexcept { return device_type >= 0 && device_type < kMaxDeviceTypes; }

void trace_device(int32_t device_type, int32_t index, const char* op, int64_t bytes, void* stream) noexcept {
  events::emit(EventKind::DeviceEvent, [&](Event& e) {
    e.device = Device{static_cast<DeviceType>(device_type), static_cast<int16_t>(index)};
    e.bytes = bytes;
    e.op = op ? op : "";
    e.stream = reinterpret_cast<uintptr_t>(stream);
  });
}

void core_note_device_memory(int32_t device_type, int32_t index, int64_t bytes) {
  if (!valid_type(device_type) || index < -1 || index > INT16_MAX) return;  // nothing to fail to: ignored
  counters::plugin_memory(static_cast<DeviceType>(device_type), bytes);
  if (events::tracing_active()) trace_device(device_type, index, "device_memory", bytes, nullptr);
}

void core_trace_device_event(int32_t device_type, int32_t index, const char* op, int64_t bytes, void* stream) {
  if (!events::tracing_active() || !valid_type(device_type) || index < -1 || index > INT16_MAX) return;
  trace_device(device_type, index, op, bytes, stream);
}

// The core's own exported C functions (Note [Core table]): looked up in libslimtensor itself, never in the
// process's global scope, and only the aoti_torch_* and slimtensor_* names.
void* core_symbol(const char* name) {
  if (!name || (std::strncmp(name, "aoti_torch_", 11) != 0 && std::strncmp(name, "slimtensor_", 11) != 0)) {
    core_fail(std::string("st_core_table.core_symbol(): '") + (name ? name : "(null)") +
              "' is not an exported core function; only aoti_torch_* and slimtensor_* names are looked up");
    return nullptr;
  }
  static void* const self = [] {
    const std::string path = core_library_path();
    if (path.empty()) return static_cast<void*>(nullptr);
    return dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);  // already loaded: us
  }();
  void* sym = self ? dlsym(self, name) : nullptr;
  if (!sym) core_fail(std::string("st_core_table.core_symbol(): libslimtensor exports no function '") + name + "'");
  return sym;
}

const st_core_table kCoreTable = {
    sizeof(st_core_table),   ST_PLUGIN_ABI_MAJOR,     ST_PLUGIN_ABI_MINOR, "0.1.0",
    core_itemsize,           core_note_device_memory, core_convert,        core_convert_strided,
    core_trace_device_event, core_last_error,         core_symbol,
};

}  // namespace

const st_core_table& core_table() noexcept { return kCoreTable; }

}  // namespace slimtensor

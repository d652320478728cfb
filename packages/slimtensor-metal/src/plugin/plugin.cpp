// plugin.cpp: the device table of the Metal plugin over MetalContext, and its init (Note [MPS plugin context]).
#include "plugin.h"

#include <atomic>
#include <cstring>

#include "dtypes.h"
#include "errors.h"

#ifndef SLIMTENSOR_METAL_VERSION
#  define SLIMTENSOR_METAL_VERSION "0.0.0"
#endif

namespace slimtensor_metal {
namespace {

std::atomic<MetalContext*> g_context{nullptr};

// The ABI minor this plugin implements and needs from the core: 1.1 (opaque handles, streams, core_symbol).
// Written out, not ST_PLUGIN_ABI_MINOR: a newer header must not make the table claim fields it never filled.
constexpr uint16_t kAbiMinor = 1;

MetalContext* C(void* ctx) { return static_cast<MetalContext*>(ctx); }

const char* t_unavailable(void* ctx) { return C(ctx)->unavailable_reason(); }
int t_device_count(void* ctx, int32_t* n) {
  return guarded("device_count()", [&] { return C(ctx)->device_count(n); });
}
int t_synchronize(void* ctx, int32_t index) {
  return guarded("synchronize()", [&] { return C(ctx)->synchronize_all(index); });
}
int t_current_stream(void* ctx, int32_t index, void** s) {
  return guarded("current_stream()", [&] { return C(ctx)->current_stream(index, s); });
}
const char* t_last_error(void*) { return last_error(); }
int t_allocate(void* ctx, int32_t index, uint64_t nbytes, void* stream, void** handle) {
  return guarded("allocate_v2()", [&] { return C(ctx)->allocate(index, nbytes, stream, handle); });
}
void t_free(void* ctx, int32_t index, void* handle, uint64_t nbytes, void* stream) {
  (void)guarded("free_v2()", [&] {
    C(ctx)->free_buffer(index, handle, nbytes, stream);
    return 0;
  });
}
int t_from_host(void* ctx, st_memory_ref dst, const void* host, uint64_t n, void* stream, uint32_t) {
  // ST_COPY_NON_BLOCKING is allowed to be ignored: the copy always completes (Note [Streams]).
  return guarded("copy_from_host()", [&] { return C(ctx)->copy_from_host(dst, host, n, stream); });
}
int t_to_host(void* ctx, void* host, st_memory_ref src, uint64_t n, void* stream, uint32_t) {
  return guarded("copy_to_host()", [&] { return C(ctx)->copy_to_host(host, src, n, stream); });
}
int t_on_device(void* ctx, st_memory_ref dst, st_memory_ref src, uint64_t n, void* stream) {
  return guarded("copy_on_device()", [&] { return C(ctx)->copy_on_device(dst, src, n, stream); });
}
int t_strided(void* ctx, const st_strided_copy_v2* d, void* stream) {
  return guarded("copy_strided_v2()", [&] { return C(ctx)->copy_strided(d, stream); });
}
int t_fill(void* ctx, st_memory_ref dst, uint64_t n, const void* pattern, uint32_t psize, void* stream) {
  return guarded("fill_v2()", [&] { return C(ctx)->fill(dst, n, pattern, psize, stream); });
}
int t_sync_stream(void* ctx, int32_t index, void* stream) {
  return guarded("synchronize_stream()", [&] { return C(ctx)->synchronize_stream(index, stream); });
}
int t_get_dev(void* ctx, int32_t* index) { return C(ctx)->get_current_device(index); }
int t_set_dev(void* ctx, int32_t index) { return C(ctx)->set_current_device(index); }
int t_ev_create(void* ctx, int32_t index, void** e) {
  return guarded("event_create()", [&] { return C(ctx)->event_create(index, e); });
}
void t_ev_destroy(void* ctx, int32_t index, void* e) {
  (void)guarded("event_destroy()", [&] {
    C(ctx)->event_destroy(index, e);
    return 0;
  });
}
int t_ev_record(void* ctx, int32_t index, void* e, void* s) {
  return guarded("event_record()", [&] { return C(ctx)->event_record(index, e, s); });
}
int t_wait_event(void* ctx, int32_t index, void* s, void* e) {
  return guarded("stream_wait_event()", [&] { return C(ctx)->stream_wait_event(index, s, e); });
}
int t_ev_sync(void* ctx, int32_t index, void* e) {
  return guarded("event_synchronize()", [&] { return C(ctx)->event_synchronize(index, e); });
}
int t_locate(void* ctx, const void* p, int32_t* index) {
  return guarded("locate_pointer()", [&] { return C(ctx)->locate_pointer(p, index); });
}
int t_stats(void* ctx, int32_t index, void (*emit)(void*, const char*, int64_t), void* user) {
  return guarded("allocator_stats()", [&] { return C(ctx)->allocator_stats(index, emit, user); });
}

st_device_table g_table;

}  // namespace

void fill_device_table(st_device_table* t, MetalContext* ctx) {
  std::memset(t, 0, sizeof *t);
  t->struct_size = sizeof(st_device_table);
  t->abi_major = ST_PLUGIN_ABI_MAJOR;
  t->abi_minor = kAbiMinor;
  t->name = "mps";
  t->device_type = kMpsDeviceType;
  t->dlpack_device_type = kDLMetal;
  t->plugin_version = SLIMTENSOR_METAL_VERSION;
  t->ctx = ctx;
  t->unavailable_reason = t_unavailable;
  t->device_count = t_device_count;
  // ABI 1.0 memory functions stay NULL: a 1.1 plugin (Note [Device memory handles]).
  t->synchronize = t_synchronize;
  t->current_stream = t_current_stream;
  t->last_error = t_last_error;
  t->memory_flags = ST_DEVICE_MEMORY_HOST_VISIBLE;  // shared storage; handles are MTLBuffer objects, not addresses
  t->allocate_v2 = t_allocate;
  t->free_v2 = t_free;
  t->copy_from_host = t_from_host;
  t->copy_to_host = t_to_host;
  t->copy_on_device = t_on_device;
  t->copy_strided_v2 = t_strided;
  t->fill_v2 = t_fill;
  t->synchronize_stream = t_sync_stream;
  t->get_current_device = t_get_dev;
  t->set_current_device = t_set_dev;
  t->event_create = t_ev_create;
  t->event_destroy = t_ev_destroy;
  t->event_record = t_ev_record;
  t->stream_wait_event = t_wait_event;
  t->event_synchronize = t_ev_sync;
  // kDLMetal defines no stream: stream_to_dlpack / stream_from_dlpack stay NULL.
  t->locate_pointer = t_locate;
  // Unified memory: no pinned host memory, no record_stream (frees are stream-ordered already).
  t->allocator_stats = t_stats;
}

MetalContext* mps_context() { return g_context.load(); }

MetalContext* set_mps_context(MetalContext* ctx) { return g_context.exchange(ctx); }

int plugin_init(const st_core_table* core, const st_device_table** out, const mtlb_api* api, const char* unavailable) {
  if (!out) return fail("st_plugin_init(): needs an output pointer but got NULL");
  if (!core) return fail("st_plugin_init(): needs the core's table but got NULL");
  if (core->abi_major != ST_PLUGIN_ABI_MAJOR)
    return fail(
        "st_plugin_init(): slimtensor-metal speaks device-plugin ABI %d.x but the core speaks %d.x; install "
        "matching versions: pip install -U slimtensor-core slimtensor-metal",
        ST_PLUGIN_ABI_MAJOR, core->abi_major);
  if (core->abi_minor < kAbiMinor || core->struct_size < ST_CORE_TABLE_SIZE_1_1)
    return fail(
        "st_plugin_init(): slimtensor-metal needs device-plugin ABI %d.%d (opaque Metal buffer handles) but "
        "the core has %d.%d; upgrade the core: pip install -U slimtensor-core",
        ST_PLUGIN_ABI_MAJOR, kAbiMinor, core->abi_major, core->abi_minor);
  MetalContext* ctx = mps_context();
  if (!ctx) {
    ctx = new (std::nothrow) MetalContext(api, core, unavailable);
    if (!ctx) return fail("st_plugin_init(): out of host memory");
    MetalContext* expected = nullptr;
    if (!g_context.compare_exchange_strong(expected, ctx)) {  // another thread won: use its context
      delete ctx;
      ctx = expected;
    }
  }
  fill_device_table(&g_table, ctx);
  *out = &g_table;
  return 0;
}

}  // namespace slimtensor_metal

/* hostdev_device.c: the hostdev ABI 1.1 device table: argument checks, counters, and the operations it queues
 * on its streams (Note [hostdev], hostdev.h). */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostdev.h"

#ifndef HOSTDEV_VERSION
#  define HOSTDEV_VERSION "0.0.0"
#endif

_Static_assert(HOSTDEV_DEVICE_COUNT == 2, "t_current in hostdev_streams.c is initialised for two devices");

/* Note [hostdev counters]
 * Counters are atomics: the core calls the table from several threads (copies release the GIL), and the
 * stream workers count too. live_bytes counts the bytes the core asked for, from allocate_v2 to free_v2, so
 * it equals the core's own live_bytes for the device; live_tokens counts the allocations whose memory is
 * still held, including the freed ones whose stream has not reached the free yet (pending_frees). */
static _Atomic int64_t g_counters[HOSTDEV_DEVICE_COUNT][HD_C_COUNT];
static const st_core_table* _Atomic g_core;    /* the first core table given to hostdev_make_table */
static const st_device_table* _Atomic g_table; /* the real device's, once registered */
static _Thread_local char g_last_error[640];
static _Thread_local int t_raw_call;

void hostdev_count(int32_t index, hostdev_counter which, int64_t delta) {
  const int32_t i = (index >= 0 && index < HOSTDEV_DEVICE_COUNT) ? index : 0;
  atomic_fetch_add(&g_counters[i][which], delta);
}

int hostdev_fail(const char* format, ...) {
  char message[sizeof g_last_error];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args); /* format may name g_last_error itself */
  va_end(args);
  memcpy(g_last_error, message, sizeof message);
  return 1;
}

const char* hostdev_last_error(void) { return g_last_error; }
const st_core_table* hostdev_core(void) { return g_core; }
const st_device_table* hostdev_table(void) { return g_table; }
void hostdev_set_raw_call(int raw) { t_raw_call = raw; }
void hostdev_publish_table(const st_device_table* table) { g_table = table; }

int hostdev_bad_handle(int32_t index, const char* function, const char* format, ...) {
  char what[480];
  va_list args;
  va_start(args, format);
  vsnprintf(what, sizeof what, format, args);
  va_end(args);
  hostdev_count(index, t_raw_call ? HD_C_BAD_HANDLES_RAW : HD_C_BAD_HANDLES, 1);
  return hostdev_fail("hostdev %s(): bad device memory handle: %s", function, what);
}

/* Counts a failed call on device `index` and passes rc through. */
static int done(int32_t index, int rc) {
  if (rc) hostdev_count(index, HD_C_ERRORS, 1);
  return rc;
}

static int check_index(const char* function, int32_t index) {
  if (index < 0 || index >= HOSTDEV_DEVICE_COUNT) {
    return hostdev_fail("hostdev %s(): device index %d is out of range; hostdev has devices 0..%d", function,
                        (int)index, HOSTDEV_DEVICE_COUNT - 1);
  }
  return 0;
}

/* ---- availability ---- */

static const char* hd_unavailable_reason(void* ctx) {
  (void)ctx;
  const char* absent = getenv(HOSTDEV_ABSENT_ENV);
  if (absent && *absent && strcmp(absent, "0") != 0) {
    return "no hostdev hardware (" HOSTDEV_ABSENT_ENV " is set; unset it to use hostdev)";
  }
  return NULL;
}

static int hd_device_count(void* ctx, int32_t* count) {
  (void)ctx;
  if (!count) return done(0, hostdev_fail("hostdev device_count(): count must not be NULL"));
  *count = HOSTDEV_DEVICE_COUNT;
  return 0;
}

static const char* hd_last_error(void* ctx) {
  (void)ctx;
  return g_last_error;
}

/* ---- memory ---- */

static int hd_allocate_v2(void* ctx, int32_t index, uint64_t nbytes, void* stream, void** handle) {
  (void)ctx;
  if (!handle) return done(index, hostdev_fail("hostdev allocate_v2(): handle must not be NULL"));
  *handle = NULL;
  if (!hostdev_stream_resolve("allocate_v2", index, stream)) return done(index, 1);
  if (nbytes == 0) return done(index, hostdev_fail("hostdev allocate_v2(): nbytes must be > 0, got 0"));
  return done(index, hostdev_memory_allocate(index, nbytes, handle));
}

static void hd_free_v2(void* ctx, int32_t index, void* handle, uint64_t nbytes, void* stream) {
  (void)ctx;
  if (!handle) return;
  if (check_index("free_v2", index)) {
    hostdev_bad_handle(0, "free_v2", "device index %d is out of range (handle %p kept)", (int)index, handle);
    return;
  }
  hd_stream* s = hostdev_stream_resolve("free_v2", index, stream);
  const int64_t slot = hostdev_memory_retire("free_v2", index, handle, nbytes);
  if (slot < 0) return; /* counted as a bad handle; nothing is freed */
  if (!s) {             /* a bad stream (counted): free once every stream of the device is idle */
    hostdev_synchronize_device("free_v2", index);
    hostdev_memory_release((uint32_t)slot, index);
    return;
  }
  /* Note [Streams]: freed after the work queued so far on `stream` and on every stream record_stream named. */
  int64_t recorded[8];
  const int n = hostdev_memory_recorded_streams((uint32_t)slot, recorded, 8);
  hd_op_args op;
  for (int k = 0; k < n; ++k) {
    hd_stream* r = hostdev_stream_by_id(recorded[k]);
    if (!r || r == s) continue;
    memset(&op, 0, sizeof op);
    op.kind = HD_OP_WAIT;
    op.counter_device = index;
    op.wait_for = r;
    op.wait_seq = hostdev_stream_enqueued(r);
    if (hostdev_enqueue(s, &op, NULL) != 0) hostdev_stream_wait("free_v2", r, UINT64_MAX);
  }
  memset(&op, 0, sizeof op);
  op.kind = HD_OP_FREE;
  op.counter_device = index;
  op.free_slot = (uint32_t)slot;
  if (hostdev_enqueue(s, &op, NULL) != 0) { /* out of host memory: wait here instead */
    hostdev_stream_wait("free_v2", s, UINT64_MAX);
    hostdev_memory_release((uint32_t)slot, index);
  }
}

static int check_flags(const char* function, uint32_t flags) {
  if (flags & ~ST_COPY_NON_BLOCKING) {
    return hostdev_fail("hostdev %s(): unknown flags 0x%x (only ST_COPY_NON_BLOCKING is defined)", function,
                        flags & ~ST_COPY_NON_BLOCKING);
  }
  return 0;
}

/* Queues a one-side host copy and, unless non-blocking, waits for it. */
static int host_copy(const char* function, st_memory_ref device, void* host, uint64_t nbytes, void* stream,
                     uint32_t flags, int to_host) {
  const int32_t index = device.device_index;
  hd_stream* s = hostdev_stream_resolve(function, index, stream);
  if (!s) return 1;
  if (check_flags(function, flags)) return 1;
  if (nbytes == 0) return 0;
  if (!host)
    return hostdev_fail("hostdev %s(): the host pointer is NULL for %llu bytes", function, (unsigned long long)nbytes);
  hd_span span;
  if (hostdev_memory_use(function, device, nbytes, &span)) return 1;
  hd_op_args op;
  memset(&op, 0, sizeof op);
  op.kind = HD_OP_COPY;
  op.counter_device = index;
  op.dst = to_host ? (unsigned char*)host : span.base;
  op.src = to_host ? span.base : (const unsigned char*)host;
  op.nbytes = nbytes;
  op.slots[0] = span.slot;
  op.nslots = 1;
  uint64_t seq;
  if (hostdev_enqueue(s, &op, &seq)) return 1;
  hostdev_count(index, to_host ? HD_C_D2H : HD_C_H2D, 1);
  if (flags & ST_COPY_NON_BLOCKING) {
    hostdev_count(index, HD_C_NON_BLOCKING, 1);
    return 0; /* the caller synchronises the stream before it touches `host` (Note [Streams]) */
  }
  return hostdev_stream_wait(function, s, seq);
}

static int hd_copy_from_host(void* ctx, st_memory_ref dst, const void* host, uint64_t nbytes, void* stream,
                             uint32_t flags) {
  (void)ctx;
  return done(dst.device_index, host_copy("copy_from_host", dst, (void*)host, nbytes, stream, flags, 0));
}

static int hd_copy_to_host(void* ctx, void* host, st_memory_ref src, uint64_t nbytes, void* stream, uint32_t flags) {
  (void)ctx;
  return done(src.device_index, host_copy("copy_to_host", src, host, nbytes, stream, flags, 1));
}

static int copy_on_device(st_memory_ref dst, st_memory_ref src, uint64_t nbytes, void* stream) {
  hd_stream* s = hostdev_stream_resolve("copy_on_device", dst.device_index, stream); /* a stream of dst's device */
  if (!s) return 1;
  if (nbytes == 0) return 0;
  hd_span d, r;
  if (hostdev_memory_use("copy_on_device", dst, nbytes, &d)) return 1;
  if (hostdev_memory_use("copy_on_device", src, nbytes, &r)) {
    hostdev_memory_unuse(d.slot);
    return 1;
  }
  hd_op_args op;
  memset(&op, 0, sizeof op);
  op.kind = HD_OP_COPY;
  op.counter_device = dst.device_index;
  op.dst = d.base;
  op.src = r.base;
  op.nbytes = nbytes;
  op.slots[0] = d.slot;
  op.slots[1] = r.slot;
  op.nslots = 2;
  if (hostdev_enqueue(s, &op, NULL)) return 1;
  hostdev_count(dst.device_index, HD_C_D2D, 1);
  return 0;
}

static int hd_copy_on_device(void* ctx, st_memory_ref dst, st_memory_ref src, uint64_t nbytes, void* stream) {
  (void)ctx;
  return done(dst.device_index, copy_on_device(dst, src, nbytes, stream));
}

static int copy_strided_v2(const st_strided_copy_v2* desc, void* stream) {
  if (!desc) return hostdev_fail("hostdev copy_strided_v2(): desc must not be NULL");
  hd_stream* s = hostdev_stream_resolve("copy_strided_v2", desc->dst.device_index, stream);
  if (!s) return 1;
  hd_op_args op;
  if (hostdev_strided_prepare(desc, &op)) return 1;
  if (op.nslots == 0) return 0; /* no elements */
  if (hostdev_enqueue(s, &op, NULL)) return 1;
  hostdev_count(desc->dst.device_index, HD_C_STRIDED, 1);
  return 0;
}

static int hd_copy_strided_v2(void* ctx, const st_strided_copy_v2* desc, void* stream) {
  (void)ctx;
  return done(desc ? desc->dst.device_index : 0, copy_strided_v2(desc, stream));
}

static int fill_v2(st_memory_ref dst, uint64_t nbytes, const void* pattern, uint32_t pattern_size, void* stream) {
  hd_stream* s = hostdev_stream_resolve("fill_v2", dst.device_index, stream);
  if (!s) return 1;
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8 && pattern_size != 16) {
    return hostdev_fail("hostdev fill_v2(): pattern_size must be 1, 2, 4, 8 or 16, got %u", pattern_size);
  }
  if (nbytes % pattern_size != 0) {
    return hostdev_fail("hostdev fill_v2(): nbytes (%llu) must be a multiple of pattern_size (%u)",
                        (unsigned long long)nbytes, pattern_size);
  }
  if (nbytes == 0) return 0;
  if (!pattern) return hostdev_fail("hostdev fill_v2(): pattern must not be NULL");
  hd_span d;
  if (hostdev_memory_use("fill_v2", dst, nbytes, &d)) return 1;
  hd_op_args op;
  memset(&op, 0, sizeof op);
  op.kind = HD_OP_FILL;
  op.counter_device = dst.device_index;
  op.dst = d.base;
  op.nbytes = nbytes;
  memcpy(op.pattern, pattern, pattern_size); /* the caller's pattern may be gone when the stream runs */
  op.pattern_size = pattern_size;
  op.slots[0] = d.slot;
  op.nslots = 1;
  if (hostdev_enqueue(s, &op, NULL)) return 1;
  hostdev_count(dst.device_index, HD_C_FILLS, 1);
  return 0;
}

static int hd_fill_v2(void* ctx, st_memory_ref dst, uint64_t nbytes, const void* pattern, uint32_t pattern_size,
                      void* stream) {
  (void)ctx;
  return done(dst.device_index, fill_v2(dst, nbytes, pattern, pattern_size, stream));
}

/* ---- synchronisation, current device and stream ---- */

static int hd_synchronize(void* ctx, int32_t index) {
  (void)ctx;
  if (check_index("synchronize", index)) return done(index, 1);
  hostdev_count(index, HD_C_SYNCHRONIZES, 1);
  return done(index, hostdev_synchronize_device("synchronize", index));
}

static int hd_synchronize_stream(void* ctx, int32_t index, void* stream) {
  (void)ctx;
  hd_stream* s = hostdev_stream_resolve("synchronize_stream", index, stream);
  if (!s) return done(index, 1);
  hostdev_count(index, HD_C_STREAM_SYNCHRONIZES, 1);
  return done(index, hostdev_stream_wait("synchronize_stream", s, UINT64_MAX));
}

static int hd_current_stream(void* ctx, int32_t index, void** stream) {
  (void)ctx;
  if (!stream) return done(index, hostdev_fail("hostdev current_stream(): stream must not be NULL"));
  if (check_index("current_stream", index)) return done(index, 1);
  hd_stream* s = hostdev_current_stream(index);
  if (!s) return done(index, 1);
  *stream = hostdev_stream_handle(s);
  return 0;
}

static int hd_get_current_device(void* ctx, int32_t* index) {
  (void)ctx;
  if (!index) return done(0, hostdev_fail("hostdev get_current_device(): index must not be NULL"));
  *index = hostdev_get_device();
  return 0;
}

static int hd_set_current_device(void* ctx, int32_t index) {
  (void)ctx;
  if (check_index("set_current_device", index)) return done(0, 1);
  hostdev_set_device(index);
  return 0;
}

/* ---- events ---- */

static int hd_event_create(void* ctx, int32_t index, void** event) {
  (void)ctx;
  if (!event) return done(index, hostdev_fail("hostdev event_create(): event must not be NULL"));
  *event = NULL;
  if (check_index("event_create", index)) return done(index, 1);
  return done(index, hostdev_event_create(index, event));
}

static void hd_event_destroy(void* ctx, int32_t index, void* event) {
  (void)ctx;
  if (!event) return;
  if (check_index("event_destroy", index)) {
    hostdev_bad_handle(0, "event_destroy", "device index %d is out of range", (int)index);
    return;
  }
  hostdev_event_destroy(index, event);
}

static int hd_event_record(void* ctx, int32_t index, void* event, void* stream) {
  (void)ctx;
  return done(index, hostdev_event_record(index, event, stream));
}

static int hd_stream_wait_event(void* ctx, int32_t index, void* stream, void* event) {
  (void)ctx;
  return done(index, hostdev_stream_wait_event(index, stream, event));
}

static int hd_event_synchronize(void* ctx, int32_t index, void* event) {
  (void)ctx;
  if (check_index("event_synchronize", index)) return done(index, 1);
  return done(index, hostdev_event_synchronize(index, event));
}

/* ---- DLPack streams (Note [hostdev DLPack streams]) ---- */

static int hd_stream_to_dlpack(void* ctx, int32_t index, void* stream, int64_t* value) {
  (void)ctx;
  if (!value) return done(index, hostdev_fail("hostdev stream_to_dlpack(): value must not be NULL"));
  hd_stream* s = hostdev_stream_resolve("stream_to_dlpack", index, stream);
  if (!s) return done(index, 1);
  if (s == hostdev_default_stream(index))
    *value = HOSTDEV_DLPACK_LEGACY_DEFAULT;
  else if (s == hostdev_per_thread_stream(index))
    *value = HOSTDEV_DLPACK_PER_THREAD_DEFAULT;
  else
    *value = hostdev_stream_id(s) + HOSTDEV_DLPACK_STREAM_BASE;
  return 0;
}

static int stream_from_dlpack(int32_t index, int64_t value, void** stream) {
  if (check_index("stream_from_dlpack", index)) return 1;
  hd_stream* s = NULL;
  if (value == HOSTDEV_DLPACK_LEGACY_DEFAULT)
    s = hostdev_default_stream(index);
  else if (value == HOSTDEV_DLPACK_PER_THREAD_DEFAULT)
    s = hostdev_per_thread_stream(index);
  else if (value >= HOSTDEV_DLPACK_STREAM_BASE)
    s = hostdev_stream_by_id(value - HOSTDEV_DLPACK_STREAM_BASE);
  else {
    return hostdev_fail(
        "hostdev stream_from_dlpack(): %lld names no hostdev stream (1: the default stream, 2: "
        "the per-thread default stream, 100 + id: stream id; -1 and 0 are for the consumer to "
        "handle, as the DLPack spec says)",
        (long long)value);
  }
  if (!s)
    return hostdev_fail("hostdev stream_from_dlpack(): no hostdev stream has the DLPack value %lld", (long long)value);
  if (hostdev_stream_device(s) != index) {
    return hostdev_fail("hostdev stream_from_dlpack(): DLPack stream %lld belongs to hostdev:%d, not hostdev:%d",
                        (long long)value, (int)hostdev_stream_device(s), (int)index);
  }
  *stream = hostdev_stream_handle(s);
  return 0;
}

static int hd_stream_from_dlpack(void* ctx, int32_t index, int64_t value, void** stream) {
  (void)ctx;
  if (!stream) return done(index, hostdev_fail("hostdev stream_from_dlpack(): stream must not be NULL"));
  return done(index, stream_from_dlpack(index, value, stream));
}

/* ---- pointers and pinned host memory ---- */

typedef struct pinned_block {
  struct pinned_block* next;
  unsigned char* ptr;
  uint64_t nbytes;
} pinned_block;
static pthread_mutex_t g_pinned_mutex = PTHREAD_MUTEX_INITIALIZER;
static pinned_block* g_pinned;
static _Atomic int64_t g_pinned_bytes, g_pinned_blocks;

/* Whether ptr lies in a host_allocate block (g_pinned_mutex held). */
static int pinned_contains(const void* ptr) {
  const uintptr_t p = (uintptr_t)ptr;
  for (pinned_block* b = g_pinned; b; b = b->next) {
    if (p >= (uintptr_t)b->ptr && p - (uintptr_t)b->ptr < b->nbytes) return 1;
  }
  return 0;
}

static int hd_locate_pointer(void* ctx, const void* ptr, int32_t* index) {
  (void)ctx;
  if (!index) return done(0, hostdev_fail("hostdev locate_pointer(): index must not be NULL"));
  char token_message[sizeof g_last_error];
  if (hostdev_memory_locate(ptr, index) == 0) return 0;
  snprintf(token_message, sizeof token_message, "%s", g_last_error);
  pthread_mutex_lock(&g_pinned_mutex);
  const int pinned = pinned_contains(ptr);
  pthread_mutex_unlock(&g_pinned_mutex);
  if (pinned) {
    return hostdev_fail("hostdev locate_pointer(): %p is pinned host memory (host_allocate), not device memory", ptr);
  }
  return hostdev_fail("%s", token_message);
}

static int hd_host_allocate(void* ctx, uint64_t nbytes, void** ptr) {
  (void)ctx;
  if (!ptr) return done(0, hostdev_fail("hostdev host_allocate(): ptr must not be NULL"));
  *ptr = NULL;
  if (nbytes == 0 || nbytes > (1ull << 40)) {
    return done(
        0, hostdev_fail("hostdev host_allocate(): nbytes must be in [1, 2^40], got %llu", (unsigned long long)nbytes));
  }
  const uint64_t rounded = (nbytes + 63) / 64 * 64;
  pinned_block* b = malloc(sizeof *b);
  unsigned char* p = b ? aligned_alloc(64, (size_t)rounded) : NULL;
  if (!p) {
    free(b);
    return done(
        0, hostdev_fail("hostdev host_allocate(): the host could not provide %llu bytes", (unsigned long long)nbytes));
  }
  b->ptr = p;
  b->nbytes = nbytes;
  pthread_mutex_lock(&g_pinned_mutex);
  b->next = g_pinned;
  g_pinned = b;
  pthread_mutex_unlock(&g_pinned_mutex);
  atomic_fetch_add(&g_pinned_bytes, (int64_t)nbytes);
  atomic_fetch_add(&g_pinned_blocks, 1);
  *ptr = p;
  return 0;
}

static void hd_host_free(void* ctx, void* ptr, uint64_t nbytes) {
  (void)ctx;
  if (!ptr) return;
  pthread_mutex_lock(&g_pinned_mutex);
  pinned_block** link = &g_pinned;
  while (*link && (*link)->ptr != ptr) link = &(*link)->next;
  pinned_block* b = *link;
  if (b) *link = b->next;
  pthread_mutex_unlock(&g_pinned_mutex);
  if (!b) {
    hostdev_bad_handle(0, "host_free", "%p was not returned by host_allocate (or was freed already)", ptr);
    return;
  }
  if (b->nbytes != nbytes) {
    hostdev_bad_handle(0, "host_free", "%p holds %llu bytes but host_free says %llu (freed anyway)", ptr,
                       (unsigned long long)b->nbytes, (unsigned long long)nbytes);
  }
  atomic_fetch_sub(&g_pinned_bytes, (int64_t)b->nbytes);
  atomic_fetch_sub(&g_pinned_blocks, 1);
  free(b->ptr);
  free(b);
}

static int hd_host_is_pinned(void* ctx, const void* ptr, int32_t* pinned) {
  (void)ctx;
  if (!pinned) return done(0, hostdev_fail("hostdev host_is_pinned(): pinned must not be NULL"));
  pthread_mutex_lock(&g_pinned_mutex);
  *pinned = pinned_contains(ptr);
  pthread_mutex_unlock(&g_pinned_mutex);
  return 0;
}

void hostdev_pinned_stats(int64_t* bytes, int64_t* blocks) {
  *bytes = atomic_load(&g_pinned_bytes);
  *blocks = atomic_load(&g_pinned_blocks);
}

/* ---- allocator ---- */

static int hd_record_stream(void* ctx, int32_t index, void* handle, void* stream) {
  (void)ctx;
  hd_stream* s = hostdev_stream_resolve("record_stream", index, stream);
  if (!s) return done(index, 1);
  if (hostdev_memory_record_stream("record_stream", index, handle, hostdev_stream_id(s))) return done(index, 1);
  hostdev_count(index, HD_C_RECORD_STREAMS, 1);
  return 0;
}

static int hd_allocator_stats(void* ctx, int32_t index, void (*emit)(void* user, const char* key, int64_t value),
                              void* user) {
  (void)ctx;
  if (!emit) return done(index, hostdev_fail("hostdev allocator_stats(): emit must not be NULL"));
  if (check_index("allocator_stats", index)) return done(index, 1);
  int64_t live, peak, held, tokens, retired, streams = 0;
  hostdev_memory_stats(index, &live, &peak, &held, &tokens, &retired);
  for (int64_t i = 0; i < hostdev_stream_count(); ++i) {
    hd_stream* s = hostdev_stream_by_id(i);
    if (s && hostdev_stream_device(s) == index) ++streams;
  }
  emit(user, "reserved_bytes", held);
  emit(user, "live_tokens", tokens);
  emit(user, "pending_frees", retired);
  emit(user, "streams", streams);
  return 0;
}

/* ---- the table ---- */

static void drain_at_exit(void) {
  /* Let queued work finish before the process tears down what it might touch (the core's tables). */
  for (int32_t d = 0; d < HOSTDEV_DEVICE_COUNT; ++d) hostdev_synchronize_device("exit", d);
}

static void register_drain(void) { atexit(drain_at_exit); }

int hostdev_make_table(const st_core_table* core, st_device_table* out) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  const st_core_table* none = NULL;
  atomic_compare_exchange_strong(&g_core, &none, core); /* one core per process */
  memset(out, 0, sizeof *out);
  out->struct_size = (uint32_t)sizeof(st_device_table);
  out->abi_major = ST_PLUGIN_ABI_MAJOR;
  out->abi_minor = ST_PLUGIN_ABI_MINOR;
  out->name = HOSTDEV_NAME;
  out->device_type = HOSTDEV_DEVICE_TYPE;
  out->dlpack_device_type = HOSTDEV_DLPACK_DEVICE_TYPE;
  out->plugin_version = HOSTDEV_VERSION;
  out->ctx = NULL;
  out->unavailable_reason = hd_unavailable_reason;
  out->device_count = hd_device_count;
  /* The ABI 1.0 memory functions stay NULL: a 1.1 plugin gives only the 1.1 ones (handles and streams). */
  out->synchronize = hd_synchronize;
  out->current_stream = hd_current_stream;
  out->last_error = hd_last_error;
  out->memory_flags = 0; /* tokens: not addressable, not host visible (Note [hostdev tokens]) */
  out->allocate_v2 = hd_allocate_v2;
  out->free_v2 = hd_free_v2;
  out->copy_from_host = hd_copy_from_host;
  out->copy_to_host = hd_copy_to_host;
  out->copy_on_device = hd_copy_on_device;
  out->copy_strided_v2 = hd_copy_strided_v2;
  out->fill_v2 = hd_fill_v2;
  out->synchronize_stream = hd_synchronize_stream;
  out->get_current_device = hd_get_current_device;
  out->set_current_device = hd_set_current_device;
  out->event_create = hd_event_create;
  out->event_destroy = hd_event_destroy;
  out->event_record = hd_event_record;
  out->stream_wait_event = hd_stream_wait_event;
  out->event_synchronize = hd_event_synchronize;
  out->stream_to_dlpack = hd_stream_to_dlpack;
  out->stream_from_dlpack = hd_stream_from_dlpack;
  out->locate_pointer = hd_locate_pointer;
  out->host_allocate = hd_host_allocate;
  out->host_free = hd_host_free;
  out->host_is_pinned = hd_host_is_pinned;
  out->record_stream = hd_record_stream;
  out->allocator_stats = hd_allocator_stats;
  pthread_once(&once, register_drain);
  return 0;
}

int hostdev_read_counters(int32_t index, hostdev_counters* out) {
  if (index < 0 || index >= HOSTDEV_DEVICE_COUNT || !out) return 1;
  _Atomic int64_t* c = g_counters[index];
  int64_t held, retired;
  hostdev_memory_stats(index, &out->live_bytes, &out->peak_bytes, &held, &out->live_tokens, &retired);
  out->allocations = atomic_load(&c[HD_C_ALLOCATIONS]);
  out->frees = atomic_load(&c[HD_C_FREES]);
  out->failed_allocations = atomic_load(&c[HD_C_FAILED_ALLOCATIONS]);
  out->pending_frees = retired;
  out->bad_handles = atomic_load(&c[HD_C_BAD_HANDLES]);
  out->bad_handles_raw = atomic_load(&c[HD_C_BAD_HANDLES_RAW]);
  out->unordered_frees = atomic_load(&c[HD_C_UNORDERED_FREES]);
  out->copies_host_to_device = atomic_load(&c[HD_C_H2D]);
  out->copies_device_to_host = atomic_load(&c[HD_C_D2H]);
  out->copies_device_to_device = atomic_load(&c[HD_C_D2D]);
  out->non_blocking_copies = atomic_load(&c[HD_C_NON_BLOCKING]);
  out->strided_copies = atomic_load(&c[HD_C_STRIDED]);
  out->fills = atomic_load(&c[HD_C_FILLS]);
  out->synchronizes = atomic_load(&c[HD_C_SYNCHRONIZES]);
  out->stream_synchronizes = atomic_load(&c[HD_C_STREAM_SYNCHRONIZES]);
  out->events_created = atomic_load(&c[HD_C_EVENTS_CREATED]);
  out->events_destroyed = atomic_load(&c[HD_C_EVENTS_DESTROYED]);
  out->events_recorded = atomic_load(&c[HD_C_EVENTS_RECORDED]);
  out->events_waited = atomic_load(&c[HD_C_EVENTS_WAITED]);
  out->event_synchronizes = atomic_load(&c[HD_C_EVENT_SYNCHRONIZES]);
  out->record_streams = atomic_load(&c[HD_C_RECORD_STREAMS]);
  out->stream_errors = atomic_load(&c[HD_C_STREAM_ERRORS]);
  out->errors = atomic_load(&c[HD_C_ERRORS]);
  return 0;
}

/* check/hostdev_stress.c: drives hostdev's device table from several threads without Python, for
 * ThreadSanitizer and AddressSanitizer builds (tests/core/test_plugin_streams.py compiles and runs it).
 *
 * It plays the core with a minimal core table of its own: itemsizes for float32/float64/int32, and
 * convert/convert_strided that copy same-dtype elements and widen float32 to float64. That is enough for
 * the plugin's queues, events, tokens and frees to be exercised under the sanitizers; the real conversions
 * are tested through slimtensor itself. Exit status 0 when every check held; messages on stderr otherwise. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostdev.h"

static _Thread_local char g_core_error[128];

static int32_t itemsize(int32_t code) { return code == 6 ? 4 : code == 7 ? 8 : code == 3 ? 4 : 0; }
static void note(int32_t t, int32_t i, int64_t b) { (void)t, (void)i, (void)b; }

static int convert_one(void* dst, int32_t dd, const void* src, int32_t sd) {
  if (dd == sd) {
    memcpy(dst, src, (size_t)itemsize(dd));
    return 0;
  }
  if (dd == 7 && sd == 6) {
    float f;
    memcpy(&f, src, 4);
    double d = f;
    memcpy(dst, &d, 8);
    return 0;
  }
  snprintf(g_core_error, sizeof g_core_error, "stress core: cannot convert %d to %d", (int)sd, (int)dd);
  return 1;
}

static int convert(void* dst, int32_t dd, const void* src, int32_t sd, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    if (convert_one((char*)dst + i * itemsize(dd), dd, (const char*)src + i * itemsize(sd), sd)) return 1;
  }
  return 0;
}

static int convert_strided(const st_strided_copy_v2* d) { /* ndim <= 2 here */
  const int64_t rows = d->ndim == 2 ? d->sizes[0] : 1, cols = d->ndim >= 1 ? d->sizes[d->ndim - 1] : 1;
  const int64_t drs = d->ndim == 2 ? d->dst_strides[0] : 0, srs = d->ndim == 2 ? d->src_strides[0] : 0;
  const int64_t dcs = d->ndim >= 1 ? d->dst_strides[d->ndim - 1] : 0,
                scs = d->ndim >= 1 ? d->src_strides[d->ndim - 1] : 0;
  char* dst = (char*)d->dst.handle + d->dst.byte_offset;
  const char* src = (const char*)d->src.handle + d->src.byte_offset;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (convert_one(dst + (r * drs + c * dcs) * itemsize(d->dst_dtype), d->dst_dtype,
                      src + (r * srs + c * scs) * itemsize(d->src_dtype), d->src_dtype))
        return 1;
  return 0;
}

static void trace(int32_t t, int32_t i, const char* op, int64_t b, void* s) {
  (void)t, (void)i, (void)op, (void)b, (void)s;
}
static const char* core_last_error(void) { return g_core_error; }
static void* core_symbol(const char* name) {
  (void)name;
  return NULL;
}

static const st_core_table k_core = {sizeof(st_core_table),
                                     ST_PLUGIN_ABI_MAJOR,
                                     ST_PLUGIN_ABI_MINOR,
                                     "stress",
                                     itemsize,
                                     note,
                                     convert,
                                     convert_strided,
                                     trace,
                                     core_last_error,
                                     core_symbol};
static const st_device_table* T;
static int g_failures;
static pthread_mutex_t g_fail_mutex = PTHREAD_MUTEX_INITIALIZER;

#define CHECK(cond, ...)                                     \
  do {                                                       \
    if (!(cond)) {                                           \
      pthread_mutex_lock(&g_fail_mutex);                     \
      ++g_failures;                                          \
      fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                          \
      fprintf(stderr, " (%s)\n", T->last_error(T->ctx));     \
      pthread_mutex_unlock(&g_fail_mutex);                   \
    }                                                        \
  } while (0)

static void* worker(void* arg) {
  const int32_t dev = (int32_t)(intptr_t)arg % HOSTDEV_DEVICE_COUNT;
  hd_stream* mine = hostdev_stream_create(dev);
  void* s = hostdev_stream_handle(mine);
  void* other = ST_STREAM_CURRENT;
  enum { N = 1024 };
  float host[N], back[N];
  double wide[N];
  for (int it = 0; it < 40; ++it) {
    void *a = NULL, *b = NULL, *c = NULL, *ev = NULL;
    CHECK(T->allocate_v2(T->ctx, dev, N * 4, s, &a) == 0, "allocate a");
    CHECK(T->allocate_v2(T->ctx, dev, N * 4, other, &b) == 0, "allocate b");
    CHECK(T->allocate_v2(T->ctx, dev, N * 8, other, &c) == 0, "allocate c");
    for (int i = 0; i < N; ++i) host[i] = (float)(i + it);
    st_memory_ref ra = {a, 0, dev, 0}, rb = {b, 0, dev, 0}, rc = {c, 0, dev, 0};
    CHECK(T->copy_from_host(T->ctx, ra, host, N * 4, s, ST_COPY_NON_BLOCKING) == 0, "h2d");
    /* b (on the current stream) waits for a's upload on `s` through an event */
    CHECK(T->event_create(T->ctx, dev, &ev) == 0, "event_create");
    CHECK(T->event_record(T->ctx, dev, ev, s) == 0, "record");
    CHECK(T->stream_wait_event(T->ctx, dev, other, ev) == 0, "wait");
    T->event_destroy(T->ctx, dev, ev);
    CHECK(T->copy_on_device(T->ctx, rb, ra, N * 4, other) == 0, "d2d");
    int64_t sizes[1] = {N}, one[1] = {1};
    st_strided_copy_v2 d = {sizeof d, 1, sizes, rc, one, 7, 6, rb, one};
    CHECK(T->copy_strided_v2(T->ctx, &d, other) == 0, "strided");
    CHECK(T->record_stream(T->ctx, dev, a, other) == 0, "record_stream");
    T->free_v2(T->ctx, dev, a, N * 4, s); /* a is read by `other`: record_stream orders the free after it */
    CHECK(T->copy_to_host(T->ctx, wide, rc, N * 8, other, 0) == 0, "d2h wide");
    CHECK(T->copy_to_host(T->ctx, back, rb, N * 4, other, 0) == 0, "d2h");
    for (int i = 0; i < N; ++i) {
      if (back[i] != host[i] || wide[i] != (double)host[i]) {
        CHECK(0, "data at %d: %g %g, expected %g", i, (double)back[i], wide[i], (double)host[i]);
        break;
      }
    }
    const float seven = 7.0f;
    CHECK(T->fill_v2(T->ctx, rb, N * 4, &seven, 4, other) == 0, "fill");
    CHECK(T->synchronize_stream(T->ctx, dev, other) == 0, "sync");
    st_memory_ref bad = {(char*)b + 256, 0, dev, 0}; /* token + offset: refused, never dereferenced */
    CHECK(T->copy_to_host(T->ctx, back, bad, 4, other, 0) != 0, "bad handle accepted");
    T->free_v2(T->ctx, dev, b, N * 4, other);
    T->free_v2(T->ctx, dev, c, N * 8, other);
  }
  CHECK(T->synchronize(T->ctx, dev) == 0, "synchronize");
  return NULL;
}

int main(void) {
  const st_device_table* t = NULL;
  st_plugin_init_fn init = hostdev_init_function(HOSTDEV_OK);
  if (init(&k_core, &t) != 0 || !t) {
    fprintf(stderr, "init failed: %s\n", hostdev_last_error());
    return 2;
  }
  T = t;
  hostdev_set_delay(20, 40);
  enum { THREADS = 6 };
  pthread_t th[THREADS];
  for (intptr_t i = 0; i < THREADS; ++i) pthread_create(&th[i], NULL, worker, (void*)i);
  for (int i = 0; i < THREADS; ++i) pthread_join(th[i], NULL);
  for (int32_t dev = 0; dev < HOSTDEV_DEVICE_COUNT; ++dev) {
    T->synchronize(T->ctx, dev);
    hostdev_counters c;
    hostdev_read_counters(dev, &c);
    CHECK(c.live_bytes == 0 && c.live_tokens == 0, "hostdev:%d leaks: %lld bytes, %lld tokens", (int)dev,
          (long long)c.live_bytes, (long long)c.live_tokens);
    CHECK(c.unordered_frees == 0, "hostdev:%d unordered frees: %lld", (int)dev, (long long)c.unordered_frees);
    CHECK(c.bad_handles == THREADS / HOSTDEV_DEVICE_COUNT * 40, "hostdev:%d bad handles: %lld", (int)dev,
          (long long)c.bad_handles);
  }
  if (g_failures) return 1;
  printf("hostdev stress: ok\n");
  return 0;
}

/* hostdev_device.c: the hostdev device table: host memory from aligned_alloc, counted per device index. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostdev.h"

#ifndef HOSTDEV_VERSION
#define HOSTDEV_VERSION "0.0.0"
#endif

/* Note [hostdev counters]
 * Counters are atomics: the core may call the table from several threads (copies release the GIL).
 * live_bytes counts the bytes the core asked for (not the rounded-up allocation), so that it can be
 * compared with the core's own memory statistics for the device. */
typedef struct atomic_counters {
  _Atomic int64_t allocations, frees, live_bytes, peak_bytes, failed_allocations;
  _Atomic int64_t copies_host_to_device, copies_device_to_host, copies_device_to_device;
  _Atomic int64_t strided_copies, fills, synchronizes, errors;
} atomic_counters;

static atomic_counters g_counters[HOSTDEV_DEVICE_COUNT];
static const st_core_table* g_core; /* set once by hostdev_make_table, read afterwards */
static _Thread_local char g_last_error[512];

int hostdev_fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(g_last_error, sizeof g_last_error, format, args);
  va_end(args);
  return 1;
}

const char* hostdev_last_error(void) { return g_last_error; }

/* Checks a device index; on failure records the error (naming `function`) and returns non-zero. */
static int check_index(const char* function, int32_t index) {
  if (index < 0 || index >= HOSTDEV_DEVICE_COUNT) {
    return hostdev_fail("hostdev %s(): device index %d is out of range; hostdev has devices 0..%d",
                        function, (int)index, HOSTDEV_DEVICE_COUNT - 1);
  }
  return 0;
}

/* Counts a failed call on device `index` (or device 0 if the index itself is bad) and returns 1. */
static int count_error(int32_t index) {
  int32_t i = (index >= 0 && index < HOSTDEV_DEVICE_COUNT) ? index : 0;
  atomic_fetch_add(&g_counters[i].errors, 1);
  return 1;
}

/* Records the message, counts the failure on device `index`, returns 1. */
#define FAIL_AT(index, ...) (hostdev_fail(__VA_ARGS__), count_error(index))

static uint64_t capacity_bytes(void) {
  const char* text = getenv(HOSTDEV_CAPACITY_ENV);
  if (text && *text) {
    char* end = NULL;
    unsigned long long value = strtoull(text, &end, 10);
    /* Capped so that live + nbytes always fits in int64. */
    if (end && *end == '\0' && value > 0) return value < (1ull << 62) ? (uint64_t)value : (1ull << 62);
  }
  return HOSTDEV_DEFAULT_CAPACITY;
}

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
  if (!count) return FAIL_AT(0, "hostdev device_count(): count must not be NULL");
  *count = HOSTDEV_DEVICE_COUNT;
  return 0;
}

static int hd_allocate(void* ctx, int32_t index, uint64_t nbytes, void** out) {
  (void)ctx;
  if (check_index("allocate", index)) return count_error(index);
  if (!out) return FAIL_AT(index, "hostdev allocate(): out must not be NULL");
  *out = NULL;
  atomic_counters* c = &g_counters[index];
  if (nbytes == 0) {
    return FAIL_AT(index, "hostdev allocate(): nbytes must be > 0, got 0");
  }
  /* Reserve the bytes first (compare-and-swap), so concurrent allocations never exceed the capacity. */
  const uint64_t capacity = capacity_bytes();
  int64_t live = atomic_load(&c->live_bytes);
  do {
    if (nbytes > capacity || (uint64_t)live > capacity - nbytes) {
      atomic_fetch_add(&c->failed_allocations, 1);
      return FAIL_AT(index, "hostdev allocate(): out of memory on hostdev:%d: asked for %llu bytes, %lld of "
                            "%llu bytes in use; free tensors or set " HOSTDEV_CAPACITY_ENV,
                     (int)index, (unsigned long long)nbytes, (long long)live, (unsigned long long)capacity);
    }
  } while (!atomic_compare_exchange_weak(&c->live_bytes, &live, live + (int64_t)nbytes));
  /* aligned_alloc wants a size that is a multiple of the alignment; nbytes <= capacity, so no overflow. */
  const uint64_t rounded = (nbytes + HOSTDEV_ALIGNMENT - 1) / HOSTDEV_ALIGNMENT * HOSTDEV_ALIGNMENT;
  void* p = aligned_alloc(HOSTDEV_ALIGNMENT, (size_t)rounded);
  if (!p) {
    atomic_fetch_sub(&c->live_bytes, (int64_t)nbytes);
    atomic_fetch_add(&c->failed_allocations, 1);
    return FAIL_AT(index, "hostdev allocate(): the host could not provide %llu bytes for hostdev:%d",
                   (unsigned long long)nbytes, (int)index);
  }
  atomic_fetch_add(&c->allocations, 1);
  const int64_t now = live + (int64_t)nbytes;
  int64_t peak = atomic_load(&c->peak_bytes);
  while (now > peak && !atomic_compare_exchange_weak(&c->peak_bytes, &peak, now)) {
  }
  *out = p;
  return 0;
}

static void hd_free(void* ctx, int32_t index, void* ptr, uint64_t nbytes) {
  (void)ctx;
  if (!ptr) return;
  /* free must not fail; a bad index is still counted on device 0 so the tests see the imbalance. */
  atomic_counters* c = &g_counters[(index >= 0 && index < HOSTDEV_DEVICE_COUNT) ? index : 0];
  atomic_fetch_add(&c->frees, 1);
  atomic_fetch_sub(&c->live_bytes, (int64_t)nbytes);
  free(ptr);
}

static int check_copy(const char* function, int32_t index, void* dst, const void* src, uint64_t nbytes) {
  if (check_index(function, index)) return 1;
  if (nbytes > 0 && (!dst || !src)) {
    return hostdev_fail("hostdev %s(): dst and src must not be NULL when nbytes (%llu) > 0", function,
                        (unsigned long long)nbytes);
  }
  return 0;
}

static int hd_copy_host_to_device(void* ctx, int32_t index, void* dst, const void* src, uint64_t nbytes) {
  (void)ctx;
  if (check_copy("copy_host_to_device", index, dst, src, nbytes)) return count_error(index);
  if (nbytes) memmove(dst, src, (size_t)nbytes);
  atomic_fetch_add(&g_counters[index].copies_host_to_device, 1);
  return 0;
}

static int hd_copy_device_to_host(void* ctx, int32_t index, void* dst, const void* src, uint64_t nbytes) {
  (void)ctx;
  if (check_copy("copy_device_to_host", index, dst, src, nbytes)) return count_error(index);
  if (nbytes) memmove(dst, src, (size_t)nbytes);
  atomic_fetch_add(&g_counters[index].copies_device_to_host, 1);
  return 0;
}

static int hd_copy_device_to_device(void* ctx, int32_t dst_index, void* dst, int32_t src_index, const void* src,
                                    uint64_t nbytes) {
  (void)ctx;
  if (check_index("copy_device_to_device", src_index)) return count_error(src_index);
  if (check_copy("copy_device_to_device", dst_index, dst, src, nbytes)) return count_error(dst_index);
  if (nbytes) memmove(dst, src, (size_t)nbytes);
  atomic_fetch_add(&g_counters[dst_index].copies_device_to_device, 1);
  return 0;
}

static int hd_copy_strided(void* ctx, int32_t index, const st_strided_copy_desc* desc) {
  (void)ctx;
  if (check_index("copy_strided", index)) return count_error(index);
  if (hostdev_copy_strided(g_core, desc)) return count_error(index);
  atomic_fetch_add(&g_counters[index].strided_copies, 1);
  return 0;
}

static int hd_fill(void* ctx, int32_t index, void* dst, uint64_t nbytes, const void* pattern,
                   uint32_t pattern_size) {
  (void)ctx;
  if (check_index("fill", index)) return count_error(index);
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8 && pattern_size != 16) {
    return FAIL_AT(index, "hostdev fill(): pattern_size must be 1, 2, 4, 8 or 16, got %u", pattern_size);
  }
  if (nbytes % pattern_size != 0) {
    return FAIL_AT(index, "hostdev fill(): nbytes (%llu) must be a multiple of pattern_size (%u)",
                        (unsigned long long)nbytes, pattern_size);
  }
  if (nbytes > 0 && (!dst || !pattern)) {
    return FAIL_AT(index, "hostdev fill(): dst and pattern must not be NULL");
  }
  unsigned char* d = (unsigned char*)dst;
  if (nbytes > 0) {
    /* Write one pattern, then double the filled prefix until the buffer is full. */
    memcpy(d, pattern, pattern_size);
    uint64_t done = pattern_size;
    while (done < nbytes) {
      uint64_t n = done < nbytes - done ? done : nbytes - done;
      memcpy(d + done, d, (size_t)n);
      done += n;
    }
  }
  atomic_fetch_add(&g_counters[index].fills, 1);
  return 0;
}

static int hd_synchronize(void* ctx, int32_t index) {
  (void)ctx;
  if (check_index("synchronize", index)) return count_error(index);
  atomic_fetch_add(&g_counters[index].synchronizes, 1); /* host memory: nothing is ever in flight */
  return 0;
}

static const char* hd_last_error(void* ctx) {
  (void)ctx;
  return g_last_error;
}

int hostdev_make_table(const st_core_table* core, st_device_table* out) {
  g_core = core;
  memset(out, 0, sizeof *out);
  out->struct_size = (uint32_t)sizeof(st_device_table);
  out->abi_major = ST_PLUGIN_ABI_MAJOR;
  out->abi_minor = ST_PLUGIN_ABI_MINOR;
  out->name = HOSTDEV_NAME;
  out->device_type = HOSTDEV_DEVICE_TYPE;
  out->dlpack_device_type = 0; /* no DLPack device type: hostdev memory is not exported as kDLCPU */
  out->plugin_version = HOSTDEV_VERSION;
  out->ctx = NULL;
  out->unavailable_reason = hd_unavailable_reason;
  out->device_count = hd_device_count;
  out->allocate = hd_allocate;
  out->free = hd_free;
  out->copy_host_to_device = hd_copy_host_to_device;
  out->copy_device_to_host = hd_copy_device_to_host;
  out->copy_device_to_device = hd_copy_device_to_device;
  out->copy_strided = hd_copy_strided;
  out->fill = hd_fill;
  out->synchronize = hd_synchronize;
  out->current_stream = NULL; /* no streams */
  out->last_error = hd_last_error;
  return 0;
}

int hostdev_read_counters(int32_t index, hostdev_counters* out) {
  if (index < 0 || index >= HOSTDEV_DEVICE_COUNT || !out) return 1;
  const atomic_counters* c = &g_counters[index];
  out->allocations = atomic_load(&c->allocations);
  out->frees = atomic_load(&c->frees);
  out->live_bytes = atomic_load(&c->live_bytes);
  out->peak_bytes = atomic_load(&c->peak_bytes);
  out->failed_allocations = atomic_load(&c->failed_allocations);
  out->copies_host_to_device = atomic_load(&c->copies_host_to_device);
  out->copies_device_to_host = atomic_load(&c->copies_device_to_host);
  out->copies_device_to_device = atomic_load(&c->copies_device_to_device);
  out->strided_copies = atomic_load(&c->strided_copies);
  out->fills = atomic_load(&c->fills);
  out->synchronizes = atomic_load(&c->synchronizes);
  out->errors = atomic_load(&c->errors);
  return 0;
}

/* abi10/hostdev_abi10.c: hostdev as a plugin built for ABI 1.0 (the frozen header), which a 1.1 core must load.
 *
 * Note [hostdev_abi10]
 * This is what a plugin compiled before ABI 1.1 looks like: addressable host memory from aligned_alloc, raw
 * pointers in every call, every call synchronous, no streams, no events. It fills the 1.0 functions only,
 * including the optional fill and synchronize, and leaves copy_strided NULL, so the core must stage strided
 * and converting copies through the host with its own rules. Its table has the 1.0 size, so a core that
 * compared struct_size with sizeof of its own (1.1) table would refuse it: the test that registers it proves
 * the per-minor size rule. It counts its calls like the real hostdev (slimtensor_hostdev.abi10_counters). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi10/device_plugin_1_0.h"
#include "abi10/hostdev_abi10.h"

#ifndef HOSTDEV_VERSION
#  define HOSTDEV_VERSION "0.0.0"
#endif

#define ALIGNMENT 64

enum { C_ALLOCATIONS, C_FREES, C_LIVE_BYTES, C_H2D, C_D2H, C_D2D, C_FILLS, C_SYNCHRONIZES, C_ERRORS, C_LIVE };
static const char* const k_names[HOSTDEV_ABI10_COUNTER_COUNT] = {"allocations",
                                                                 "frees",
                                                                 "live_bytes",
                                                                 "copies_host_to_device",
                                                                 "copies_device_to_host",
                                                                 "copies_device_to_device",
                                                                 "fills",
                                                                 "synchronizes",
                                                                 "errors",
                                                                 "live_allocations"};
static _Atomic int64_t g_counters[HOSTDEV_ABI10_DEVICE_COUNT][HOSTDEV_ABI10_COUNTER_COUNT];
static _Thread_local char g_error[400];
static st_device_table g_table;

static void count(int32_t index, int which, int64_t delta) {
  const int32_t i = index >= 0 && index < HOSTDEV_ABI10_DEVICE_COUNT ? index : 0;
  atomic_fetch_add(&g_counters[i][which], delta);
}

static int fail(int32_t index, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(g_error, sizeof g_error, format, args);
  va_end(args);
  count(index, C_ERRORS, 1);
  return 1;
}

static int bad_index(const char* function, int32_t index) {
  if (index >= 0 && index < HOSTDEV_ABI10_DEVICE_COUNT) return 0;
  return fail(index, HOSTDEV_ABI10_NAME " %s(): device index %d is out of range; it has devices 0..%d", function,
              (int)index, HOSTDEV_ABI10_DEVICE_COUNT - 1);
}

static int a_device_count(void* ctx, int32_t* n) {
  (void)ctx;
  if (!n) return fail(0, HOSTDEV_ABI10_NAME " device_count(): count must not be NULL");
  *n = HOSTDEV_ABI10_DEVICE_COUNT;
  return 0;
}

static int a_allocate(void* ctx, int32_t index, uint64_t nbytes, void** out) {
  (void)ctx;
  if (bad_index("allocate", index)) return 1;
  if (!out) return fail(index, HOSTDEV_ABI10_NAME " allocate(): out must not be NULL");
  *out = NULL;
  if (nbytes == 0 || nbytes > (1ull << 30)) {
    return fail(index,
                HOSTDEV_ABI10_NAME " allocate(): out of memory on " HOSTDEV_ABI10_NAME
                                   ":%d: asked for %llu "
                                   "bytes (it holds 1 GiB per device, and nbytes must be > 0)",
                (int)index, (unsigned long long)nbytes);
  }
  void* p = aligned_alloc(ALIGNMENT, (size_t)((nbytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT));
  if (!p)
    return fail(index, HOSTDEV_ABI10_NAME " allocate(): the host could not provide %llu bytes",
                (unsigned long long)nbytes);
  count(index, C_ALLOCATIONS, 1);
  count(index, C_LIVE, 1);
  count(index, C_LIVE_BYTES, (int64_t)nbytes);
  *out = p;
  return 0;
}

static void a_free(void* ctx, int32_t index, void* ptr, uint64_t nbytes) {
  (void)ctx;
  if (!ptr) return;
  count(index, C_FREES, 1);
  count(index, C_LIVE, -1);
  count(index, C_LIVE_BYTES, -(int64_t)nbytes);
  free(ptr);
}

static int check_copy(const char* function, int32_t index, const void* dst, const void* src, uint64_t nbytes) {
  if (bad_index(function, index)) return 1;
  if (nbytes && (!dst || !src)) {
    return fail(index, HOSTDEV_ABI10_NAME " %s(): dst and src must not be NULL for %llu bytes", function,
                (unsigned long long)nbytes);
  }
  return 0;
}

static int a_h2d(void* ctx, int32_t index, void* dst, const void* src, uint64_t nbytes) {
  (void)ctx;
  if (check_copy("copy_host_to_device", index, dst, src, nbytes)) return 1;
  if (nbytes) memmove(dst, src, (size_t)nbytes);
  count(index, C_H2D, 1);
  return 0;
}

static int a_d2h(void* ctx, int32_t index, void* dst, const void* src, uint64_t nbytes) {
  (void)ctx;
  if (check_copy("copy_device_to_host", index, dst, src, nbytes)) return 1;
  if (nbytes) memmove(dst, src, (size_t)nbytes);
  count(index, C_D2H, 1);
  return 0;
}

static int a_d2d(void* ctx, int32_t dst_index, void* dst, int32_t src_index, const void* src, uint64_t nbytes) {
  (void)ctx;
  if (bad_index("copy_device_to_device", src_index)) return 1;
  if (check_copy("copy_device_to_device", dst_index, dst, src, nbytes)) return 1;
  if (nbytes) memmove(dst, src, (size_t)nbytes);
  count(dst_index, C_D2D, 1);
  return 0;
}

static int a_fill(void* ctx, int32_t index, void* dst, uint64_t nbytes, const void* pattern, uint32_t size) {
  (void)ctx;
  if (bad_index("fill", index)) return 1;
  if (size != 1 && size != 2 && size != 4 && size != 8 && size != 16) {
    return fail(index, HOSTDEV_ABI10_NAME " fill(): pattern_size must be 1, 2, 4, 8 or 16, got %u", size);
  }
  if (nbytes % size) {
    return fail(index, HOSTDEV_ABI10_NAME " fill(): nbytes (%llu) must be a multiple of pattern_size (%u)",
                (unsigned long long)nbytes, size);
  }
  if (nbytes && (!dst || !pattern)) return fail(index, HOSTDEV_ABI10_NAME " fill(): dst and pattern must not be NULL");
  unsigned char* d = (unsigned char*)dst;
  for (uint64_t at = 0; at < nbytes; at += size) memcpy(d + at, pattern, size);
  count(index, C_FILLS, 1);
  return 0;
}

static int a_synchronize(void* ctx, int32_t index) {
  (void)ctx;
  if (bad_index("synchronize", index)) return 1;
  count(index, C_SYNCHRONIZES, 1); /* synchronous device: nothing is ever in flight */
  return 0;
}

static const char* a_last_error(void* ctx) {
  (void)ctx;
  return g_error;
}

static int init(const st_core_table* core, const st_device_table** out) {
  if (!out) return fail(0, HOSTDEV_ABI10_NAME " st_plugin_init(): out must not be NULL");
  *out = NULL;
  if (!core || core->abi_major != ST_PLUGIN_ABI_MAJOR ||
      core->struct_size < offsetof(st_core_table, note_device_memory) + sizeof(void*)) {
    return fail(0,
                HOSTDEV_ABI10_NAME
                " st_plugin_init(): the core does not speak plugin ABI %d.x; install a "
                "matching slimtensor-core",
                ST_PLUGIN_ABI_MAJOR);
  }
  memset(&g_table, 0, sizeof g_table);
  g_table.struct_size = (uint32_t)sizeof g_table;
  g_table.abi_major = ST_PLUGIN_ABI_MAJOR;
  g_table.abi_minor = ST_PLUGIN_ABI_MINOR; /* 0: the frozen header */
  g_table.name = HOSTDEV_ABI10_NAME;
  g_table.device_type = HOSTDEV_ABI10_DEVICE_TYPE;
  g_table.dlpack_device_type = 0;
  g_table.plugin_version = HOSTDEV_VERSION;
  g_table.unavailable_reason = NULL;
  g_table.device_count = a_device_count;
  g_table.allocate = a_allocate;
  g_table.free = a_free;
  g_table.copy_host_to_device = a_h2d;
  g_table.copy_device_to_host = a_d2h;
  g_table.copy_device_to_device = a_d2d;
  g_table.copy_strided = NULL; /* the core stages strided and converting copies (Note [hostdev_abi10]) */
  g_table.fill = a_fill;
  g_table.synchronize = a_synchronize;
  g_table.current_stream = NULL;
  g_table.last_error = a_last_error;
  *out = &g_table;
  return 0;
}

void* hostdev_abi10_init_address(void) {
  st_plugin_init_fn f = init;
  void* p;
  memcpy(&p, &f, sizeof p); /* POSIX: function pointers round-trip through void* */
  return p;
}

uint32_t hostdev_abi10_table_size(void) { return (uint32_t)sizeof(st_device_table); }
uint32_t hostdev_abi10_minor(void) { return ST_PLUGIN_ABI_MINOR; }

const char* hostdev_abi10_counter_name(int i) { return i >= 0 && i < HOSTDEV_ABI10_COUNTER_COUNT ? k_names[i] : NULL; }

int hostdev_abi10_counters(int32_t index, int64_t out[HOSTDEV_ABI10_COUNTER_COUNT]) {
  if (index < 0 || index >= HOSTDEV_ABI10_DEVICE_COUNT) return 1;
  for (int i = 0; i < HOSTDEV_ABI10_COUNTER_COUNT; ++i) out[i] = atomic_load(&g_counters[index][i]);
  return 0;
}

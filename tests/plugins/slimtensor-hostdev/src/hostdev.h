/* hostdev.h: internal interface of the hostdev test plugin (a host-memory device behind the plugin ABI).
 *
 * Note [hostdev]
 * hostdev is a real device plugin whose "device memory" happens to be host memory: every byte the core
 * puts on it goes through the st_device_table below, and the plugin counts every allocation, free, copy
 * and fill itself, so tests can prove that the core allocates, frees and copies through the plugin and
 * never touches the memory behind its back. It is compiled as C (no C++ type can cross the boundary) and
 * never links against libslimtensor: it only includes slimtensor/c/device_plugin.h from the installed core.
 */
#ifndef SLIMTENSOR_HOSTDEV_H_
#define SLIMTENSOR_HOSTDEV_H_

#include <stdint.h>

#include "slimtensor/c/device_plugin.h"

#define HOSTDEV_NAME "hostdev"
#define HOSTDEV_DEVICE_TYPE 20 /* c10 PrivateUse1 */
#define HOSTDEV_DEVICE_COUNT 2
#define HOSTDEV_ALIGNMENT 64
/* Each device holds at most this many bytes unless SLIMTENSOR_HOSTDEV_CAPACITY (bytes) says otherwise,
 * so an absurd allocation fails like a real device's would instead of reaching the OS overcommit. */
#define HOSTDEV_DEFAULT_CAPACITY (1ull << 30)
/* When this environment variable is set (and not "0") at registration, the device reports itself absent. */
#define HOSTDEV_ABSENT_ENV "SLIMTENSOR_HOSTDEV_ABSENT"
#define HOSTDEV_CAPACITY_ENV "SLIMTENSOR_HOSTDEV_CAPACITY"

/* The plugin's counters, per device index; read by the Python module for the tests. */
typedef struct hostdev_counters {
  int64_t allocations;      /* successful allocate calls */
  int64_t frees;            /* free calls */
  int64_t live_bytes;       /* bytes allocated and not yet freed */
  int64_t peak_bytes;       /* highest live_bytes seen */
  int64_t failed_allocations;
  int64_t copies_host_to_device;
  int64_t copies_device_to_host;
  int64_t copies_device_to_device;
  int64_t strided_copies;
  int64_t fills;
  int64_t synchronizes;
  int64_t errors;           /* calls that returned non-zero */
} hostdev_counters;

/* The variants of the plugin, one init function each (see hostdev_variants.c). */
typedef enum hostdev_variant {
  HOSTDEV_OK = 0,           /* the real device */
  HOSTDEV_BAD_MAJOR,        /* abi_major 99: a plugin built for a future, incompatible core */
  HOSTDEV_BAD_MINOR,        /* abi_minor one above the core's: needs a newer core */
  HOSTDEV_SMALL_STRUCT,     /* struct_size smaller than the core knows: a truncated table */
  HOSTDEV_INIT_FAILS,       /* st_plugin_init returns an error and no table */
  HOSTDEV_VARIANT_COUNT
} hostdev_variant;

/* The init function of a variant, or NULL for an unknown variant. */
st_plugin_init_fn hostdev_init_function(hostdev_variant variant);
/* The name of a variant as the Python module spells it ("ok", "bad_major", ...), or NULL. */
const char* hostdev_variant_name(hostdev_variant variant);

/* Fills the real device table (HOSTDEV_OK); `core` is the core's table, kept for later calls. */
int hostdev_make_table(const st_core_table* core, st_device_table* out);
/* Snapshot of the counters of device `index` (0 <= index < HOSTDEV_DEVICE_COUNT); 0 on success. */
int hostdev_read_counters(int32_t index, hostdev_counters* out);
/* Records an error message for last_error (thread-local) and returns 1. printf-style. */
int hostdev_fail(const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* The calling thread's last error message ("" when none). */
const char* hostdev_last_error(void);
/* Whether hostdev converts to and from this c10 dtype code (all but float8 and unknown codes). */
int hostdev_convertible(int32_t code);
/* Converts one element by slimtensor's CPU rules (Note [hostdev conversions] in hostdev_convert.c). */
void hostdev_convert(int32_t dst_code, void* dst, int32_t src_code, const void* src);
/* Strided, dtype-converting copy of host memory (hostdev_strided.c). 0 on success. */
int hostdev_copy_strided(const st_core_table* core, const st_strided_copy_desc* desc);

#endif /* SLIMTENSOR_HOSTDEV_H_ */

/* src/abi10/device_plugin_1_0.h: a frozen copy of slimtensor/c/device_plugin.h as ABI 1.0 shipped it (from
 * git show d0024bd:packages/slimtensor-core/include/slimtensor/c/device_plugin.h; only the include guard is
 * renamed). Never edit it: hostdev_abi10.c is compiled against it to prove that a plugin built for the old
 * minor still loads in a newer core. */
/* slimtensor/c/device_plugin.h: the C ABI between libslimtensor and a device plugin, in both directions.
 *
 * Note [Plugin ABI]
 * A plugin is a shared library (usually inside a Python wheel) that never links against libslimtensor.
 * It exports one function, st_plugin_init, and hands it to the core through a Python capsule named
 * "slimtensor.device_plugin" (or a C++ host calls slimtensor_register_device_plugin directly).
 * The core calls st_plugin_init with its own table of core functions; the plugin returns its device
 * table. Both tables start with {struct_size, abi_major, abi_minor}.
 *
 * Compatibility rule (checked by the core, refused with an actionable message, never a crash):
 *   - plugin abi_major == core abi_major;
 *   - plugin abi_minor <= core abi_minor (an older core does not know the newer fields);
 *   - plugin struct_size >= the size the core knows for that minor.
 * New fields are only ever appended, and each minor bump says which fields it added.
 *
 * Errors: every function that can fail returns 0 on success and non-zero on failure, and then
 * last_error(ctx) returns a readable message (thread-local in the plugin). Null optional functions
 * mean "not supported": the core falls back (strided copies are staged through contiguous buffers).
 */
#ifndef HOSTDEV_FROZEN_DEVICE_PLUGIN_1_0_H_
#define HOSTDEV_FROZEN_DEVICE_PLUGIN_1_0_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ST_PLUGIN_ABI_MAJOR 1
#define ST_PLUGIN_ABI_MINOR 0
#define ST_PLUGIN_CAPSULE_NAME "slimtensor.device_plugin"

/* Describes a strided copy within one device; sizes and strides in elements, offsets in bytes. */
typedef struct st_strided_copy_desc {
  int32_t ndim;
  const int64_t* sizes;
  void* dst;
  const int64_t* dst_strides;
  int32_t dst_dtype; /* c10 ScalarType code */
  const void* src;
  const int64_t* src_strides;
  int32_t src_dtype;
} st_strided_copy_desc;

/* What the plugin gives the core. All pointers must stay valid until the process ends. */
typedef struct st_device_table {
  uint32_t struct_size; /* sizeof(st_device_table) as the plugin was compiled */
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* name;           /* device name used in strings: "cuda", "hostdev" (lower case, [a-z0-9_]) */
  int32_t device_type;        /* c10 DeviceType code: 1 CUDA, 13 MPS, 20 PrivateUse1, or another unused code */
  int32_t dlpack_device_type; /* DLDeviceType for __dlpack_device__: 2 kDLCUDA, 8 kDLMetal, ...; 0 if none */
  const char* plugin_version; /* the plugin package's version, shown by `slimtensor info` */
  void* ctx;                  /* passed back to every function */

  /* Null when the device can be used; otherwise why not ("no CUDA driver found"). */
  const char* (*unavailable_reason)(void* ctx);
  int (*device_count)(void* ctx, int32_t* count);
  /* Allocates nbytes (> 0) on device `index`, aligned to at least 64 bytes. */
  int (*allocate)(void* ctx, int32_t index, uint64_t nbytes, void** out);
  /* Frees what allocate returned. Must not fail; called from destructors. */
  void (*free)(void* ctx, int32_t index, void* ptr, uint64_t nbytes);
  int (*copy_host_to_device)(void* ctx, int32_t index, void* dst, const void* src, uint64_t nbytes);
  int (*copy_device_to_host)(void* ctx, int32_t index, void* dst, const void* src, uint64_t nbytes);
  int (*copy_device_to_device)(void* ctx, int32_t dst_index, void* dst, int32_t src_index, const void* src,
                               uint64_t nbytes);
  /* Optional: strided, dtype-converting copy within one device. */
  int (*copy_strided)(void* ctx, int32_t index, const st_strided_copy_desc* desc);
  /* Optional: fills nbytes at dst with a repeated pattern of pattern_size (1, 2, 4, 8 or 16) bytes. */
  int (*fill)(void* ctx, int32_t index, void* dst, uint64_t nbytes, const void* pattern, uint32_t pattern_size);
  int (*synchronize)(void* ctx, int32_t index);
  /* Optional: the current stream of device `index` (opaque), for DLPack stream exchange. */
  int (*current_stream)(void* ctx, int32_t index, void** stream);
  const char* (*last_error)(void* ctx);
} st_device_table;

/* What the core gives the plugin: functions it may call without linking against libslimtensor. */
typedef struct st_core_table {
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* core_version;
  /* Itemsize of a c10 ScalarType code, or 0 when the code is unknown. */
  int32_t (*scalar_type_itemsize)(int32_t code);
  /* Records a memory event for tracing and statistics (bytes > 0 allocated, < 0 freed). Optional use. */
  void (*note_device_memory)(int32_t device_type, int32_t index, int64_t bytes);
} st_core_table;

/* The plugin's entry point: fills *out with its table (owned by the plugin). Returns 0 on success. */
typedef int (*st_plugin_init_fn)(const st_core_table* core, const st_device_table** out);

#ifdef __cplusplus
}
#endif

#endif /* HOSTDEV_FROZEN_DEVICE_PLUGIN_1_0_H_ */

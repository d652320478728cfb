/* slimtensor/c/device_plugin.h: the C ABI between libslimtensor and a device plugin, in both directions.
 *
 * Note [Plugin ABI]
 * A plugin is a shared library (usually inside a Python wheel) that never links against libslimtensor.
 * It exports one function, st_plugin_init, and hands it to the core through a Python capsule named
 * "slimtensor.device_plugin", or a C/C++ host calls slimtensor_register_device_plugin (below) directly.
 * The core calls st_plugin_init with its own table of core functions; the plugin returns its device
 * table. Both tables start with {struct_size, abi_major, abi_minor}.
 *
 * Compatibility rule (checked by the core, refused with an actionable message, never a crash):
 *   - plugin abi_major == core abi_major;
 *   - plugin abi_minor <= core abi_minor (an older core does not know the newer fields);
 *   - plugin struct_size >= the size the core knows *for the plugin's minor*
 *     (ST_DEVICE_TABLE_SIZE_1_0, ST_DEVICE_TABLE_SIZE_1_1, ...), not sizeof of today's table.
 * The plugin applies the same rule to the core table it is given (core->abi_minor and struct_size tell
 * which core fields exist). New fields are only ever appended, and each minor says which fields it added.
 *
 * Errors: every function that can fail returns 0 on success and non-zero on failure, and then
 * last_error(ctx) returns a readable message (thread-local in the plugin). Functions marked optional may
 * be NULL, meaning "not supported": the core falls back where it can and says so where it cannot.
 *
 * Note [Device memory handles] (ABI 1.1)
 * Device memory is not always addressable from the host, nor even an address: a Metal buffer is an
 * object handle. allocate_v2 returns an opaque allocation handle; the core keeps (handle, byte offset)
 * in every storage and view and passes both back in every copy, fill and DLPack exchange. The core never
 * adds an offset to a handle, compares handles as addresses, or dereferences one, unless the plugin sets
 * ST_DEVICE_MEMORY_ADDRESSABLE: then handle + offset is a device address (CUDA), which the core may hand
 * out as data_ptr() and through DLPack, __cuda_array_interface__ and the AOTI shims.
 *
 * Note [Streams] (ABI 1.1)
 * Every memory function of ABI 1.1 takes an opaque stream. ST_STREAM_CURRENT (not NULL: NULL is CUDA's
 * legacy default stream, a real stream) means "the calling thread's current stream of that device", as
 * the plugin keeps it. Every ABI 1.1 function with a stream argument accepts ST_STREAM_CURRENT there
 * (synchronize_stream, event_record, stream_wait_event, stream_to_dlpack and record_stream included):
 * the plugin resolves it before it reaches the driver. The core passes real streams it got from
 * current_stream or stream_from_dlpack, and may keep them for as long as it keeps memory allocated on
 * them (a storage frees on the stream it was allocated on), so a stream the plugin hands out must stay
 * valid at least as long as memory allocated on it. Work is stream-ordered: a device-to-device copy, a strided copy or
 * a fill may return before it has run. A copy that reads or writes host memory returns only once the host memory may be
 * reused (host-to-device) or read (device-to-host), unless the caller passes ST_COPY_NON_BLOCKING, which allows it to
 * return earlier (the caller then synchronises the stream before touching that host memory; a plugin may always ignore
 * the flag and complete the copy). Freeing is stream-ordered too: free_v2 names the stream on which the memory was last
 * used, and the plugin must not hand the memory to work on another stream before the work queued so far on that stream
 * has finished.
 *
 * Note [Current device] (ABI 1.1)
 * A Device with index -1 ("cuda") means the calling thread's current device of that type. The plugin
 * keeps it (get_current_device / set_current_device); the core asks it when a storage is made, so every
 * storage has a concrete index.
 */
#ifndef SLIMTENSOR_C_DEVICE_PLUGIN_H_
#define SLIMTENSOR_C_DEVICE_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ST_PLUGIN_ABI_MAJOR 1
#define ST_PLUGIN_ABI_MINOR 1
#define ST_PLUGIN_CAPSULE_NAME "slimtensor.device_plugin"

/* "The calling thread's current stream of the device" (Note [Streams]). */
#define ST_STREAM_CURRENT ((void*)(~(uintptr_t)0))

/* st_device_table.memory_flags */
#define ST_DEVICE_MEMORY_ADDRESSABLE 1u  /* handle + byte offset is a device address (CUDA, hostdev-addr) */
#define ST_DEVICE_MEMORY_HOST_VISIBLE 2u /* the host may read it once the device is idle (unified memory) */

/* The flags argument of the ABI 1.1 copies */
#define ST_COPY_NON_BLOCKING 1u

/* Describes a strided copy within one device (ABI 1.0); sizes and strides in elements. */
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

/* One side of an ABI 1.1 copy or fill: a device allocation handle (Note [Device memory handles]) or, where
 * the function says so, a host address in `handle` with byte_offset 0. */
typedef struct st_memory_ref {
  void* handle;         /* what allocate_v2 returned (or a borrowed handle the core got from DLPack) */
  uint64_t byte_offset; /* bytes from the start of the allocation */
  int32_t device_index; /* the device index of that memory; ignored for host memory */
  int32_t reserved;     /* 0 */
} st_memory_ref;

/* A strided, dtype-converting copy within one device type (ABI 1.1): each side its own memory, sizes
 * and strides in elements (strides >= 0; the core merges and orders dims, drops size-1 dims, and never
 * passes overlapping destinations). src broadcasts: a stride of 0 repeats an element. ndim may be 0 (one
 * element). The two sides may be on different device indices of the same type (peer copies). */
typedef struct st_strided_copy_v2 {
  uint32_t struct_size; /* sizeof(st_strided_copy_v2) as its writer was compiled: the core for
                           copy_strided_v2, the plugin for the core table's convert_strided */
  int32_t ndim;
  const int64_t* sizes;
  st_memory_ref dst;
  const int64_t* dst_strides;
  int32_t dst_dtype; /* c10 ScalarType code */
  int32_t src_dtype;
  st_memory_ref src;
  const int64_t* src_strides;
} st_strided_copy_v2;

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

  /* ---- ABI 1.0 ------------------------------------------------------------------------------------
   * The 1.0 memory functions take raw addresses and no stream. A 1.0 plugin fills them (required:
   * allocate, free, the three copies); the core then treats its memory as addressable and every call as
   * synchronous. A 1.1 plugin leaves them NULL and fills the 1.1 functions below instead. */

  /* Null when the device can be used; otherwise why not ("no CUDA driver found"). Required. */
  const char* (*unavailable_reason)(void* ctx);
  int (*device_count)(void* ctx, int32_t* count); /* required */
  int (*allocate)(void* ctx, int32_t index, uint64_t nbytes, void** out);
  void (*free)(void* ctx, int32_t index, void* ptr, uint64_t nbytes);
  int (*copy_host_to_device)(void* ctx, int32_t index, void* dst, const void* src, uint64_t nbytes);
  int (*copy_device_to_host)(void* ctx, int32_t index, void* dst, const void* src, uint64_t nbytes);
  int (*copy_device_to_device)(void* ctx, int32_t dst_index, void* dst, int32_t src_index, const void* src,
                               uint64_t nbytes);
  int (*copy_strided)(void* ctx, int32_t index, const st_strided_copy_desc* desc); /* optional */
  int (*fill)(void* ctx, int32_t index, void* dst, uint64_t nbytes, const void* pattern,
              uint32_t pattern_size); /* optional */
  /* Waits for all queued work of device `index` (every stream). Optional in 1.0, required in 1.1. */
  int (*synchronize)(void* ctx, int32_t index);
  /* The current stream of device `index` (opaque). Optional in 1.0, required in 1.1. */
  int (*current_stream)(void* ctx, int32_t index, void** stream);
  const char* (*last_error)(void* ctx); /* required */

  /* ---- ABI 1.1: handles with offsets, streams, current device, events ----------------------------- */
  uint32_t memory_flags; /* ST_DEVICE_MEMORY_* */
  uint32_t reserved0;    /* 0 */

  /* Required. Allocates nbytes (> 0) on device `index` for use on `stream`; *handle is opaque (Note
   * [Device memory handles]); allocations are aligned to at least 256 bytes where that means anything. */
  int (*allocate_v2)(void* ctx, int32_t index, uint64_t nbytes, void* stream, void** handle);
  /* Required. Frees what allocate_v2 returned, stream-ordered after the work queued on `stream` (the
   * stream the memory was allocated for, or ST_STREAM_CURRENT). Must not fail; called from destructors. */
  void (*free_v2)(void* ctx, int32_t index, void* handle, uint64_t nbytes, void* stream);
  /* Required. Contiguous byte copies. `host` is a host address; dst/src are device memory. */
  int (*copy_from_host)(void* ctx, st_memory_ref dst, const void* host, uint64_t nbytes, void* stream, uint32_t flags);
  int (*copy_to_host)(void* ctx, void* host, st_memory_ref src, uint64_t nbytes, void* stream, uint32_t flags);
  /* Required. Device to device, possibly between two indices (peer copy or staged: the plugin decides);
   * `stream` is a stream of dst's device. */
  int (*copy_on_device)(void* ctx, st_memory_ref dst, st_memory_ref src, uint64_t nbytes, void* stream);
  /* Optional. Strided, dtype-converting copy (see st_strided_copy_v2). NULL: the core stages through the
   * host, converting there with the same rules (slower, but exact). */
  int (*copy_strided_v2)(void* ctx, const st_strided_copy_v2* desc, void* stream);
  /* Optional. Fills nbytes at dst with a repeated pattern of pattern_size (1, 2, 4, 8 or 16) bytes;
   * nbytes is a multiple of pattern_size. NULL: the core uploads the pattern. */
  int (*fill_v2)(void* ctx, st_memory_ref dst, uint64_t nbytes, const void* pattern, uint32_t pattern_size,
                 void* stream);
  /* Required. Waits until the work queued so far on `stream` of device `index` has finished. */
  int (*synchronize_stream)(void* ctx, int32_t index, void* stream);
  /* Required. The calling thread's current device index; set_current_device changes it. */
  int (*get_current_device)(void* ctx, int32_t* index);
  int (*set_current_device)(void* ctx, int32_t index);
  /* Optional (all five or none). Events order work across streams: the DLPack stream handshake records
   * an event on the producer's stream and makes the consumer's stream wait on it. An event may be
   * destroyed once the wait is queued. Without events the core synchronises the producer's stream.
   * An event is only ever used with the index it was created on, and the streams given with it are streams
   * of that index (the core orders streams of two devices, as around a peer copy, by synchronising the
   * producer's stream instead). */
  int (*event_create)(void* ctx, int32_t index, void** event);
  void (*event_destroy)(void* ctx, int32_t index, void* event);
  int (*event_record)(void* ctx, int32_t index, void* event, void* stream);
  int (*stream_wait_event)(void* ctx, int32_t index, void* stream, void* event);
  int (*event_synchronize)(void* ctx, int32_t index, void* event);
  /* Optional. The DLPack integer for a stream and back (for kDLCUDA the cudaStream_t value, with 1 and 2
   * the legacy and per-thread default streams). NULL: the device defines no DLPack stream (kDLMetal). */
  int (*stream_to_dlpack)(void* ctx, int32_t index, void* stream, int64_t* value);
  int (*stream_from_dlpack)(void* ctx, int32_t index, int64_t value, void** stream);
  /* Optional. Says whether `ptr` (a host-visible address given to from_blob) is memory of this device,
   * and of which index: 0 and *index set when it is; non-zero with last_error saying what it is
   * otherwise ("host memory", "memory of another process"). NULL: the core cannot check and trusts the
   * caller. */
  int (*locate_pointer)(void* ctx, const void* ptr, int32_t* index);
  /* Optional. Pinned (page-locked) host memory for fast transfers: host_allocate/host_free, and whether
   * a host address lies in such memory (*pinned = 0 or 1). */
  int (*host_allocate)(void* ctx, uint64_t nbytes, void** ptr);
  void (*host_free)(void* ctx, void* ptr, uint64_t nbytes);
  int (*host_is_pinned)(void* ctx, const void* ptr, int32_t* pinned);
  /* Optional. Marks an allocation as used on `stream` (torch's record_stream): the allocator must not
   * reuse it before the work queued so far on that stream has finished, even after it is freed. */
  int (*record_stream)(void* ctx, int32_t index, void* handle, void* stream);
  /* Optional. The allocator's own statistics ("reserved_bytes", "cache_hits", ...), one emit() each;
   * st.memory_stats(device) shows them beside the core's counters. */
  int (*allocator_stats)(void* ctx, int32_t index, void (*emit)(void* user, const char* key, int64_t value),
                         void* user);
} st_device_table;

/* The size the core knows for each minor (Note [Plugin ABI]). */
#define ST_DEVICE_TABLE_SIZE_1_0 (offsetof(st_device_table, last_error) + sizeof(void*))
#define ST_DEVICE_TABLE_SIZE_1_1 (offsetof(st_device_table, allocator_stats) + sizeof(void*))

/* What the core gives the plugin: functions it may call without linking against libslimtensor. */
typedef struct st_core_table {
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* core_version;
  /* ---- ABI 1.0 ---- */
  /* Itemsize of a c10 ScalarType code, or 0 when the code is unknown. */
  int32_t (*scalar_type_itemsize)(int32_t code);
  /* Device memory the plugin holds outside storages (an allocator's cache, a model's weights): bytes > 0
   * taken, < 0 given back. Counted in st.memory_stats(device) as plugin_bytes (live and peak) and
   * recorded in an active trace. */
  void (*note_device_memory)(int32_t device_type, int32_t index, int64_t bytes);
  /* ---- ABI 1.1 ---- */
  /* Converts `count` contiguous elements between host buffers with the core's bit-exact rules (the ones
   * the CPU copy_ uses: NaN payloads, denormals, round-to-nearest-even). Same dtype = a byte copy.
   * Returns 0, or non-zero for a pair the core cannot convert (float8 <-> other types); core_last_error
   * then says why. */
  int (*convert)(void* dst, int32_t dst_dtype, const void* src, int32_t src_dtype, uint64_t count);
  /* Same for a strided host copy (st_strided_copy_v2 with host addresses in handle, byte_offset added). */
  int (*convert_strided)(const st_strided_copy_v2* desc);
  /* Records an event of the plugin in an active trace ("cache_hit", "malloc", "graph_pool", ...), with the
   * bytes it concerns and the stream (may be NULL). Cheap when no trace is active. */
  void (*trace_device_event)(int32_t device_type, int32_t index, const char* op, int64_t bytes, void* stream);
  /* The calling thread's message for the last failed core-table call. */
  const char* (*core_last_error)(void);
  /* The address of one of the core's exported C functions (the aoti_torch_* shims of c/shim.h and the
   * slimtensor_* functions), or NULL: a plugin's device shims (aoti_torch_cuda_*) read tensors through
   * these without linking the core. */
  void* (*core_symbol)(const char* name);
} st_core_table;

#define ST_CORE_TABLE_SIZE_1_0 (offsetof(st_core_table, note_device_memory) + sizeof(void*))
#define ST_CORE_TABLE_SIZE_1_1 (offsetof(st_core_table, core_symbol) + sizeof(void*))

/* The plugin's entry point: fills *out with its table (owned by the plugin). Returns 0 on success. */
typedef int (*st_plugin_init_fn)(const st_core_table* core, const st_device_table** out);

/* Exported by libslimtensor: registers a plugin from C or C++ without Python (the capsule path calls
 * the same code). `source` names where it came from (shown by `slimtensor info`). Returns 0, or non-zero
 * with slimtensor_last_error() saying why (the same refusal messages as from Python). */
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
int slimtensor_register_device_plugin(st_plugin_init_fn init, const char* source);
/* Exported by libslimtensor (also declared in c/shim.h): the calling thread's message for the last failed
 * slimtensor_* or aoti_torch_* call. Declared here so that a C host needs this header alone. */
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
const char* slimtensor_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* SLIMTENSOR_C_DEVICE_PLUGIN_H_ */

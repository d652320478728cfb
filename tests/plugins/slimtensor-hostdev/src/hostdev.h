/* hostdev.h: internal interface of the hostdev test plugin (an ABI 1.1 device that cannot be used by accident).
 *
 * Note [hostdev]
 * hostdev is a real device plugin whose "device memory" happens to be host memory, built so that a core
 * cannot pass its tests by accident:
 *   - memory handles are tokens, not addresses (Note [hostdev tokens], hostdev_memory.c): dereferencing one
 *     faults, and any handle that is not exactly a live token (a token plus an offset, a freed token) is
 *     refused with an error naming the function and counted (bad_handles);
 *   - every stream is a worker thread that runs the copies and fills queued on it later, each after a delay
 *     with random jitter (Note [hostdev streams], hostdev_streams.c), so a missing synchronize or event wait
 *     reads stale data or writes too late, and a test sees it;
 *   - frees are stream-ordered, and an allocation freed while another stream still has work queued on it is
 *     counted (unordered_frees) and kept alive until that work ran, instead of corrupting memory;
 *   - every dtype conversion goes through the core table's convert_strided: one codec for CPU and device.
 * It is compiled as C (no C++ type can cross the boundary) and never links against libslimtensor: it only
 * includes slimtensor/c/device_plugin.h from the installed core. The plugin built against the frozen ABI 1.0
 * header (hostdev_abi10, src/abi10/) is a separate device with addressable memory and synchronous calls.
 */
#ifndef SLIMTENSOR_HOSTDEV_H_
#define SLIMTENSOR_HOSTDEV_H_

#include <stdint.h>

#include "slimtensor/c/device_plugin.h"

#define HOSTDEV_NAME "hostdev"
#define HOSTDEV_DEVICE_TYPE 20        /* c10 PrivateUse1 */
#define HOSTDEV_DLPACK_DEVICE_TYPE 12 /* kDLExtDev: DLPack's "extension device, for testing" */
#define HOSTDEV_DEVICE_COUNT 2
#define HOSTDEV_ALIGNMENT 256
/* Each device holds at most this many bytes unless SLIMTENSOR_HOSTDEV_CAPACITY (bytes) says otherwise,
 * so an absurd allocation fails like a real device's would instead of reaching the OS overcommit. */
#define HOSTDEV_DEFAULT_CAPACITY (1ull << 30)
/* When this environment variable is set (and not "0") at registration, the device reports itself absent. */
#define HOSTDEV_ABSENT_ENV "SLIMTENSOR_HOSTDEV_ABSENT"
#define HOSTDEV_CAPACITY_ENV "SLIMTENSOR_HOSTDEV_CAPACITY"
/* The delay before each stream operation runs, in microseconds, and the random jitter added to it (0 up to
 * this many microseconds). Read when the plugin loads; slimtensor_hostdev.set_delay() changes them. */
#define HOSTDEV_DELAY_ENV "SLIMTENSOR_HOSTDEV_DELAY_US"
#define HOSTDEV_JITTER_ENV "SLIMTENSOR_HOSTDEV_JITTER_US"
#define HOSTDEV_DEFAULT_DELAY_US 200
#define HOSTDEV_DEFAULT_JITTER_US 200
/* DLPack stream values (Note [hostdev DLPack streams], hostdev_streams.c). */
#define HOSTDEV_DLPACK_LEGACY_DEFAULT 1
#define HOSTDEV_DLPACK_PER_THREAD_DEFAULT 2
#define HOSTDEV_DLPACK_STREAM_BASE 100

/* The plugin's counters, per device index; read by the Python module for the tests. */
typedef struct hostdev_counters {
  int64_t allocations, frees, live_bytes, peak_bytes, failed_allocations;
  int64_t live_tokens;     /* allocations whose memory is still held (freed ones wait for their stream) */
  int64_t pending_frees;   /* free_v2 called, the stream has not reached the free yet */
  int64_t bad_handles;     /* handles the core passed that are not exactly a live token (must stay 0) */
  int64_t bad_handles_raw; /* the same, from the plugin's own Python test functions (expected there) */
  int64_t unordered_frees; /* memory freed while another stream still had work queued on it */
  int64_t copies_host_to_device, copies_device_to_host, copies_device_to_device;
  int64_t non_blocking_copies; /* host copies that returned before their operation ran */
  int64_t strided_copies, fills, synchronizes, stream_synchronizes;
  int64_t events_created, events_destroyed, events_recorded, events_waited, event_synchronizes;
  int64_t record_streams, stream_errors, errors;
} hostdev_counters;

/* Counters of one stream. */
typedef struct hostdev_stream_counters {
  int64_t device, ops_queued, ops_run, ops_delayed, waits;
} hostdev_stream_counters;

/* ---- hostdev_device.c: the table, errors, counters ---- */
/* Fills the device table; `core` is the core's table, kept for later calls (conversions). */
int hostdev_make_table(const st_core_table* core, st_device_table* out);
/* The real device's table once a core took it (NULL before), for the module's raw test functions. */
const st_device_table* hostdev_table(void);
void hostdev_publish_table(const st_device_table* table);
/* The core table the plugin was given, or NULL before init. */
const st_core_table* hostdev_core(void);
/* Records an error message for last_error (thread-local) and returns 1. printf-style. */
int hostdev_fail(const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* The calling thread's last error message ("" when none). */
const char* hostdev_last_error(void);
/* Snapshot of the counters of device `index` (0 <= index < HOSTDEV_DEVICE_COUNT); 0 on success. */
int hostdev_read_counters(int32_t index, hostdev_counters* out);
/* Counter updates (atomics; index is clamped to a valid device). */
typedef enum hostdev_counter {
  HD_C_ALLOCATIONS,
  HD_C_FREES,
  HD_C_FAILED_ALLOCATIONS,
  HD_C_PENDING_FREES,
  HD_C_BAD_HANDLES,
  HD_C_BAD_HANDLES_RAW,
  HD_C_UNORDERED_FREES,
  HD_C_H2D,
  HD_C_D2H,
  HD_C_D2D,
  HD_C_NON_BLOCKING,
  HD_C_STRIDED,
  HD_C_FILLS,
  HD_C_SYNCHRONIZES,
  HD_C_STREAM_SYNCHRONIZES,
  HD_C_EVENTS_CREATED,
  HD_C_EVENTS_DESTROYED,
  HD_C_EVENTS_RECORDED,
  HD_C_EVENTS_WAITED,
  HD_C_EVENT_SYNCHRONIZES,
  HD_C_RECORD_STREAMS,
  HD_C_STREAM_ERRORS,
  HD_C_ERRORS,
  HD_C_COUNT
} hostdev_counter;
void hostdev_count(int32_t index, hostdev_counter which, int64_t delta);
/* The module's raw test functions set this around their calls, so that the bad handles they pass on purpose
 * are counted as bad_handles_raw, not as the core's bad_handles. */
void hostdev_set_raw_call(int raw);
/* Records "hostdev <function>(): <what>", counts a bad handle on device `index`, returns 1. */
int hostdev_bad_handle(int32_t index, const char* function, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- hostdev_memory.c: tokens (Note [hostdev tokens]) ---- */
/* A resolved side of a copy: the real host block behind a token, plus the slot to release afterwards. */
typedef struct hd_span {
  unsigned char* base; /* the block + byte_offset */
  uint32_t slot;
  int32_t device;
} hd_span;
int hostdev_memory_allocate(int32_t index, uint64_t nbytes, void** token);
/* Takes the token away from the core at once (later uses are bad handles); the memory itself is released
 * by hostdev_memory_release once the free operation ran on its stream. Returns the slot, or -1 (error set). */
int64_t hostdev_memory_retire(const char* function, int32_t index, void* token, uint64_t nbytes);
void hostdev_memory_release(uint32_t slot, int32_t free_stream_device);
/* Checks that `ref` is exactly a live token of ref.device_index with [byte_offset, byte_offset + nbytes)
 * inside it, and takes one use of the slot (held until hostdev_memory_unuse); else a bad handle. */
int hostdev_memory_use(const char* function, st_memory_ref ref, uint64_t nbytes, hd_span* out);
void hostdev_memory_unuse(uint32_t slot);
/* Streams recorded on a live token by record_stream, to order its free after them. */
int hostdev_memory_record_stream(const char* function, int32_t index, void* token, int64_t stream_id);
/* Up to `max` recorded stream ids of a slot (only while it is retired, before release). */
int hostdev_memory_recorded_streams(uint32_t slot, int64_t* ids, int max);
/* 0 and *index when ptr is exactly a live token; otherwise non-zero with the message (no bad handle). */
int hostdev_memory_locate(const void* ptr, int32_t* index);
/* Of a device: live and peak bytes (as the core asked), bytes held (rounded blocks, including those waiting
 * for their stream), live tokens, and retired tokens whose free has not run yet. */
void hostdev_memory_stats(int32_t index, int64_t* live, int64_t* peak, int64_t* held, int64_t* tokens,
                          int64_t* retired);
/* Pinned host memory from host_allocate: bytes and blocks live. */
void hostdev_pinned_stats(int64_t* bytes, int64_t* blocks);

/* ---- hostdev_streams.c: streams, operations, events (Note [hostdev streams]) ---- */
typedef struct hd_stream hd_stream;
/* Resolves a stream argument (ST_STREAM_CURRENT or a hostdev stream handle) of device `index`; NULL with
 * the error set (and a bad handle counted) when it is not one. allow_any_device: a stream of any device. */
hd_stream* hostdev_stream_resolve(const char* function, int32_t index, void* stream);
int64_t hostdev_stream_id(const hd_stream* s);
int32_t hostdev_stream_device(const hd_stream* s);
void* hostdev_stream_handle(const hd_stream* s);
hd_stream* hostdev_stream_by_id(int64_t id);    /* NULL when no such stream */
void* hostdev_stream_handle_for_id(int64_t id); /* the handle a stream of that id has (or would have) */
hd_stream* hostdev_default_stream(int32_t index);
hd_stream* hostdev_current_stream(int32_t index);
int hostdev_set_current_stream(int32_t index, hd_stream* s);
hd_stream* hostdev_stream_create(int32_t index);
hd_stream* hostdev_per_thread_stream(int32_t index);
int hostdev_read_stream_counters(int64_t id, hostdev_stream_counters* out);
int64_t hostdev_stream_count(void);
/* The calling thread's current device (Note [Current device]). */
int32_t hostdev_get_device(void);
void hostdev_set_device(int32_t index);
/* Delays (microseconds), for every stream. */
void hostdev_set_delay(int64_t delay_us, int64_t jitter_us);
void hostdev_get_delay(int64_t* delay_us, int64_t* jitter_us);

/* Operations. Spans hold a use of their slots, released when the operation ran. */
typedef enum hd_op_kind { HD_OP_COPY, HD_OP_FILL, HD_OP_STRIDED, HD_OP_WAIT, HD_OP_FREE, HD_OP_STALL } hd_op_kind;
typedef struct hd_strided_op {
  int32_t ndim, dst_dtype, src_dtype;
  int64_t* sizes; /* ndim sizes, then ndim dst strides, then ndim src strides (one allocation) */
  unsigned char* dst;
  const unsigned char* src;
} hd_strided_op;
typedef struct hd_op_args {
  hd_op_kind kind;
  int32_t counter_device;
  /* COPY: memmove(dst, src, nbytes); spans[] are the slots to release (0, 1 or 2). */
  unsigned char* dst;
  const unsigned char* src;
  uint64_t nbytes;
  /* FILL */
  unsigned char pattern[16];
  uint32_t pattern_size;
  hd_strided_op strided;
  /* WAIT: until `wait_for` has completed `wait_seq` operations. */
  hd_stream* wait_for;
  uint64_t wait_seq;
  /* FREE */
  uint32_t free_slot;
  /* STALL */
  int64_t stall_us;
  uint32_t slots[2];
  int nslots;
} hd_op_args;
/* Queues an operation; *seq (optional) receives its sequence number. Ownership of strided.sizes passes to
 * the stream. Returns non-zero (error set, nothing queued, slots released) when the host is out of memory. */
int hostdev_enqueue(hd_stream* s, const hd_op_args* op, uint64_t* seq);
/* Waits until `s` has completed operation `seq` (all when seq == UINT64_MAX); then reports (and clears) an
 * error an operation of the stream hit while running, naming `function`. */
int hostdev_stream_wait(const char* function, hd_stream* s, uint64_t seq);
/* Number of operations queued so far on `s` (the sequence number of the last one). */
uint64_t hostdev_stream_enqueued(hd_stream* s);
int hostdev_synchronize_device(const char* function, int32_t index);
/* Records a failure of a running operation on its stream (reported by the next wait). */
void hostdev_stream_fail(hd_stream* s, const char* message);

/* Events. */
int hostdev_event_create(int32_t index, void** event);
void hostdev_event_destroy(int32_t index, void* event);
int hostdev_event_record(int32_t index, void* event, void* stream);
int hostdev_stream_wait_event(int32_t index, void* stream, void* event);
int hostdev_event_synchronize(int32_t index, void* event);

/* ---- hostdev_strided.c ---- */
/* Checks a strided copy (bounds of both sides, dtypes the core converts) and builds its operation. */
int hostdev_strided_prepare(const st_strided_copy_v2* desc, hd_op_args* op);
/* Runs it (on a stream's worker) through the core's convert_strided. */
int hostdev_strided_run(const hd_strided_op* op);

/* ---- hostdev_variants.c ---- */
typedef enum hostdev_variant {
  HOSTDEV_OK = 0,       /* the real device (ABI 1.1) */
  HOSTDEV_ABI10,        /* hostdev_abi10: built against the frozen ABI 1.0 header; must load */
  HOSTDEV_BAD_MAJOR,    /* abi_major 99: a plugin built for a future, incompatible core */
  HOSTDEV_BAD_MINOR,    /* abi_minor one above the core's: needs a newer core */
  HOSTDEV_SMALL_STRUCT, /* says 1.1 but its table ends before allocator_stats */
  HOSTDEV_NO_V2_MEMORY, /* says 1.1 but leaves allocate_v2 NULL (a required 1.1 function) */
  HOSTDEV_INIT_FAILS,   /* st_plugin_init returns an error and no table */
  HOSTDEV_VARIANT_COUNT
} hostdev_variant;
st_plugin_init_fn hostdev_init_function(hostdev_variant variant);
const char* hostdev_variant_name(hostdev_variant variant);

#endif /* SLIMTENSOR_HOSTDEV_H_ */

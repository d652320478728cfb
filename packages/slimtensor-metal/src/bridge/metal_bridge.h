/* metal_bridge.h: the C interface between the plain C++ Metal plugin and Apple's Metal, as one table of functions.
 *
 * Note [Metal bridge]
 * Everything Objective-C lives behind this table: metal_bridge.mm fills it with Metal calls on Apple
 * platforms (mtlb_system_api), and the Linux unit tests fill it with an in-memory test double
 * (tests/metal/cpp/metal_bridge_test_double.cpp). The plugin logic (registry, cache, streams, shims) only
 * ever calls through a `const mtlb_api*`, so both implementations exercise the same C++ code.
 *
 * Note [Bridge ownership]
 * Every object pointer the table hands out (device, buffer, queue, command buffer, encoder, library,
 * pipeline, shared event) is a +1 reference owned by the caller, which gives it back with exactly one
 * `release` call. Objects passed *into* a function are borrowed for the duration of the call (the bridge
 * retains what Metal must keep longer, as Metal itself does: a command buffer retains the buffers, events
 * and pipelines encoded into it). Pointers are opaque: the plugin never dereferences, compares by
 * address for ordering, or offsets them.
 *
 * Note [Bridge errors]
 * Functions returning int return 0 on success; on failure they write a NUL-terminated sentence into
 * err[0..err_len) naming the Metal call and what it reported. They never throw or abort.
 */
#ifndef SLIMTENSOR_METAL_BRIDGE_H_
#define SLIMTENSOR_METAL_BRIDGE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One matrix operand of mtlb_api.matmul: row-major rows x cols with row_bytes between rows, `count`
 * matrices matrix_bytes apart (batched), starting at byte `offset` of `buffer`. */
typedef struct mtlb_matrix {
  void* buffer;
  uint64_t offset;
  uint64_t rows, cols;
  uint64_t row_bytes;
  uint64_t matrix_bytes;
} mtlb_matrix;

/* C = alpha * op(A) @ op(B) + beta * C over `batch` matrices (MPSMatrixMultiplication). dtype is a c10
 * code (6 float32 or 5 float16). */
typedef struct mtlb_matmul_desc {
  int32_t dtype;
  int32_t transpose_a, transpose_b;
  uint64_t m, n, k, batch;
  double alpha, beta;
  mtlb_matrix a, b, c;
} mtlb_matmul_desc;

/* Command buffer status as the plugin needs it. */
#define MTLB_STATUS_PENDING 0   /* not yet committed, or committed and not finished */
#define MTLB_STATUS_COMPLETED 1 /* finished without error */
#define MTLB_STATUS_ERROR 2     /* finished with an error (the GPU did not run it to completion) */

typedef struct mtlb_api {
  /* ---- objects ---- */
  void (*release)(void* object); /* gives back one +1 reference (Note [Bridge ownership]); NULL is ignored */

  /* ---- device ---- */
  /* The system default Metal device, or an error saying why there is none. */
  int (*create_device)(void** device, char* err, size_t err_len);
  /* Writes the device's name (NUL-terminated, truncated to out_len). */
  void (*device_name)(void* device, char* out, size_t out_len);
  /* The largest buffer the device can allocate (MTLDevice.maxBufferLength). */
  uint64_t (*max_buffer_length)(void* device);

  /* ---- buffers (always MTLResourceStorageModeShared: host-visible unified memory) ---- */
  int (*new_buffer)(void* device, uint64_t length, void** buffer, char* err, size_t err_len);
  void* (*buffer_contents)(void* buffer); /* the host address of byte 0 */
  uint64_t (*buffer_length)(void* buffer);
  /* Whether `object` is an MTLBuffer in shared storage mode (1) or not (0): checks a borrowed handle the
   * plugin did not allocate (DLPack import) before it is used. */
  int (*is_shared_buffer)(void* object);

  /* ---- queues and command buffers ---- */
  int (*new_command_queue)(void* device, void** queue, char* err, size_t err_len);
  int (*new_command_buffer)(void* queue, void** command_buffer, char* err, size_t err_len);
  void (*commit)(void* command_buffer);
  /* Blocks until the command buffer has finished; non-zero (with err) when it finished with an error. */
  int (*wait_until_completed)(void* command_buffer, char* err, size_t err_len);
  int (*status)(void* command_buffer); /* MTLB_STATUS_* */

  /* ---- blit work (each call opens a blit encoder on the command buffer, encodes, ends it) ---- */
  /* offsets and size multiples of 4 (macOS requires it) */
  int (*blit_copy)(void* command_buffer, void* src, uint64_t src_offset, void* dst, uint64_t dst_offset, uint64_t size,
                   char* err, size_t err_len);
  /* fills [offset, offset + size) with one byte value; offset and size multiples of 4 */
  int (*blit_fill)(void* command_buffer, void* buffer, uint64_t offset, uint64_t size, uint8_t value, char* err,
                   size_t err_len);

  /* ---- compute ---- */
  int (*compile_library)(void* device, const char* source, void** library, char* err, size_t err_len);
  /* A pipeline for the library's function `name`; *max_threads = maxTotalThreadsPerThreadgroup,
   * *simd_width = threadExecutionWidth. */
  int (*new_pipeline)(void* device, void* library, const char* name, void** pipeline, uint32_t* max_threads,
                      uint32_t* simd_width, char* err, size_t err_len);
  int (*new_compute_encoder)(void* command_buffer, void** encoder, char* err, size_t err_len);
  void (*set_pipeline)(void* encoder, void* pipeline);
  void (*set_buffer)(void* encoder, void* buffer, uint64_t offset, uint32_t index);
  void (*set_bytes)(void* encoder, const void* bytes, uint64_t length, uint32_t index); /* length <= 4096 */
  /* dispatchThreads:threadsPerThreadgroup: (non-uniform threadgroups, every Apple-silicon GPU) */
  void (*dispatch_threads)(void* encoder, const uint64_t grid[3], const uint64_t group[3]);
  void (*end_encoding)(void* encoder);

  /* ---- shared events ---- */
  int (*new_shared_event)(void* device, void** event, char* err, size_t err_len);
  uint64_t (*event_signaled_value)(void* event);
  void (*encode_signal_event)(void* command_buffer, void* event, uint64_t value);
  void (*encode_wait_event)(void* command_buffer, void* event, uint64_t value);

  /* ---- MetalPerformanceShaders ---- */
  int (*matmul)(void* device, void* command_buffer, const mtlb_matmul_desc* desc, char* err, size_t err_len);
} mtlb_api;

/* The Metal implementation (metal_bridge.mm, Apple platforms only). */
const mtlb_api* mtlb_system_api(void);

#ifdef __cplusplus
}
#endif

#endif /* SLIMTENSOR_METAL_BRIDGE_H_ */

/* nccl_collectives.h: NCCL communicators as slimtensor collective groups (the "nccl" backend of
 * slimtensor.distributed), as libslimtensor_cuda_aoti.so exports them.
 *
 * A communicator spans one CUDA device per rank. Rank 0 makes the unique id (slimtensor_cuda_nccl_unique_id),
 * the ranks exchange it through the rendezvous store, each creates its communicator, and registers it under
 * its group's name (Note [Collective groups] in slimtensor/c/collectives.h), where the c10d shims of a
 * compiled model find it without Python. Note [NCCL communicators] in src/collectives/nccl_communicator.cpp
 * says how work is ordered on streams and how a dead peer becomes an error within the timeout. Every
 * function returns 0 on success, else nonzero with slimtensor_cuda_aoti_last_error() set; NCCL is opened on
 * first use (pip install nvidia-nccl-cu13).
 */
#ifndef SLIMTENSOR_C_NCCL_COLLECTIVES_H
#define SLIMTENSOR_C_NCCL_COLLECTIVES_H

#include <stdint.h>

#include "slimtensor/c/shim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL's version code (ncclGetVersion: 22803 for 2.28.3). */
SLIMTENSOR_C_API int32_t slimtensor_cuda_nccl_version(int32_t* version);
/* A new NCCL unique id into `id` (`id_bytes` must be 128, NCCL_UNIQUE_ID_BYTES). */
SLIMTENSOR_C_API int32_t slimtensor_cuda_nccl_unique_id(uint8_t* id, int64_t id_bytes);
/* Joins the communicator of unique id `id` as `rank` of `size` on cuda:`device`, waiting at most `timeout_s`
 * seconds for the other ranks (then aborts); `timeout_s` also bounds every later collective. *comm is a
 * reference the caller drops with slimtensor_cuda_nccl_release. */
SLIMTENSOR_C_API int32_t slimtensor_cuda_nccl_create(const uint8_t* id, int64_t id_bytes, int32_t rank, int32_t size,
                                                     int32_t device, double timeout_s, void** comm);
/* Registers the communicator as the collective group `group_name` (it holds a reference until unregistered). */
SLIMTENSOR_C_API int32_t slimtensor_cuda_nccl_register(void* comm, const char* group_name);
/* In-place all_reduce of `numel` contiguous elements of c10 ScalarType `dtype` at device address `data` of
 * cuda:`device`, with ST_REDUCE_* `op`, queued on the calling thread's current stream of the device. */
SLIMTENSOR_C_API int32_t slimtensor_cuda_nccl_all_reduce(void* comm, void* data, int64_t numel, int32_t dtype,
                                                         int32_t device, int32_t op);
/* Makes the current stream of cuda:`device` wait for the all_reduce calls queued on `data` so far. */
SLIMTENSOR_C_API int32_t slimtensor_cuda_nccl_wait(void* comm, void* data, int32_t device);
/* Drops the caller's reference; the last one finishes (or, past the timeout, aborts) and destroys the
 * communicator. NULL is ignored. */
SLIMTENSOR_C_API void slimtensor_cuda_nccl_release(void* comm);
/* The ncclDataType_t used for c10 ScalarType `dtype` (-1: NCCL has none) and the ncclRedOp_t for ST_REDUCE_*
 * `op` (-1: none); no NCCL needed. */
SLIMTENSOR_C_API int32_t slimtensor_cuda_nccl_datatype(int32_t dtype);
SLIMTENSOR_C_API int32_t slimtensor_cuda_nccl_reduce_op(int32_t op);
/* Communicators alive in this process (leak checks). */
SLIMTENSOR_C_API int64_t slimtensor_cuda_nccl_live_communicators(void);

#ifdef __cplusplus
}
#endif

#endif /* SLIMTENSOR_C_NCCL_COLLECTIVES_H */

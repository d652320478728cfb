/* slimtensor/c/collectives.h: named process groups, as the c10d collective shims of compiled models find them.
 *
 * Note [Collective groups]
 * A model compiled from torch's functional collectives calls
 *   aoti_torch_cpu__c10d_functional_all_reduce(t, "sum", group_name, &out)     (a new tensor, reduced)
 *   aoti_torch_cpu__c10d_functional_all_reduce_(t, "sum", group_name, &out)    (t itself, reduced in place)
 *   aoti_torch_cpu__c10d_functional_wait_tensor(out, &same)                    (once the result is needed)
 * (named "cpu" by torch whatever the tensor's device). The library that moves the bytes (NCCL, in the CUDA
 * plugin; a host stand-in in the tests) registers each group under torch's name for it with
 * slimtensor_register_collective_group. all_reduce may return before the work is done (e.g. queued on the
 * tensor's current stream); the shims remember which group each in-flight storage waits on, and
 * wait_tensor calls that group's wait. A group's functions return 0 on success, else nonzero with a
 * message from last_error (copied at once); an unknown group name, an op outside ST_REDUCE_* or a dtype
 * the group refuses is an AOTI error naming the shim, the group and the reason, never a crash.
 * The three shims are declared in slimtensor/c/shim_cpu.h, where torch declares them.
 * Registering replaces nothing: a name in use is an error until unregistered. release (may be NULL) is
 * called once the group is unregistered and no in-flight work refers to it any more.
 */
#ifndef SLIMTENSOR_C_COLLECTIVES_H_
#define SLIMTENSOR_C_COLLECTIVES_H_

#include <stdint.h>

#include "slimtensor/c/device_plugin.h"
#include "slimtensor/c/shim_cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ST_REDUCE_SUM = 0, ST_REDUCE_AVG = 1, ST_REDUCE_PRODUCT = 2, ST_REDUCE_MIN = 3, ST_REDUCE_MAX = 4 };

typedef struct st_collective_group {
  uint32_t struct_size; /* sizeof(st_collective_group) of the writer */
  void* context;
  /* Reduce `numel` contiguous elements of c10 ScalarType `dtype` at `data` (device `device_type`:`device_index`)
   * over the group, in place. */
  int32_t (*all_reduce)(void* context, st_memory_ref data, int64_t numel, int32_t dtype, int32_t device_type,
                        int32_t op);
  /* Return once the all_reduce calls issued on `data` are done (or ordered before the caller's stream). */
  int32_t (*wait)(void* context, st_memory_ref data, int32_t device_type);
  const char* (*last_error)(void* context);
  void (*release)(void* context);
} st_collective_group;

SLIMTENSOR_C_API int32_t slimtensor_register_collective_group(const char* name, const st_collective_group* group);
SLIMTENSOR_C_API int32_t slimtensor_unregister_collective_group(const char* name);
/* The number of registered groups and of storages with work in flight (leak checks). */
SLIMTENSOR_C_API int64_t slimtensor_collective_groups(void);
SLIMTENSOR_C_API int64_t slimtensor_collective_pending(void);

#ifdef __cplusplus
}
#endif

#endif /* SLIMTENSOR_C_COLLECTIVES_H_ */

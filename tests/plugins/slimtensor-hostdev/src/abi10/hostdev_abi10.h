/* abi10/hostdev_abi10.h: the ABI 1.0 hostdev variant, seen from the rest of the plugin without its header.
 *
 * hostdev_abi10.c is compiled against the frozen ABI 1.0 header (device_plugin_1_0.h), whose types have the
 * same names as today's, so no other file may see both: this interface uses plain C types only. */
#ifndef SLIMTENSOR_HOSTDEV_ABI10_H_
#define SLIMTENSOR_HOSTDEV_ABI10_H_

#include <stdint.h>

#define HOSTDEV_ABI10_NAME "hostdev_abi10"
#define HOSTDEV_ABI10_DEVICE_TYPE 40 /* no c10 code: a plugin-declared one */
#define HOSTDEV_ABI10_DEVICE_COUNT 2
#define HOSTDEV_ABI10_COUNTER_COUNT 10

/* The variant's st_plugin_init (ABI 1.0 signature), as an untyped function address. */
void* hostdev_abi10_init_address(void);
/* sizeof(st_device_table) and ST_PLUGIN_ABI_MINOR of the frozen header. */
uint32_t hostdev_abi10_table_size(void);
uint32_t hostdev_abi10_minor(void);
/* The counter names, and the values for device `index` (0 on success). */
const char* hostdev_abi10_counter_name(int i);
int hostdev_abi10_counters(int32_t index, int64_t out[HOSTDEV_ABI10_COUNTER_COUNT]);

#endif /* SLIMTENSOR_HOSTDEV_ABI10_H_ */

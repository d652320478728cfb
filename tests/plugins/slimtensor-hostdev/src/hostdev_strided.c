/* hostdev_strided.c: hostdev's copy_strided_v2: checks an N-d strided copy and runs it, converting dtypes,
 * through the core table's convert_strided (one codec: the CPU's own rules, Note [hostdev]). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hostdev.h"

#define HD_MAX_NDIM 64

/* The bytes one side spans: (1 + sum (size-1)*stride) * itemsize, overflow-checked. */
static int side_extent(const char* side, int32_t ndim, const int64_t* sizes, const int64_t* strides, int32_t itemsize,
                       uint64_t* bytes) {
  int64_t last = 0;
  for (int32_t d = 0; d < ndim; ++d) {
    if (strides[d] < 0) {
      return hostdev_fail(
          "hostdev copy_strided_v2(): %s_strides[%d] is negative (%lld); the ABI passes "
          "strides >= 0",
          side, (int)d, (long long)strides[d]);
    }
    int64_t step;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &step) || __builtin_add_overflow(last, step, &last)) {
      return hostdev_fail("hostdev copy_strided_v2(): the %s extent overflows int64", side);
    }
  }
  int64_t n;
  if (__builtin_add_overflow(last, (int64_t)1, &n) || __builtin_mul_overflow(n, (int64_t)itemsize, &n)) {
    return hostdev_fail("hostdev copy_strided_v2(): the %s extent overflows int64", side);
  }
  *bytes = (uint64_t)n;
  return 0;
}

int hostdev_strided_prepare(const st_strided_copy_v2* desc, hd_op_args* op) {
  const st_core_table* core = hostdev_core();
  memset(op, 0, sizeof *op);
  if (!desc) return hostdev_fail("hostdev copy_strided_v2(): desc must not be NULL");
  if (desc->struct_size < sizeof(st_strided_copy_v2)) {
    return hostdev_fail("hostdev copy_strided_v2(): desc->struct_size is %u, expected at least %u", desc->struct_size,
                        (unsigned)sizeof(st_strided_copy_v2));
  }
  const int32_t ndim = desc->ndim;
  if (ndim < 0 || ndim > HD_MAX_NDIM) {
    return hostdev_fail("hostdev copy_strided_v2(): ndim must be in [0, %d], got %d", HD_MAX_NDIM, (int)ndim);
  }
  if (ndim > 0 && (!desc->sizes || !desc->dst_strides || !desc->src_strides)) {
    return hostdev_fail("hostdev copy_strided_v2(): sizes and strides must not be NULL for ndim %d", (int)ndim);
  }
  int64_t numel = 1;
  for (int32_t d = 0; d < ndim; ++d) {
    if (desc->sizes[d] < 0) {
      return hostdev_fail("hostdev copy_strided_v2(): sizes[%d] is negative (%lld)", (int)d, (long long)desc->sizes[d]);
    }
    if (__builtin_mul_overflow(numel, desc->sizes[d], &numel)) {
      return hostdev_fail("hostdev copy_strided_v2(): the number of elements overflows int64");
    }
  }
  const int32_t dst_size = core->scalar_type_itemsize(desc->dst_dtype);
  const int32_t src_size = core->scalar_type_itemsize(desc->src_dtype);
  if (dst_size <= 0 || src_size <= 0 || dst_size > 16 || src_size > 16) {
    return hostdev_fail("hostdev copy_strided_v2(): unknown dtype code (dst %d, src %d)", (int)desc->dst_dtype,
                        (int)desc->src_dtype);
  }
  /* Ask the core whether it converts this pair, on one zero element, so that the caller hears it now and
   * not from a worker thread later. */
  unsigned char zero[16] = {0}, probe[16];
  if (core->convert(probe, desc->dst_dtype, zero, desc->src_dtype, 1) != 0) {
    return hostdev_fail("hostdev copy_strided_v2(): the core cannot convert dtype %d to %d: %s", (int)desc->src_dtype,
                        (int)desc->dst_dtype, core->core_last_error());
  }
  op->kind = HD_OP_STRIDED;
  op->counter_device = desc->dst.device_index;
  if (numel == 0) return 0; /* nothing to do; nslots = 0 and no sizes: the caller does not queue it */

  uint64_t dst_bytes, src_bytes;
  if (side_extent("dst", ndim, desc->sizes, desc->dst_strides, dst_size, &dst_bytes) ||
      side_extent("src", ndim, desc->sizes, desc->src_strides, src_size, &src_bytes))
    return 1;
  hd_span dst, src;
  if (hostdev_memory_use("copy_strided_v2", desc->dst, dst_bytes, &dst)) return 1;
  if (hostdev_memory_use("copy_strided_v2", desc->src, src_bytes, &src)) {
    hostdev_memory_unuse(dst.slot);
    return 1;
  }
  int64_t* arrays = malloc(sizeof(int64_t) * (size_t)(3 * (ndim > 0 ? ndim : 1)));
  if (!arrays) {
    hostdev_memory_unuse(dst.slot);
    hostdev_memory_unuse(src.slot);
    return hostdev_fail("hostdev copy_strided_v2(): out of host memory");
  }
  if (ndim > 0) {
    memcpy(arrays, desc->sizes, sizeof(int64_t) * (size_t)ndim);
    memcpy(arrays + ndim, desc->dst_strides, sizeof(int64_t) * (size_t)ndim);
    memcpy(arrays + 2 * ndim, desc->src_strides, sizeof(int64_t) * (size_t)ndim);
  }
  op->strided.ndim = ndim;
  op->strided.dst_dtype = desc->dst_dtype;
  op->strided.src_dtype = desc->src_dtype;
  op->strided.sizes = arrays;
  op->strided.dst = dst.base;
  op->strided.src = src.base;
  op->slots[0] = dst.slot;
  op->slots[1] = src.slot;
  op->nslots = 2;
  return 0;
}

int hostdev_strided_run(const hd_strided_op* op) {
  const st_core_table* core = hostdev_core();
  const int32_t ndim = op->ndim;
  st_strided_copy_v2 host;
  memset(&host, 0, sizeof host);
  host.struct_size = (uint32_t)sizeof host;
  host.ndim = ndim;
  host.sizes = op->sizes;
  host.dst_strides = op->sizes + ndim;
  host.src_strides = op->sizes + 2 * ndim;
  host.dst_dtype = op->dst_dtype;
  host.src_dtype = op->src_dtype;
  host.dst.handle = op->dst; /* host addresses: the real blocks behind the tokens, offsets already applied */
  host.src.handle = (void*)op->src;
  if (core->convert_strided(&host) != 0) {
    return hostdev_fail(
        "hostdev copy_strided_v2(): the core's convert_strided failed while the stream ran the "
        "copy: %s",
        core->core_last_error());
  }
  return 0;
}

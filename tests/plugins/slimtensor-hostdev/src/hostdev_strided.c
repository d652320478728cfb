/* hostdev_strided.c: hostdev's copy_strided: an N-d strided copy within one device, converting dtypes.
 *
 * Equal dtypes of any itemsize (the core tells us the itemsize) are copied byte for byte; different ones
 * element by element through hostdev_convert (Note [hostdev conversions]). */
#include <stdbool.h>
#include <string.h>

#include "hostdev.h"

#define HD_MAX_NDIM 64

static bool is_contiguous(int32_t ndim, const int64_t* sizes, const int64_t* strides) {
  int64_t expected = 1;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

int hostdev_copy_strided(const st_core_table* core, const st_strided_copy_desc* desc) {
  if (!desc) return hostdev_fail("hostdev copy_strided(): desc must not be NULL");
  const int32_t ndim = desc->ndim;
  if (ndim < 0 || ndim > HD_MAX_NDIM) {
    return hostdev_fail("hostdev copy_strided(): ndim must be in [0, %d], got %d", HD_MAX_NDIM, (int)ndim);
  }
  if (ndim > 0 && (!desc->sizes || !desc->dst_strides || !desc->src_strides)) {
    return hostdev_fail("hostdev copy_strided(): sizes and strides must not be NULL for ndim %d", (int)ndim);
  }
  int64_t numel = 1;
  for (int32_t d = 0; d < ndim; ++d) {
    if (desc->sizes[d] < 0) {
      return hostdev_fail("hostdev copy_strided(): sizes[%d] is negative (%lld)", (int)d,
                          (long long)desc->sizes[d]);
    }
    if (__builtin_mul_overflow(numel, desc->sizes[d], &numel)) {
      return hostdev_fail("hostdev copy_strided(): the number of elements overflows int64");
    }
  }
  if (numel == 0) return 0;
  if (!desc->dst || !desc->src) return hostdev_fail("hostdev copy_strided(): dst and src must not be NULL");

  const int32_t dst_size = core && core->scalar_type_itemsize ? core->scalar_type_itemsize(desc->dst_dtype) : 0;
  const int32_t src_size = core && core->scalar_type_itemsize ? core->scalar_type_itemsize(desc->src_dtype) : 0;
  if (dst_size <= 0 || src_size <= 0) {
    return hostdev_fail("hostdev copy_strided(): unknown dtype code (dst %d, src %d)", (int)desc->dst_dtype,
                        (int)desc->src_dtype);
  }
  const bool same = desc->dst_dtype == desc->src_dtype;
  if (!same && (!hostdev_convertible(desc->dst_dtype) || !hostdev_convertible(desc->src_dtype))) {
    return hostdev_fail("hostdev copy_strided(): converting dtype code %d to %d is not supported (float8 "
                        "types are only copied to the same dtype)",
                        (int)desc->src_dtype, (int)desc->dst_dtype);
  }
  if (same && is_contiguous(ndim, desc->sizes, desc->dst_strides) &&
      is_contiguous(ndim, desc->sizes, desc->src_strides)) {
    memmove(desc->dst, desc->src, (size_t)numel * (size_t)dst_size);
    return 0;
  }

  /* Walk every index in row-major order, keeping element offsets of dst and src incrementally. */
  int64_t index[HD_MAX_NDIM] = {0};
  int64_t dst_off = 0, src_off = 0;
  unsigned char* dst = (unsigned char*)desc->dst;
  const unsigned char* src = (const unsigned char*)desc->src;
  for (int64_t n = 0; n < numel; ++n) {
    void* d = dst + dst_off * dst_size;
    const void* s = src + src_off * src_size;
    if (same) memcpy(d, s, (size_t)dst_size);
    else hostdev_convert(desc->dst_dtype, d, desc->src_dtype, s);
    for (int32_t k = ndim - 1; k >= 0; --k) {
      if (++index[k] < desc->sizes[k]) {
        dst_off += desc->dst_strides[k];
        src_off += desc->src_strides[k];
        break;
      }
      dst_off -= desc->dst_strides[k] * (desc->sizes[k] - 1);
      src_off -= desc->src_strides[k] * (desc->sizes[k] - 1);
      index[k] = 0;
    }
  }
  return 0;
}

// layout.cpp: stride-aware byte extents (Note [Stride-aware sizes]).
#include "layout.h"

#include <cinttypes>

#include "checked.h"
#include "errors.h"

namespace slimtensor_metal {

bool numel_of(const char* fn, int32_t ndim, const int64_t* sizes, uint64_t* out) {
  if (ndim < 0 || (ndim > 0 && !sizes)) {
    fail("%s: needs ndim >= 0 and a sizes array but got ndim %d and sizes %p", fn, ndim, (const void*)sizes);
    return false;
  }
  uint64_t n = 1;
  for (int32_t i = 0; i < ndim; ++i) {
    if (sizes[i] < 0) {
      fail("%s: sizes must be >= 0 but sizes[%d] is %" PRId64, fn, i, sizes[i]);
      return false;
    }
    if (!mul_u64(n, static_cast<uint64_t>(sizes[i]), &n)) {
      fail("%s: the element count overflows 64 bits at sizes[%d] = %" PRId64, fn, i, sizes[i]);
      return false;
    }
  }
  *out = n;
  return true;
}

bool extent_bytes(const char* fn, int32_t ndim, const int64_t* sizes, const int64_t* strides, int64_t itemsize,
                  uint64_t* out) {
  uint64_t n;
  if (!numel_of(fn, ndim, sizes, &n)) return false;
  if (ndim > 0 && !strides) {
    fail("%s: needs a strides array for ndim %d but got NULL", fn, ndim);
    return false;
  }
  if (itemsize <= 0) {
    fail("%s: needs an itemsize > 0 but got %" PRId64, fn, itemsize);
    return false;
  }
  if (n == 0) {
    *out = 0;
    return true;
  }
  uint64_t last = 0;  // index of the last element touched
  for (int32_t i = 0; i < ndim; ++i) {
    if (strides[i] < 0) {
      fail("%s: strides must be >= 0 but strides[%d] is %" PRId64 "; make the tensor contiguous first", fn, i,
           strides[i]);
      return false;
    }
    uint64_t term;
    if (!mul_u64(static_cast<uint64_t>(sizes[i] - 1), static_cast<uint64_t>(strides[i]), &term) ||
        !add_u64(last, term, &last)) {
      fail("%s: the view's extent overflows 64 bits at dimension %d (size %" PRId64 ", stride %" PRId64 ")", fn, i,
           sizes[i], strides[i]);
      return false;
    }
  }
  uint64_t elems, bytes;
  if (!add_u64(last, 1, &elems) || !mul_u64(elems, static_cast<uint64_t>(itemsize), &bytes)) {
    fail("%s: the view's extent in bytes overflows 64 bits", fn);
    return false;
  }
  *out = bytes;
  return true;
}

}  // namespace slimtensor_metal

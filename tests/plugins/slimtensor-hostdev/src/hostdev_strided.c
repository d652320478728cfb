/* hostdev_strided.c: hostdev's copy_strided: an N-d strided copy within one device, converting dtypes. */
#include <stdbool.h>
#include <string.h>

#include "hostdev.h"

#define HD_MAX_NDIM 64

/* Note [hostdev dtype conversion]
 * Equal dtypes of any itemsize (the core tells us the itemsize) are copied byte for byte. Different dtypes
 * are converted among bool, the integers and float32/float64, through one intermediate per kind: int64
 * for signed integers, uint64 for unsigned ones and bool, double for floats. Every source value is exact
 * in its intermediate and each conversion is a single C cast, so nothing is rounded twice (int64 -> float32
 * is one rounding, as in PyTorch). Other pairs (float16, bfloat16, complex, float8) are refused with an
 * error; slimtensor reports it. Float -> integer of an out-of-range value is undefined in C as in PyTorch. */
typedef enum { KIND_NONE, KIND_SIGNED, KIND_UNSIGNED, KIND_FLOAT, KIND_BOOL } kind_t;

typedef struct value {
  kind_t kind;
  int64_t i;
  uint64_t u;
  double f;
} value;

static kind_t kind_of(int32_t code) {
  switch (code) {
    case 1: case 2: case 3: case 4: return KIND_SIGNED;      /* int8 int16 int32 int64 */
    case 0: case 27: case 28: case 29: return KIND_UNSIGNED; /* uint8 uint16 uint32 uint64 */
    case 6: case 7: return KIND_FLOAT;                       /* float32 float64 */
    case 11: return KIND_BOOL;
    default: return KIND_NONE;
  }
}

#define LOAD(T) do { T x; memcpy(&x, p, sizeof x); return x; } while (0)

static int64_t load_signed(int32_t code, const void* p) {
  switch (code) {
    case 1: LOAD(int8_t);
    case 2: LOAD(int16_t);
    case 3: LOAD(int32_t);
    default: LOAD(int64_t);
  }
}

static uint64_t load_unsigned(int32_t code, const void* p) {
  switch (code) {
    case 0: LOAD(uint8_t);
    case 27: LOAD(uint16_t);
    case 28: LOAD(uint32_t);
    default: LOAD(uint64_t);
  }
}

static value load(int32_t code, const void* p) {
  value v = {kind_of(code), 0, 0, 0.0};
  switch (v.kind) {
    case KIND_SIGNED: v.i = load_signed(code, p); break;
    case KIND_UNSIGNED: v.u = load_unsigned(code, p); break;
    case KIND_BOOL: { uint8_t b; memcpy(&b, p, 1); v.kind = KIND_UNSIGNED; v.u = b != 0; break; }
    case KIND_FLOAT:
      if (code == 6) { float x; memcpy(&x, p, sizeof x); v.f = x; }
      else { memcpy(&v.f, p, sizeof v.f); }
      break;
    default: break;
  }
  return v;
}

/* The value converted to C type T with one cast. */
#define AS(T, v) ((v).kind == KIND_SIGNED ? (T)(v).i : (v).kind == KIND_UNSIGNED ? (T)(v).u : (T)(v).f)
#define STORE(T) do { T x = AS(T, v); memcpy(p, &x, sizeof x); } while (0)

static void store(int32_t code, void* p, value v) {
  switch (code) {
    case 0: STORE(uint8_t); break;
    case 1: STORE(int8_t); break;
    case 2: STORE(int16_t); break;
    case 3: STORE(int32_t); break;
    case 4: STORE(int64_t); break;
    case 6: STORE(float); break;
    case 7: STORE(double); break;
    case 11: { uint8_t b = v.kind == KIND_SIGNED ? v.i != 0 : v.kind == KIND_UNSIGNED ? v.u != 0 : v.f != 0.0;
               memcpy(p, &b, 1); break; }
    case 27: STORE(uint16_t); break;
    case 28: STORE(uint32_t); break;
    case 29: STORE(uint64_t); break;
    default: break;
  }
}

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
  if (!same && (kind_of(desc->dst_dtype) == KIND_NONE || kind_of(desc->src_dtype) == KIND_NONE)) {
    return hostdev_fail("hostdev copy_strided(): converting dtype code %d to %d is not supported by hostdev "
                        "(it converts bool, integers, float32 and float64)",
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
    else store(desc->dst_dtype, d, load(desc->src_dtype, s));
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

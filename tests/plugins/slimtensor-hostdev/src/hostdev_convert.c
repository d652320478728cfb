/* hostdev_convert.c: converts one element between two c10 dtypes, by slimtensor's CPU conversion rules. */
#include <string.h>

#include "hostdev.h"

/* Note [hostdev conversions]
 * A device's conversions should give what slimtensor's CPU copy gives, so a tensor converted on hostdev
 * equals the same tensor converted on the CPU. The rules are the core's Note [Conversion rules]
 * (packages/slimtensor-core/src/copy_kernels.cpp), which are PyTorch's CPU results; this file implements
 * them again in C because a plugin cannot link the core:
 *   - each source value is read exactly into one intermediate: int64 (signed), uint64 (unsigned, bool),
 *     double (floats; float16/bfloat16 widened exactly) or a (double, double) pair (complex);
 *   - integer -> integer wraps; integer -> float rounds once;
 *   - float -> integer truncates toward zero; NaN and out-of-range values give the x86 "integer
 *     indefinite": through int32 for int32 and (from float16/bfloat16/float32) 8- and 16-bit types,
 *     through int64 otherwise (float64 sources, uint32, int64), uint64 taking [0, 2^64) directly;
 *   - anything -> bool is "!= 0" (NaN is true; a complex is true if either part is);
 *   - float16/bfloat16 are rounded from float32 (float64 goes through float32, as in PyTorch), to nearest
 *     even, keeping subnormals; float16 NaNs keep sign and payload and become quiet (both ways);
 *     bfloat16 NaN is 0xFFFF from float32/float64 and 0x7FC0 from any other source;
 *   - complex -> real keeps the real part; real -> complex has imaginary part 0.
 * float8 types are not converted (the core refuses those conversions before asking a device). */
typedef enum { K_NONE, K_SIGNED, K_UNSIGNED, K_FLOAT, K_COMPLEX } kind_t;

typedef struct value {
  kind_t kind;
  int64_t i;
  uint64_t u;
  double re, im;
  int wide;     /* a float64/complex128 source: float -> small integer goes through int64 */
  int vector_nan; /* a float32/float64 source: its bfloat16 NaN is 0xFFFF, not 0x7FC0 */
} value;

enum {
  U8 = 0, I8 = 1, I16 = 2, I32 = 3, I64 = 4, F16 = 5, F32 = 6, F64 = 7,
  C32 = 8, C64 = 9, C128 = 10, BOOL = 11, BF16 = 15, U16 = 27, U32 = 28, U64 = 29
};

static kind_t kind_of(int32_t code) {
  switch (code) {
    case I8: case I16: case I32: case I64: return K_SIGNED;
    case U8: case U16: case U32: case U64: case BOOL: return K_UNSIGNED;
    case F16: case F32: case F64: case BF16: return K_FLOAT;
    case C32: case C64: case C128: return K_COMPLEX;
    default: return K_NONE;
  }
}

int hostdev_convertible(int32_t code) { return kind_of(code) != K_NONE; }

/* --- float16 / bfloat16 bits ------------------------------------------------------------------------ */
static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static float f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, frac = h & 0x3FFu;
  if (exp == 0x1F) return bits_f32(sign | 0x7F800000u | (frac << 13) | (frac ? 0x00400000u : 0u)); /* quiet */
  if (exp == 0) {
    const float v = (float)frac * 5.9604644775390625e-8f; /* frac * 2^-24, exact */
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112u) << 23) | (frac << 13));
}

static uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_bits(f), sign = (x >> 16) & 0x8000u, a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu)); /* quiet NaN, payload kept */
  const int e = (int)(a >> 23) - 127;                              /* unbiased exponent */
  if (e > 15) return (uint16_t)(sign | 0x7C00u);                   /* >= 65536 (and inf): infinity */
  if (e < -25) return (uint16_t)sign;                              /* below half the smallest subnormal */
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;                  /* 24-bit significand: m * 2^(e-23) */
  const int shift = 13 + (e < -14 ? -14 - e : 0);                  /* bits dropped: 13 (normal) .. 24 */
  uint32_t kept = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1u))) ++kept;        /* round to nearest even */
  /* Normal: the implicit bit in `kept` adds one to the exponent field, so (e + 14) gives e + 15. A carry
   * out of the significand moves to the next binade (or to infinity) by itself. */
  uint32_t bits = e >= -14 ? ((uint32_t)(e + 14) << 10) + kept : kept;
  if (bits > 0x7C00u) bits = 0x7C00u;
  return (uint16_t)(sign | bits);
}

static float bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

static uint16_t f32_to_bf16(float f, int vector_nan) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return vector_nan ? 0xFFFF : 0x7FC0; /* NaN */
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);       /* round to nearest even */
}

/* --- load ------------------------------------------------------------------------------------------- */
#define DEFINE_READ(T) \
  static T read_##T(const void* p) { T x; memcpy(&x, p, sizeof x); return x; }
DEFINE_READ(int8_t) DEFINE_READ(int16_t) DEFINE_READ(int32_t) DEFINE_READ(int64_t)
DEFINE_READ(uint8_t) DEFINE_READ(uint16_t) DEFINE_READ(uint32_t) DEFINE_READ(uint64_t)
DEFINE_READ(float) DEFINE_READ(double)
#undef DEFINE_READ
#define READ(T, p) read_##T(p)

static value load(int32_t code, const void* p) {
  value v = {kind_of(code), 0, 0, 0.0, 0.0, code == F64 || code == C128, code == F32 || code == F64};
  switch (code) {
    case I8: v.i = READ(int8_t, p); break;
    case I16: v.i = READ(int16_t, p); break;
    case I32: v.i = READ(int32_t, p); break;
    case I64: v.i = READ(int64_t, p); break;
    case U8: v.u = READ(uint8_t, p); break;
    case U16: v.u = READ(uint16_t, p); break;
    case U32: v.u = READ(uint32_t, p); break;
    case U64: v.u = READ(uint64_t, p); break;
    case BOOL: v.u = READ(uint8_t, p) != 0; break;
    case F16: v.re = f16_to_f32(READ(uint16_t, p)); break;
    case BF16: v.re = bf16_to_f32(READ(uint16_t, p)); break;
    case F32: v.re = READ(float, p); break;
    case F64: v.re = READ(double, p); break;
    case C32: v.re = f16_to_f32(READ(uint16_t, p)); v.im = f16_to_f32(READ(uint16_t, (const char*)p + 2)); break;
    case C64: v.re = READ(float, p); v.im = READ(float, (const char*)p + 4); break;
    case C128: v.re = READ(double, p); v.im = READ(double, (const char*)p + 8); break;
    default: break;
  }
  return v;
}

/* --- store ------------------------------------------------------------------------------------------ */
static int32_t truncate_i32(double x) { /* cvttsd2si: out of range and NaN give INT32_MIN */
  return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN;
}
static int64_t truncate_i64(double x) {
  return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN;
}

/* The value as an integer of `code`, widened to uint64 bits (the caller keeps the low bytes). */
static uint64_t as_int_bits(int32_t code, value v) {
  if (v.kind == K_SIGNED) return (uint64_t)v.i;
  if (v.kind == K_UNSIGNED) return v.u;
  switch (code) {
    case I32: return (uint64_t)(int64_t)truncate_i32(v.re);
    case I8: case I16: case U8: case U16:
      return v.wide ? (uint64_t)truncate_i64(v.re) : (uint64_t)(int64_t)truncate_i32(v.re);
    case U64:
      if (v.re >= 0 && v.re < 18446744073709551616.0) return (uint64_t)v.re;
      return (uint64_t)truncate_i64(v.re);
    default: return (uint64_t)truncate_i64(v.re); /* I64, U32 */
  }
}

static double as_double(value v) {
  return v.kind == K_SIGNED ? (double)v.i : v.kind == K_UNSIGNED ? (double)v.u : v.re;
}
static float as_float(value v) { /* one rounding: int64 -> float directly, not through double */
  return v.kind == K_SIGNED ? (float)v.i : v.kind == K_UNSIGNED ? (float)v.u : (float)v.re;
}

#define WRITE(T, p, x) do { T y_ = (T)(x); memcpy((p), &y_, sizeof y_); } while (0)

static void store(int32_t code, void* p, value v) {
  const double im = v.kind == K_COMPLEX ? v.im : 0.0;
  switch (code) {
    case I8: WRITE(int8_t, p, as_int_bits(code, v)); break;
    case I16: WRITE(int16_t, p, as_int_bits(code, v)); break;
    case I32: WRITE(int32_t, p, as_int_bits(code, v)); break;
    case I64: WRITE(int64_t, p, as_int_bits(code, v)); break;
    case U8: WRITE(uint8_t, p, as_int_bits(code, v)); break;
    case U16: WRITE(uint16_t, p, as_int_bits(code, v)); break;
    case U32: WRITE(uint32_t, p, as_int_bits(code, v)); break;
    case U64: WRITE(uint64_t, p, as_int_bits(code, v)); break;
    case BOOL: {
      const int b = v.kind == K_SIGNED ? v.i != 0 : v.kind == K_UNSIGNED ? v.u != 0 : (v.re != 0 || im != 0);
      WRITE(uint8_t, p, b);
      break;
    }
    case F16: WRITE(uint16_t, p, f32_to_f16(as_float(v))); break;
    case BF16: WRITE(uint16_t, p, f32_to_bf16(as_float(v), v.vector_nan)); break;
    case F32: WRITE(float, p, as_float(v)); break;
    case F64: WRITE(double, p, as_double(v)); break;
    case C32:
      WRITE(uint16_t, p, f32_to_f16(as_float(v)));
      WRITE(uint16_t, (char*)p + 2, f32_to_f16((float)im));
      break;
    case C64: WRITE(float, p, as_float(v)); WRITE(float, (char*)p + 4, (float)im); break;
    case C128: WRITE(double, p, as_double(v)); WRITE(double, (char*)p + 8, im); break;
    default: break;
  }
}

void hostdev_convert(int32_t dst_code, void* dst, int32_t src_code, const void* src) {
  /* float32 <-> float16/bfloat16 directly: a signalling NaN must not be quieted by a trip through double. */
  if (src_code == F32 && (dst_code == F16 || dst_code == BF16)) {
    const float f = READ(float, src);
    WRITE(uint16_t, dst, dst_code == F16 ? f32_to_f16(f) : f32_to_bf16(f, 1));
  } else if (dst_code == F32 && (src_code == F16 || src_code == BF16)) {
    const uint16_t h = READ(uint16_t, src);
    WRITE(float, dst, src_code == F16 ? f16_to_f32(h) : bf16_to_f32(h));
  } else {
    store(dst_code, dst, load(src_code, src));
  }
}

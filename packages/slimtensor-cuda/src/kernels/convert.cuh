// convert.cuh: one element from one c10 dtype to another, bit-exact with slimtensor's CPU copy.
//
// Note [GPU conversion rules]
// These are the core's Note [Conversion rules] and Note [Reduced-precision rounding] (its
// src/copy_kernels.cpp and src/half_bits.h), written again for the device because a plugin cannot link
// the core. Each value is read exactly into an intermediate (int64, uint64, double, or a double pair),
// then stored:
//   - integer -> integer wraps; integer -> float rounds once (cvt.rn, as the CPU's cvtsi2ss/sd);
//   - float -> integer truncates; NaN and out-of-range give x86's "integer indefinite" through int32
//     (8/16/32-bit results from 16/32-bit floats) or int64 (float64 sources to 8/16-bit; all to 64-bit
//     and uint32), uint64 taking [0, 2^64) directly;
//   - -> bool is != 0 (NaN true; complex: either part); complex -> real keeps the real part;
//   - float16/bfloat16 by integer bit manipulation (never the hardware's conversions, whose NaN and
//     rounding rules differ): round to nearest even, subnormals kept, float16 NaN keeps sign and payload
//     and becomes quiet, bfloat16 NaN is 0xFFFF from float32/float64 and 0x7FC0 from anything else;
//   - float <-> double NaNs behave as x86's cvtss2sd/cvtsd2ss (quiet bit set, payload shifted or
//     truncated): the GPU's own conversion canonicalises NaNs, so NaNs are converted by hand.
// The kernels are built without fast-math and with -ftz=false, so subnormal floats survive arithmetic.
// float8 dtypes are moved, never converted (the core refuses those conversions).
// Speed (every pair is one kernel, Note [Copy kernel choice], so these bodies are its instruction count):
// float16 -> float is one exact multiply, float -> float16 is branch-free, float -> 8/16/32-bit integers
// truncate in float (the same results as through double), and integers of 32 bits or fewer convert to
// floating point from 32 bits (the same single rounding).
// ST_HD functions also compile for the host, where tests compare them with the core's CPU results.
#pragma once

#include <stdint.h>
#include <string.h>

#include <type_traits>

#if defined(__CUDACC__)
#  define ST_HD __host__ __device__ __forceinline__
#else
#  define ST_HD inline
#endif

namespace slimtensor_cuda {
namespace dt {
enum : int32_t {
  U8 = 0,
  I8 = 1,
  I16 = 2,
  I32 = 3,
  I64 = 4,
  F16 = 5,
  F32 = 6,
  F64 = 7,
  C32 = 8,
  C64 = 9,
  C128 = 10,
  BOOL = 11,
  BF16 = 15,
  U16 = 27,
  U32 = 28,
  U64 = 29
};
}  // namespace dt

// f(std::integral_constant<int32_t, code>{}) for a convertible dtype code, `otherwise` for any other: the one
// list of codes the kernel launchers dispatch over (host code: it instantiates f for every dtype).
template <class F, class R>
inline R visit_dtype_code(int32_t code, F&& f, R otherwise) {
  switch (code) {
#define ST_VISIT(c) \
  case c: return f(std::integral_constant<int32_t, c>{});
    ST_VISIT(dt::U8)
    ST_VISIT(dt::I8)
    ST_VISIT(dt::I16)
    ST_VISIT(dt::I32)
    ST_VISIT(dt::I64)
    ST_VISIT(dt::F16)
    ST_VISIT(dt::F32)
    ST_VISIT(dt::F64)
    ST_VISIT(dt::C32)
    ST_VISIT(dt::C64)
    ST_VISIT(dt::C128)
    ST_VISIT(dt::BOOL)
    ST_VISIT(dt::BF16)
    ST_VISIT(dt::U16)
    ST_VISIT(dt::U32)
    ST_VISIT(dt::U64)
#undef ST_VISIT
    default: return otherwise;
  }
}

// The element size of a convertible dtype (the core's "convertible" set); 0 for any other dtype.
ST_HD constexpr int itemsize(int32_t code) {
  switch (code) {
    case dt::U8:
    case dt::I8:
    case dt::BOOL: return 1;
    case dt::I16:
    case dt::F16:
    case dt::BF16:
    case dt::U16: return 2;
    case dt::I32:
    case dt::F32:
    case dt::C32:
    case dt::U32: return 4;
    case dt::I64:
    case dt::F64:
    case dt::C64:
    case dt::U64: return 8;
    case dt::C128: return 16;
    default: return 0;
  }
}
ST_HD constexpr bool convertible(int32_t code) { return itemsize(code) != 0; }

ST_HD uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
ST_HD float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
ST_HD uint64_t f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
ST_HD double bits_f64(uint64_t u) {
  double d;
  memcpy(&d, &u, 8);
  return d;
}

// float -> double as x86 does it (NaN: quiet bit set, payload moved up).
ST_HD double widen(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    const uint64_t sign = static_cast<uint64_t>(u >> 31) << 63;
    return bits_f64(sign | 0x7FF0000000000000ull | (static_cast<uint64_t>(u & 0x7FFFFFu) << 29) | (1ull << 51));
  }
  return static_cast<double>(f);
}
// double -> float as x86 does it (NaN: payload truncated, quiet bit set); other values round to nearest.
ST_HD float narrow(double d) {
  const uint64_t u = f64_bits(d);
  if ((u & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull) {
    const uint32_t sign = static_cast<uint32_t>(u >> 63) << 31;
    return bits_f32(sign | 0x7FC00000u | static_cast<uint32_t>((u >> 29) & 0x7FFFFFu));
  }
  return static_cast<float>(d);
}

// float16 -> float, exact. A finite float16's exponent and mantissa, moved to a float's places, read as the
// value times 2^-112 (a float16 subnormal lands on a float subnormal), so one multiply by 2^112 rebiases
// exactly, subnormals included (-ftz=false). Infinity and NaN (payload kept, made quiet) by bits.
ST_HD float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7FFFu, mant = h & 0x3FFu;
  uint32_t mag = f32_bits(bits_f32(em << 13) * 0x1p112f);
  if (em >= 0x7C00u) mag = 0x7F800000u | (mant << 13) | (mant ? 0x00400000u : 0u);
  return bits_f32(sign | mag);
}

// float -> float16, round to nearest even, branch-free. Results below 2^-14 (subnormal or zero): adding 0.5
// puts the value where a float's unit is 2^-24, the float16 subnormal unit, so the FPU's own round to
// nearest even rounds it (-ftz=false keeps float subnormal inputs). Normal results: rebias, round on the
// 13 dropped bits (a carry moves to the next binade); 65520 and up become infinity; NaN keeps its sign and
// the payload's top bits, made quiet.
ST_HD uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7FFFFFFFu;
  const uint32_t r = a - (112u << 23);
  uint32_t h = (r + 0xFFFu + ((r >> 13) & 1u)) >> 13;
  if (a < (113u << 23)) h = f32_bits(bits_f32(a) + 0.5f) - 0x3F000000u;
  if (a >= 0x477FF000u) h = 0x7C00u;
  if (a > 0x7F800000u) h = 0x7E00u | ((a >> 13) & 0x3FFu);
  return static_cast<uint16_t>(sign | h);
}

ST_HD float bf16_to_f32(uint16_t h) { return bits_f32(static_cast<uint32_t>(h) << 16); }
// float -> bfloat16, round to nearest even; NaN becomes `nan` (Note [GPU conversion rules]: 0xFFFF from
// float32/float64 tensors, torch's vectorised path; 0x7FC0 from the others, its scalar path).
ST_HD uint16_t f32_to_bf16(float f, uint16_t nan) {
  const uint32_t u = f32_bits(f);
  return (u & 0x7FFFFFFFu) > 0x7F800000u ? nan : static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
ST_HD constexpr uint16_t bf16_nan_from(int32_t src) { return src == dt::F32 || src == dt::F64 ? 0xFFFFu : 0x7FC0u; }

template <class T>
ST_HD T read_as(const void* p) {
  T v;
  memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
ST_HD void write_as(void* p, T v) {
  memcpy(p, &v, sizeof(T));
}

// A source element read exactly. Integers keep their bits (int64 sign-extended, or uint64); floating-point
// sources of float32 or less keep floats (the CPU's float -> double -> float round trip folds away, so a
// signalling NaN reaches a float destination unchanged), float64/complex128 doubles; real sources have a
// zero imaginary part. `wide`: an integer of more than 32 bits, or a float64/complex128 source. `nonzero`
// (the -> bool result) from the bits: a float is zero exactly when all but its sign bit are (NaN is true).
enum class Kind : uint8_t { Signed, Unsigned, Float, Complex };
struct Value {
  Kind kind;
  bool wide;
  bool nonzero;
  uint64_t bits;
  float f[2];
  double d[2];
};

ST_HD Value load_value(int32_t code, const void* p) {
  Value v{Kind::Signed, false, false, 0, {0.0f, 0.0f}, {0.0, 0.0}};
  const char* c = static_cast<const char*>(p);
  uint64_t magnitude = 0;  // the bits that make the element non-zero
  switch (code) {
    case dt::I8: v.bits = static_cast<uint64_t>(static_cast<int64_t>(read_as<int8_t>(p))); break;
    case dt::I16: v.bits = static_cast<uint64_t>(static_cast<int64_t>(read_as<int16_t>(p))); break;
    case dt::I32: v.bits = static_cast<uint64_t>(static_cast<int64_t>(read_as<int32_t>(p))); break;
    case dt::I64: v.wide = true, v.bits = read_as<uint64_t>(p); break;
    case dt::U8: v.kind = Kind::Unsigned, v.bits = read_as<uint8_t>(p); break;
    case dt::BOOL: v.kind = Kind::Unsigned, v.bits = read_as<uint8_t>(p) != 0; break;
    case dt::U16: v.kind = Kind::Unsigned, v.bits = read_as<uint16_t>(p); break;
    case dt::U32: v.kind = Kind::Unsigned, v.bits = read_as<uint32_t>(p); break;
    case dt::U64: v.kind = Kind::Unsigned, v.wide = true, v.bits = read_as<uint64_t>(p); break;
    case dt::F16:
    case dt::BF16: {
      const uint16_t h = read_as<uint16_t>(p);
      v.kind = Kind::Float, v.f[0] = code == dt::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      magnitude = h & 0x7FFFu;
      break;
    }
    case dt::F32:
      v.kind = Kind::Float, v.f[0] = read_as<float>(p);
      magnitude = read_as<uint32_t>(p) & 0x7FFFFFFFu;
      break;
    case dt::F64:
      v.kind = Kind::Float, v.wide = true, v.d[0] = read_as<double>(p);
      magnitude = read_as<uint64_t>(p) & 0x7FFFFFFFFFFFFFFFull;
      break;
    case dt::C32:
      v.kind = Kind::Complex;
      for (int k = 0; k < 2; ++k) v.f[k] = f16_to_f32(read_as<uint16_t>(c + 2 * k));
      magnitude = read_as<uint32_t>(p) & 0x7FFF7FFFu;
      break;
    case dt::C64:
      v.kind = Kind::Complex;
      for (int k = 0; k < 2; ++k) v.f[k] = read_as<float>(c + 4 * k);
      magnitude = read_as<uint64_t>(p) & 0x7FFFFFFF7FFFFFFFull;
      break;
    case dt::C128:
      v.kind = Kind::Complex, v.wide = true;
      for (int k = 0; k < 2; ++k) v.d[k] = read_as<double>(c + 8 * k);
      magnitude = (read_as<uint64_t>(p) | read_as<uint64_t>(c + 8)) & 0x7FFFFFFFFFFFFFFFull;
      break;
    default: break;
  }
  v.nonzero = (v.kind == Kind::Signed || v.kind == Kind::Unsigned ? v.bits : magnitude) != 0;
  return v;
}

// Truncation toward zero with x86's "integer indefinite" for NaN and out-of-range values, from float or
// double (the bounds are exact in both: for float, -2^31 - 1 rounds to -2^31, whose result is INT32_MIN
// either way).
template <class F>
ST_HD int32_t trunc_i32(F x) {
  return (x > F(-2147483649.0) && x < F(2147483648.0)) ? static_cast<int32_t>(x) : INT32_MIN;
}
template <class F>
ST_HD int64_t trunc_i64(F x) {
  return (x >= F(-9223372036854775808.0) && x < F(9223372036854775808.0)) ? static_cast<int64_t>(x) : INT64_MIN;
}
// A floating-point part as an integer destination's bits (Note [GPU conversion rules]; then truncated by
// the store).
template <class F>
ST_HD uint64_t float_int_bits(F x, int32_t dst, bool wide) {
  switch (dst) {
    case dt::I8:
    case dt::I16:
    case dt::U8:
    case dt::U16:
      return wide ? static_cast<uint64_t>(trunc_i64(x)) : static_cast<uint64_t>(static_cast<int64_t>(trunc_i32(x)));
    case dt::I32: return static_cast<uint64_t>(static_cast<int64_t>(trunc_i32(x)));
    case dt::U64:
      if (x >= F(0) && x < F(18446744073709551616.0)) return static_cast<uint64_t>(x);
      return static_cast<uint64_t>(trunc_i64(x));
    default:  // int64, uint32
      return static_cast<uint64_t>(trunc_i64(x));
  }
}
ST_HD uint64_t int_bits(const Value& v, int32_t dst) {
  if (v.kind == Kind::Signed || v.kind == Kind::Unsigned) return v.bits;
  return v.wide ? float_int_bits(v.d[0], dst, true) : float_int_bits(v.f[0], dst, false);
}
// Part k (0 real, 1 imaginary) as float / double; integers of 32 bits or fewer convert from 32 bits.
ST_HD float part_float(const Value& v, int k) {
  if (v.kind == Kind::Signed) {
    if (k) return 0.0f;
    return v.wide ? static_cast<float>(static_cast<int64_t>(v.bits)) : static_cast<float>(static_cast<int32_t>(v.bits));
  }
  if (v.kind == Kind::Unsigned) {
    if (k) return 0.0f;
    return v.wide ? static_cast<float>(v.bits) : static_cast<float>(static_cast<uint32_t>(v.bits));
  }
  return v.wide ? narrow(v.d[k]) : v.f[k];
}
ST_HD double part_double(const Value& v, int k) {
  if (v.kind == Kind::Signed) {
    if (k) return 0.0;
    return v.wide ? static_cast<double>(static_cast<int64_t>(v.bits))
                  : static_cast<double>(static_cast<int32_t>(v.bits));
  }
  if (v.kind == Kind::Unsigned) {
    if (k) return 0.0;
    return v.wide ? static_cast<double>(v.bits) : static_cast<double>(static_cast<uint32_t>(v.bits));
  }
  return v.wide ? v.d[k] : widen(v.f[k]);
}

ST_HD void store_value(int32_t dst, void* p, const Value& v, int32_t src) {
  char* c = static_cast<char*>(p);
  switch (dst) {
    case dt::I8:
    case dt::U8: write_as<uint8_t>(p, static_cast<uint8_t>(int_bits(v, dst))); break;
    case dt::I16:
    case dt::U16: write_as<uint16_t>(p, static_cast<uint16_t>(int_bits(v, dst))); break;
    case dt::I32:
    case dt::U32: write_as<uint32_t>(p, static_cast<uint32_t>(int_bits(v, dst))); break;
    case dt::I64:
    case dt::U64: write_as<uint64_t>(p, int_bits(v, dst)); break;
    case dt::BOOL: write_as<uint8_t>(p, v.nonzero ? 1 : 0); break;
    case dt::BF16: write_as<uint16_t>(p, f32_to_bf16(part_float(v, 0), bf16_nan_from(src))); break;
    case dt::F16:
    case dt::C32:
      for (int k = 0; k < (dst == dt::C32 ? 2 : 1); ++k) write_as<uint16_t>(c + 2 * k, f32_to_f16(part_float(v, k)));
      break;
    case dt::F32:
    case dt::C64:
      for (int k = 0; k < (dst == dt::C64 ? 2 : 1); ++k) write_as<float>(c + 4 * k, part_float(v, k));
      break;
    case dt::F64:
    case dt::C128:
      for (int k = 0; k < (dst == dt::C128 ? 2 : 1); ++k) write_as<double>(c + 8 * k, part_double(v, k));
      break;
    default: break;
  }
}

// One element, any convertible pair (same dtype: the caller moves bytes instead).
ST_HD void convert_element(int32_t dst, void* d, int32_t src, const void* s) {
  store_value(dst, d, load_value(src, s), src);
}

}  // namespace slimtensor_cuda

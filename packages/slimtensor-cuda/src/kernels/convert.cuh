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
// ST_HD functions also compile for the host, where tests compare them with the core's CPU results.
#pragma once

#include <stdint.h>
#include <string.h>

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

// True for the dtypes the conversions handle (the core's "convertible" set).
ST_HD constexpr bool convertible(int32_t code) {
  switch (code) {
    case dt::U8:
    case dt::I8:
    case dt::I16:
    case dt::I32:
    case dt::I64:
    case dt::F16:
    case dt::F32:
    case dt::F64:
    case dt::C32:
    case dt::C64:
    case dt::C128:
    case dt::BOOL:
    case dt::BF16:
    case dt::U16:
    case dt::U32:
    case dt::U64: return true;
    default: return false;
  }
}

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

ST_HD float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1Fu) return bits_f32(sign | 0x7F800000u | (mant << 13) | (mant ? 0x00400000u : 0u));
  if (exp == 0) {
    if (mant == 0) return bits_f32(sign);
    uint32_t e = 113;  // normalise the subnormal: value = mant * 2^-24
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    return bits_f32(sign | (e << 23) | ((mant & 0x3FFu) << 13));
  }
  return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

ST_HD uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // 65520 and up (and inf): infinity
  const uint32_t e = a >> 23;
  if (e < 102) return static_cast<uint16_t>(sign);  // below 2^-25: rounds to zero
  if (e < 113) {                                    // a float16 subnormal: units of 2^-24
    const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14..24 bits dropped
    uint32_t kept = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (kept & 1u))) ++kept;
    return static_cast<uint16_t>(sign | kept);
  }
  const uint32_t r = a - (112u << 23);  // rebias the exponent
  uint32_t kept = r >> 13;
  const uint32_t rest = r & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (kept & 1u))) ++kept;  // a carry moves to the next binade
  return static_cast<uint16_t>(sign | kept);
}

ST_HD float bf16_to_f32(uint16_t h) { return bits_f32(static_cast<uint32_t>(h) << 16); }
ST_HD uint16_t bf16_round_bits(uint32_t u) { return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16); }
// From float32/float64 tensors (torch's vectorised path): NaN -> 0xFFFF.
ST_HD uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  return (u & 0x7FFFFFFFu) > 0x7F800000u ? static_cast<uint16_t>(0xFFFFu) : bf16_round_bits(u);
}
// From every other source (torch's scalar path): NaN -> 0x7FC0.
ST_HD uint16_t f32_to_bf16_scalar(float f) {
  const uint32_t u = f32_bits(f);
  return (u & 0x7FFFFFFFu) > 0x7F800000u ? static_cast<uint16_t>(0x7FC0u) : bf16_round_bits(u);
}

enum class Kind : uint8_t { Signed, Unsigned, Float, Complex };
struct Value {
  Kind kind;
  bool wide;  // a float64/complex128 source: float -> small integer goes through int64
  int64_t i;
  uint64_t u;
  double re, im;
  // A float-or-narrower source also keeps its float: the CPU's float -> double -> float round trip is
  // folded away by the compiler, so a signalling NaN reaches a float destination unchanged.
  bool has_float;
  float fre, fim;
};

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

ST_HD Value load_value(int32_t code, const void* p) {
  Value v{Kind::Signed, false, 0, 0, 0.0, 0.0, false, 0.0f, 0.0f};
  auto set_float = [&v](float re, float im) {
    v.has_float = true;
    v.fre = re;
    v.fim = im;
    v.re = widen(re);
    v.im = widen(im);
  };
  switch (code) {
    case dt::I8: v.i = read_as<int8_t>(p); break;
    case dt::I16: v.i = read_as<int16_t>(p); break;
    case dt::I32: v.i = read_as<int32_t>(p); break;
    case dt::I64: v.i = read_as<int64_t>(p); break;
    case dt::U8:
      v.kind = Kind::Unsigned;
      v.u = read_as<uint8_t>(p);
      break;
    case dt::U16:
      v.kind = Kind::Unsigned;
      v.u = read_as<uint16_t>(p);
      break;
    case dt::U32:
      v.kind = Kind::Unsigned;
      v.u = read_as<uint32_t>(p);
      break;
    case dt::U64:
      v.kind = Kind::Unsigned;
      v.u = read_as<uint64_t>(p);
      break;
    case dt::BOOL:
      v.kind = Kind::Unsigned;
      v.u = read_as<uint8_t>(p) != 0;
      break;
    case dt::F16:
      v.kind = Kind::Float;
      set_float(f16_to_f32(read_as<uint16_t>(p)), 0.0f);
      break;
    case dt::BF16:
      v.kind = Kind::Float;
      set_float(bf16_to_f32(read_as<uint16_t>(p)), 0.0f);
      break;
    case dt::F32:
      v.kind = Kind::Float;
      set_float(read_as<float>(p), 0.0f);
      break;
    case dt::F64:
      v.kind = Kind::Float;
      v.wide = true;
      v.re = read_as<double>(p);
      break;
    case dt::C32: {
      v.kind = Kind::Complex;
      set_float(f16_to_f32(read_as<uint16_t>(p)), f16_to_f32(read_as<uint16_t>(static_cast<const char*>(p) + 2)));
      break;
    }
    case dt::C64: {
      v.kind = Kind::Complex;
      set_float(read_as<float>(p), read_as<float>(static_cast<const char*>(p) + 4));
      break;
    }
    case dt::C128: {
      v.kind = Kind::Complex;
      v.wide = true;
      v.re = read_as<double>(p);
      v.im = read_as<double>(static_cast<const char*>(p) + 8);
      break;
    }
    default: break;
  }
  return v;
}

ST_HD int32_t trunc_i32(double d) {
  return (d > -2147483649.0 && d < 2147483648.0) ? static_cast<int32_t>(d) : INT32_MIN;
}
ST_HD int64_t trunc_i64(double d) {
  return (d >= -9223372036854775808.0 && d < 9223372036854775808.0) ? static_cast<int64_t>(d) : INT64_MIN;
}

// The integer bits of a value for a destination of `bytes` bytes (then truncated by the store).
ST_HD uint64_t int_bits(const Value& v, int32_t dst) {
  if (v.kind == Kind::Signed) return static_cast<uint64_t>(v.i);
  if (v.kind == Kind::Unsigned) return v.u;
  switch (dst) {
    case dt::I8:
    case dt::I16:
    case dt::U8:
    case dt::U16:
      return v.wide ? static_cast<uint64_t>(trunc_i64(v.re))
                    : static_cast<uint64_t>(static_cast<int64_t>(trunc_i32(v.re)));
    case dt::I32: return static_cast<uint64_t>(static_cast<int64_t>(trunc_i32(v.re)));
    case dt::U64:
      if (v.re >= 0 && v.re < 18446744073709551616.0) return static_cast<uint64_t>(v.re);
      return static_cast<uint64_t>(trunc_i64(v.re));
    default:  // int64, uint32
      return static_cast<uint64_t>(trunc_i64(v.re));
  }
}
ST_HD double as_double(const Value& v) {
  if (v.kind == Kind::Signed) return static_cast<double>(v.i);
  if (v.kind == Kind::Unsigned) return static_cast<double>(v.u);
  return v.re;
}
ST_HD float as_float(const Value& v) {
  if (v.kind == Kind::Signed) return static_cast<float>(v.i);  // rounds once
  if (v.kind == Kind::Unsigned) return static_cast<float>(v.u);
  return v.has_float ? v.fre : narrow(v.re);
}
ST_HD float imag_float(const Value& v) {
  if (v.kind != Kind::Complex) return 0.0f;
  return v.has_float ? v.fim : narrow(v.im);
}

ST_HD void store_value(int32_t dst, void* p, const Value& v, int32_t src) {
  const double im = v.kind == Kind::Complex ? v.im : 0.0;
  switch (dst) {
    case dt::I8:
    case dt::U8: write_as<uint8_t>(p, static_cast<uint8_t>(int_bits(v, dst))); break;
    case dt::I16:
    case dt::U16: write_as<uint16_t>(p, static_cast<uint16_t>(int_bits(v, dst))); break;
    case dt::I32:
    case dt::U32: write_as<uint32_t>(p, static_cast<uint32_t>(int_bits(v, dst))); break;
    case dt::I64:
    case dt::U64: write_as<uint64_t>(p, int_bits(v, dst)); break;
    case dt::BOOL: {
      bool b;
      if (v.kind == Kind::Signed)
        b = v.i != 0;
      else if (v.kind == Kind::Unsigned)
        b = v.u != 0;
      else
        b = v.re != 0 || (v.kind == Kind::Complex && v.im != 0);
      write_as<uint8_t>(p, b ? 1 : 0);
      break;
    }
    case dt::F16: write_as<uint16_t>(p, f32_to_f16(as_float(v))); break;
    case dt::BF16: {
      const float f = as_float(v);
      write_as<uint16_t>(p, (src == dt::F32 || src == dt::F64) ? f32_to_bf16(f) : f32_to_bf16_scalar(f));
      break;
    }
    case dt::F32: write_as<float>(p, as_float(v)); break;
    case dt::F64: write_as<double>(p, as_double(v)); break;
    case dt::C32:
      write_as<uint16_t>(p, f32_to_f16(as_float(v)));
      write_as<uint16_t>(static_cast<char*>(p) + 2, f32_to_f16(imag_float(v)));
      break;
    case dt::C64:
      write_as<float>(p, as_float(v));
      write_as<float>(static_cast<char*>(p) + 4, imag_float(v));
      break;
    case dt::C128:
      write_as<double>(p, as_double(v));
      write_as<double>(static_cast<char*>(p) + 8, im);
      break;
    default: break;
  }
}

// One element, any convertible pair (same dtype: the caller moves bytes instead).
// bfloat16/float16 -> float32 are the core's direct conversions (a bfloat16 signalling NaN stays signalling).
ST_HD void convert_element(int32_t dst, void* d, int32_t src, const void* s) {
  if (dst == dt::F32 && src == dt::BF16) return write_as<float>(d, bf16_to_f32(read_as<uint16_t>(s)));
  if (dst == dt::F32 && src == dt::F16) return write_as<float>(d, f16_to_f32(read_as<uint16_t>(s)));
  store_value(dst, d, load_value(src, s), src);
}

}  // namespace slimtensor_cuda

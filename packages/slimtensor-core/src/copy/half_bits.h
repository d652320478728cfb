// copy/half_bits.h: bit-exact float16 and bfloat16 conversions, matching PyTorch's CPU results.
//
// Note [Reduced-precision rounding]
// float32 -> float16 and -> bfloat16 round to nearest even, keep denormals (no flush to zero) and
// saturate to infinity past the largest finite value. NaNs follow PyTorch's CPU copies, which use the
// hardware conversions: float16 <-> float32 keep sign and payload and set the quiet bit (F16C);
// float32/float64 -> bfloat16 give 0xFFFF (torch's vectorised conversion), any other source 0x7FC0
// (its scalar conversion), see float_to_bf16 and float_to_bf16_scalar.
#pragma once

#include <cstdint>
#include <cstring>

namespace slimtensor {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t bf16_round(uint32_t u) { return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16); }

// float32 or float64 tensors converted to bfloat16.
inline uint16_t float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFF;
  return bf16_round(u);
}

// Every other source (float16, complex, integers) converted to bfloat16 through float.
inline uint16_t float_to_bf16_scalar(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
  return bf16_round(u);
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0x1F) return bits_float(sign | 0x7F800000u | (mant << 13) | (mant ? 0x00400000u : 0u));  // quiet NaNs
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));  // quiet NaN, payload kept
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520 rounds to infinity
  if (a < 0x38800000u) {
    // Below the smallest normal float16 (2^-14): adding 0.5f puts the float16 subnormal unit (2^-24) at the
    // float's last mantissa bit, so the FPU's own round-to-nearest-even does the rounding.
    const float v = bits_float(a) + 0.5f;
    return static_cast<uint16_t>(sign | (float_bits(v) - 0x3F000000u));
  }
  a += 0xC8000FFFu + ((a >> 13) & 1u);  // rebias the exponent (-112) and add the rounding bias
  return static_cast<uint16_t>(sign | (a >> 13));
}

}  // namespace slimtensor

// src/aoti/half_bits.h: float <-> float16/bfloat16 bit conversions (round to nearest even) for item_ and scalar_to_tensor_.
#pragma once

#include <cstdint>
#include <cstring>

namespace slimtensor::aoti {

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

inline uint16_t float_to_bfloat16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bfloat16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

inline float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // inf / NaN
  if (exp == 0) {
    if (man == 0) return bits_float(sign);
    float f = static_cast<float>(man) * (1.0f / 16777216.0f);  // subnormal: man * 2^-24
    return sign ? -f : f;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

inline uint16_t float_to_half(float f) {
  uint32_t u = float_bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;  // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to inf (>= 65520)
  if (a < 0x38800000u) {                        // below the smallest normal half: subnormal or zero
    float m = bits_float(a) * 16777216.0f;      // in units of 2^-24, rounded to nearest even by the FPU
    float r = __builtin_nearbyintf(m);
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t mant_odd = (a >> 13) & 1u;
  a += 0xfffu + mant_odd;  // round to nearest even at bit 13
  return sign | static_cast<uint16_t>(((a - 0x38000000u) >> 13));
}

}  // namespace slimtensor::aoti

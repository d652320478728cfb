// checked.h: overflow-checked size arithmetic (every byte count and offset of the plugin goes through it).
#pragma once

#include <cstdint>

namespace slimtensor_metal {

// Each returns false, leaving *out untouched, when the exact result does not fit.
inline bool add_u64(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }
inline bool mul_u64(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool mul_i64(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool add_i64(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

// Rounds n up to a multiple of `to` (a power of two).
inline bool round_up_u64(uint64_t n, uint64_t to, uint64_t* out) {
  uint64_t t;
  if (!add_u64(n, to - 1, &t)) return false;
  *out = t & ~(to - 1);
  return true;
}

}  // namespace slimtensor_metal

// slimtensor/base/checked_math.h: int64 arithmetic that reports overflow instead of wrapping.
//
// Note [Overflow]
// numel, byte counts, offsets and extents never silently wrap: every product or sum of user-supplied
// sizes, strides and offsets goes through these helpers, and the caller turns `true` into an error.
#pragma once

#include <cstdint>

namespace slimtensor {

inline bool mul_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }
inline bool add_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_add_overflow(a, b, out); }

}  // namespace slimtensor

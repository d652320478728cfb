// copy/copy_kernels.cpp: dtype conversion rules, the generic CPU copy loops, and the dispatch to the ISA kernels.
//
// Note [Conversion rules]
// They are PyTorch's CPU results, including where C++ leaves them undefined:
//   - float -> integer truncates toward zero; NaN and out-of-range values give the x86 "integer
//     indefinite": float16/bfloat16/float32 sources go through int32 for 8-, 16- and 32-bit signed
//     results (INT32_MIN, then wrapped), float64 sources through int64 for 8- and 16-bit results, and
//     64-bit and uint32 results through int64 (INT64_MIN). So 300.0 -> int8 is 44 and -1.5 -> uint8 is
//     255, as in torch. Out-of-range float -> uint32/uint64 is where torch itself is inconsistent (its
//     vectorised and scalar loops disagree, e.g. 1e10 -> uint32 gives 0 or 0x540BE400 depending on the
//     tensor's length); slimtensor always gives the int64 route's result;
//   - integer -> narrower integer wraps (two's complement);
//   - anything -> bool is "!= 0" (NaN is true); complex -> real keeps the real part;
//   - float16/bfloat16 follow Note [Reduced-precision rounding]; float64 -> float16/bfloat16 goes through
//     float32, as PyTorch does.
#include "copy/copy_kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "copy/half_bits.h"
#include "kernels/copy_isa.h"
#include "runtime/parallel.h"
#include "slimtensor/base/error.h"

namespace slimtensor {
namespace {

struct f16_t {
  uint16_t x;
};
struct bf16_t {
  uint16_t x;
};
struct bool_byte {
  uint8_t x;
};  // a bool element as stored: any non-zero byte reads as true
template <class T>
struct cplx_t {
  T re, im;
};
using c32_t = cplx_t<f16_t>;
using c64_t = cplx_t<float>;
using c128_t = cplx_t<double>;

// --- source -> a canonical value ---------------------------------------------------------------------
enum class Kind { Signed, Unsigned, Float, Complex };
struct Value {
  Kind kind;
  int64_t i;
  uint64_t u;
  double re, im;
  bool wide = false;  // a float64 or complex128 source (Note [Conversion rules]: the int64 route)
};

template <class S>
inline Value load(const S& s);
#define ST_SIGNED(T)                                         \
  template <>                                                \
  inline Value load<T>(const T& s) {                         \
    return {Kind::Signed, static_cast<int64_t>(s), 0, 0, 0}; \
  }
#define ST_UNSIGNED(T)                                          \
  template <>                                                   \
  inline Value load<T>(const T& s) {                            \
    return {Kind::Unsigned, 0, static_cast<uint64_t>(s), 0, 0}; \
  }
ST_SIGNED(int8_t)
ST_SIGNED(int16_t)
ST_SIGNED(int32_t)
ST_SIGNED(int64_t)
ST_UNSIGNED(uint8_t)
ST_UNSIGNED(uint16_t)
ST_UNSIGNED(uint32_t)
ST_UNSIGNED(uint64_t)
#undef ST_SIGNED
#undef ST_UNSIGNED
template <>
inline Value load<bool_byte>(const bool_byte& s) {
  return {Kind::Unsigned, 0, s.x != 0, 0, 0};
}
template <>
inline Value load<float>(const float& s) {
  return {Kind::Float, 0, 0, s, 0};
}
template <>
inline Value load<double>(const double& s) {
  return {Kind::Float, 0, 0, s, 0, true};
}
template <>
inline Value load<f16_t>(const f16_t& s) {
  return {Kind::Float, 0, 0, f16_to_float(s.x), 0};
}
template <>
inline Value load<bf16_t>(const bf16_t& s) {
  return {Kind::Float, 0, 0, bf16_to_float(s.x), 0};
}
template <>
inline Value load<c32_t>(const c32_t& s) {
  return {Kind::Complex, 0, 0, f16_to_float(s.re.x), f16_to_float(s.im.x)};
}
template <>
inline Value load<c64_t>(const c64_t& s) {
  return {Kind::Complex, 0, 0, s.re, s.im};
}
template <>
inline Value load<c128_t>(const c128_t& s) {
  return {Kind::Complex, 0, 0, s.re, s.im, true};
}

// --- a canonical value -> destination ----------------------------------------------------------------
inline int32_t truncate_to_i32(double v) {  // cvttsd2si semantics (Note [Conversion rules])
  return (v > -2147483649.0 && v < 2147483648.0) ? static_cast<int32_t>(v) : std::numeric_limits<int32_t>::min();
}
inline int64_t truncate_to_i64(double v) {
  return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? static_cast<int64_t>(v)
                                                                    : std::numeric_limits<int64_t>::min();
}

template <class D>
inline D store_int(const Value& v) {
  switch (v.kind) {
    case Kind::Signed: return static_cast<D>(v.i);
    case Kind::Unsigned: return static_cast<D>(v.u);
    default: {
      if constexpr (sizeof(D) <= 2) {
        return static_cast<D>(v.wide ? truncate_to_i64(v.re) : truncate_to_i32(v.re));
      } else if constexpr (std::is_same_v<D, int32_t>) {
        return truncate_to_i32(v.re);
      } else if constexpr (std::is_same_v<D, uint64_t>) {
        if (v.re >= 0 && v.re < 18446744073709551616.0) return static_cast<uint64_t>(v.re);
        return static_cast<uint64_t>(truncate_to_i64(v.re));
      } else {
        return static_cast<D>(truncate_to_i64(v.re));
      }
    }
  }
}

inline double as_double(const Value& v) {
  switch (v.kind) {
    case Kind::Signed: return static_cast<double>(v.i);
    case Kind::Unsigned: return static_cast<double>(v.u);
    default: return v.re;
  }
}
inline float as_float(const Value& v) {  // int -> float rounds once, as a direct C++ cast does
  switch (v.kind) {
    case Kind::Signed: return static_cast<float>(v.i);
    case Kind::Unsigned: return static_cast<float>(v.u);
    default: return static_cast<float>(v.re);
  }
}

template <class D>
inline D store(const Value& v);
#define ST_INT(T)                     \
  template <>                         \
  inline T store<T>(const Value& v) { \
    return store_int<T>(v);           \
  }
ST_INT(int8_t)
ST_INT(int16_t)
ST_INT(int32_t)
ST_INT(int64_t)
ST_INT(uint8_t)
ST_INT(uint16_t)
ST_INT(uint32_t)
ST_INT(uint64_t)
#undef ST_INT
template <>
inline bool store<bool>(const Value& v) {
  switch (v.kind) {
    case Kind::Signed: return v.i != 0;
    case Kind::Unsigned: return v.u != 0;
    case Kind::Float: return v.re != 0;
    default: return v.re != 0 || v.im != 0;
  }
}
template <>
inline float store<float>(const Value& v) {
  return as_float(v);
}
template <>
inline double store<double>(const Value& v) {
  return as_double(v);
}
template <>
inline f16_t store<f16_t>(const Value& v) {
  return {float_to_f16(as_float(v))};
}
template <>
inline bf16_t store<bf16_t>(const Value& v) {
  return {float_to_bf16_scalar(as_float(v))};
}
template <>
inline c32_t store<c32_t>(const Value& v) {
  return {{float_to_f16(as_float(v))}, {float_to_f16(static_cast<float>(v.kind == Kind::Complex ? v.im : 0))}};
}
template <>
inline c64_t store<c64_t>(const Value& v) {
  return {as_float(v), static_cast<float>(v.kind == Kind::Complex ? v.im : 0)};
}
template <>
inline c128_t store<c128_t>(const Value& v) {
  return {as_double(v), v.kind == Kind::Complex ? v.im : 0};
}

// Note [Float32 payloads]
// A float -> double conversion sets a signalling NaN's quiet bit (cvtss2sd), and Value::re is a double. The
// release build folds float -> double -> float away, the -O1 sanitizer builds keep it: a copy through Value
// would keep or quiet a signalling NaN depending on the optimisation level. So a source whose real part is a
// float32 (float32, bfloat16 widened by its bits, complex64) going to a float32 real part (float32,
// complex64) never passes through Value: its float moves as it is, as torch's copies keep it (bit for bit).
template <class T>
constexpr bool kFloat32Real = std::is_same_v<T, float> || std::is_same_v<T, bf16_t> || std::is_same_v<T, c64_t>;

template <class T>
inline float real_f32(const T& s) {
  if constexpr (std::is_same_v<T, float>) {
    return s;
  } else if constexpr (std::is_same_v<T, bf16_t>) {
    return bf16_to_float(s.x);
  } else {
    return s.re;
  }
}

template <class S, class D>
inline D convert(const S& s) {
  if constexpr (std::is_same_v<S, D>) {
    return s;
  } else if constexpr ((std::is_same_v<S, float> || std::is_same_v<S, double>) && std::is_same_v<D, bf16_t>) {
    return {float_to_bf16(static_cast<float>(s))};  // Note [Reduced-precision rounding]: 0xFFFF NaN
  } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, f16_t>) {
    return {float_to_f16(s)};
  } else if constexpr (kFloat32Real<S> && std::is_same_v<D, float>) {
    return real_f32(s);  // Note [Float32 payloads]
  } else if constexpr (kFloat32Real<S> && std::is_same_v<D, c64_t>) {
    return {real_f32(s), 0.0f};  // Note [Float32 payloads]; complex64 -> complex64 is the same-type case
  } else if constexpr (std::is_same_v<S, f16_t> && std::is_same_v<D, float>) {
    return f16_to_float(s.x);
  } else {
    return store<D>(load<S>(s));
  }
}

// --- loops ---------------------------------------------------------------------------------------------
using RunFn = void (*)(const char* src, int64_t ss, char* dst, int64_t ds, int64_t n);

template <class T>
inline bool aligned_for(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & (alignof(T) - 1)) == 0;
}

// Typed (vectorisable) loops only over aligned pointers; a from_blob or numpy buffer may be misaligned
// (a view at an odd byte offset), and then every element goes through memcpy, which is defined for any
// address (and compiles to unaligned loads and stores).
template <class S, class D>
void convert_run(const char* src, int64_t ss, char* dst, int64_t ds, int64_t n) {
  if (ds == static_cast<int64_t>(sizeof(D)) && aligned_for<D>(dst) && aligned_for<S>(src)) {
    D* d = reinterpret_cast<D*>(dst);
    if (ss == static_cast<int64_t>(sizeof(S))) {
      // Contiguous: element-indexed so the compiler can vectorise the conversion.
      const S* s = reinterpret_cast<const S*>(src);
      for (int64_t i = 0; i < n; ++i) d[i] = convert<S, D>(s[i]);
      return;
    }
    if (ss == 0) {  // a broadcast source: convert once, then fill
      S s;
      std::memcpy(&s, src, sizeof(S));
      const D v = convert<S, D>(s);
      for (int64_t i = 0; i < n; ++i) d[i] = v;
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    S s;
    std::memcpy(&s, src + i * ss, sizeof(S));
    const D d = convert<S, D>(s);
    std::memcpy(dst + i * ds, &d, sizeof(D));
  }
}

template <class S>
constexpr RunFn row_entry(ScalarType d) {
  switch (d) {
    case ScalarType::UInt8: return convert_run<S, uint8_t>;
    case ScalarType::Int8: return convert_run<S, int8_t>;
    case ScalarType::Int16: return convert_run<S, int16_t>;
    case ScalarType::Int32: return convert_run<S, int32_t>;
    case ScalarType::Int64: return convert_run<S, int64_t>;
    case ScalarType::Float16: return convert_run<S, f16_t>;
    case ScalarType::Float32: return convert_run<S, float>;
    case ScalarType::Float64: return convert_run<S, double>;
    case ScalarType::Complex32: return convert_run<S, c32_t>;
    case ScalarType::Complex64: return convert_run<S, c64_t>;
    case ScalarType::Complex128: return convert_run<S, c128_t>;
    case ScalarType::Bool: return convert_run<S, bool>;
    case ScalarType::BFloat16: return convert_run<S, bf16_t>;
    case ScalarType::UInt16: return convert_run<S, uint16_t>;
    case ScalarType::UInt32: return convert_run<S, uint32_t>;
    case ScalarType::UInt64: return convert_run<S, uint64_t>;
    default: return nullptr;
  }
}

RunFn run_fn(ScalarType s, ScalarType d) {
  switch (s) {
    case ScalarType::UInt8: return row_entry<uint8_t>(d);
    case ScalarType::Int8: return row_entry<int8_t>(d);
    case ScalarType::Int16: return row_entry<int16_t>(d);
    case ScalarType::Int32: return row_entry<int32_t>(d);
    case ScalarType::Int64: return row_entry<int64_t>(d);
    case ScalarType::Float16: return row_entry<f16_t>(d);
    case ScalarType::Float32: return row_entry<float>(d);
    case ScalarType::Float64: return row_entry<double>(d);
    case ScalarType::Complex32: return row_entry<c32_t>(d);
    case ScalarType::Complex64: return row_entry<c64_t>(d);
    case ScalarType::Complex128: return row_entry<c128_t>(d);
    case ScalarType::Bool: return row_entry<bool_byte>(d);
    case ScalarType::BFloat16: return row_entry<bf16_t>(d);
    case ScalarType::UInt16: return row_entry<uint16_t>(d);
    case ScalarType::UInt32: return row_entry<uint32_t>(d);
    case ScalarType::UInt64: return row_entry<uint64_t>(d);
    default: return nullptr;
  }
}

// Same dtype: move raw elements of `size` bytes (bool and uint8 values are moved unchanged).
RunFn raw_fn(int64_t size) {
  switch (size) {
    case 1: return convert_run<uint8_t, uint8_t>;
    case 2: return convert_run<uint16_t, uint16_t>;
    case 4: return convert_run<uint32_t, uint32_t>;
    case 8: return convert_run<uint64_t, uint64_t>;
    case 16: return convert_run<c128_t, c128_t>;
    default: return nullptr;
  }
}

constexpr int64_t kTile = 32;
constexpr int64_t kParallelBytes = 1 << 20;  // below this, threads cost more than they save

// Note [Streaming stores]
// Copies whose traffic (bytes read + bytes written) is at least kStreamBytes write with non-temporal
// stores: the destination cannot stay in this machine class's last-level cache (32 MiB of L3 shared by
// the cores) anyway, and streaming skips the read-for-ownership of every destination line (memcpy:
// 23-25 GB/s here, a streaming loop 37-40 GB/s). Below it, ordinary stores leave the result in cache
// for whoever reads it next. The threshold is a constant, not sysconf's L3 size: in a VM that reports
// the host's cache (384 MiB on the project machine), not the guest's share.
constexpr int64_t kStreamBytes = int64_t{24} << 20;

// Rows of the destination per unit of parallel work in a transpose; a multiple of every tile height.
constexpr int64_t kTransposeRowBlock = 64;

// --- instruction-set selection (Note [Copy ISA dispatch]) ---------------------------------------------

void scalar_copy_bytes(void* dst, const void* src, size_t bytes, bool) { std::memcpy(dst, src, bytes); }

const CopyKernels kScalarKernels = {"scalar", scalar_copy_bytes, nullptr, nullptr, nullptr,
                                    nullptr,  nullptr,           nullptr, nullptr, nullptr};

const CopyKernels* select_kernels() {
  const CopyKernels* avx512 = nullptr;
  const CopyKernels* avx2 = nullptr;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    avx512 = copy_kernels_avx512();
  }
#  if defined(__clang__) && __clang_major__ < 16
  const bool f16c = true;  // clang < 16 cannot query it; every CPU with AVX2 and FMA has F16C
#  else
  const bool f16c = __builtin_cpu_supports("f16c");
#  endif
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) {
    avx2 = copy_kernels_avx2();
  }
#endif
  const CopyKernels* best = avx512 ? avx512 : avx2 ? avx2 : &kScalarKernels;
  const char* env = std::getenv("SLIMTENSOR_ISA");
  const std::string want = env ? env : "";
  if (want.empty() || want == "auto" || want == "avx512") return best;  // avx512: the best up to it
  if (want == "avx2") return avx2 ? avx2 : &kScalarKernels;
  return &kScalarKernels;  // "scalar", and any other value: the portable loops
}

const CopyKernels& kernels() {
  static const CopyKernels* k = select_kernels();
  return *k;
}

ConvertFn convert_kernel(const CopyKernels& k, ScalarType s, ScalarType d) {
  if (s == ScalarType::Float32 && d == ScalarType::BFloat16) return k.f32_to_bf16;
  if (s == ScalarType::BFloat16 && d == ScalarType::Float32) return k.bf16_to_f32;
  if (s == ScalarType::Float32 && d == ScalarType::Float16) return k.f32_to_f16;
  if (s == ScalarType::Float16 && d == ScalarType::Float32) return k.f16_to_f32;
  if (s == ScalarType::Int64 && d == ScalarType::Float32) return k.i64_to_f32;
  return nullptr;
}

TransposeFn transpose_kernel(const CopyKernels& k, ScalarType s, ScalarType d) {
  if (s == d && itemsize(s) == 4) return k.transpose_32bit;
  if (s == ScalarType::Float32 && d == ScalarType::BFloat16) return k.transpose_f32_to_bf16;
  if (s == ScalarType::Float32 && d == ScalarType::Float16) return k.transpose_f32_to_f16;
  return nullptr;
}

// Executes dims [first, ndim) of the plan at the given base pointers; dim `first` limited to [lo, hi).
struct Executor {
  const CpuCopyPlan& p;
  RunFn fn;
  ConvertFn fast;  // the ISA kernel for rows dense on both sides, or null
  bool same;       // same dtype and not bool: dense rows are moved with memcpy
  int64_t src_size, dst_size;
  int tile_dim;  // a dim (not the innermost) along which src is dense, for 2-D tiling; -1 if none

  void row(const char* src, int64_t ss, char* dst, int64_t ds, int64_t n) const {
    if (ss == src_size && ds == dst_size) {
      if (same) {
        std::memcpy(dst, src, static_cast<size_t>(n * src_size));
        return;
      }
      if (fast) {
        fast(src, dst, n, false);
        return;
      }
    }
    fn(src, ss, dst, ds, n);
  }

  void inner(const char* src, char* dst, int d, int64_t lo, int64_t hi) const {
    const int last = p.ndim - 1;
    if (d == last) {
      row(src + lo * p.src_strides[d], p.src_strides[d], dst + lo * p.dst_strides[d], p.dst_strides[d], hi - lo);
      return;
    }
    if (d == tile_dim && last == d + 1) {
      tiled(src, dst, d, lo, hi);
      return;
    }
    for (int64_t i = lo; i < hi; ++i) {
      inner(src + i * p.src_strides[d], dst + i * p.dst_strides[d], d + 1, 0, p.sizes[d + 1]);
    }
  }

  // dims d (src-dense) and d+1 (dst-dense): walk 32x32 tiles so both sides stay in L1.
  void tiled(const char* src, char* dst, int d, int64_t lo, int64_t hi) const {
    const int e = d + 1;
    for (int64_t i0 = lo; i0 < hi; i0 += kTile) {
      const int64_t i1 = std::min(hi, i0 + kTile);
      for (int64_t j0 = 0; j0 < p.sizes[e]; j0 += kTile) {
        const int64_t j1 = std::min(p.sizes[e], j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          fn(src + i * p.src_strides[d] + j0 * p.src_strides[e], p.src_strides[e],
             dst + i * p.dst_strides[d] + j0 * p.dst_strides[e], p.dst_strides[e], j1 - j0);
        }
      }
    }
  }
};

// The planner's transposed shape (innermost dim dense in dst, the next dim dense in src), handed to an
// ISA transpose kernel: parallel over (outer index, block of kTransposeRowBlock rows).
void run_transpose(const CpuCopyPlan& p, TransposeFn kernel, int64_t elem_bytes, bool stream) {
  const int last = p.ndim - 1, outer_dims = p.ndim - 2;
  const int64_t rows = p.sizes[last - 1], cols = p.sizes[last];
  int64_t outer = 1;
  for (int d = 0; d < outer_dims; ++d) outer *= p.sizes[d];
  const int64_t blocks = (rows + kTransposeRowBlock - 1) / kTransposeRowBlock;
  const int64_t unit_bytes = std::min(rows, kTransposeRowBlock) * cols * elem_bytes;
  const int64_t grain = std::max<int64_t>(1, kParallelBytes / std::max<int64_t>(unit_bytes, 1));
  const int64_t src_size = itemsize(p.src_type);
  parallel_for(outer * blocks, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t u = lo; u < hi;) {
      const int64_t o = u / blocks, b0 = u % blocks, b1 = std::min(blocks, b0 + (hi - u));
      int64_t so = 0, dof = 0, rem = o;
      for (int d = outer_dims - 1; d >= 0; --d) {
        const int64_t idx = rem % p.sizes[d];
        rem /= p.sizes[d];
        so += idx * p.src_strides[d];
        dof += idx * p.dst_strides[d];
      }
      const int64_t r0 = b0 * kTransposeRowBlock, r1 = std::min(rows, b1 * kTransposeRowBlock);
      kernel(p.src + so + r0 * src_size, p.src_strides[last], p.dst + dof + r0 * p.dst_strides[last - 1],
             p.dst_strides[last - 1], r1 - r0, cols, stream);
      u += b1 - b0;
    }
  });
}

}  // namespace

const char* cpu_copy_isa() { return kernels().name; }

void convert_element(const void* src, ScalarType src_type, void* dst, ScalarType dst_type) {
  RunFn fn = run_fn(src_type, dst_type);
  ST_CHECK(fn != nullptr, Runtime, "convert: no conversion from ", name(src_type), " to ", name(dst_type));
  fn(static_cast<const char*>(src), itemsize(src_type), static_cast<char*>(dst), itemsize(dst_type), 1);
}

void run_cpu_copy(const CpuCopyPlan& p) {
  const int64_t src_size = itemsize(p.src_type), dst_size = itemsize(p.dst_type);
  if (p.ndim == 0) {
    convert_element(p.src, p.src_type, p.dst, p.dst_type);
    return;
  }
  const CopyKernels& k = kernels();
  int64_t numel = 1;
  for (int d = 0; d < p.ndim; ++d) numel *= p.sizes[d];
  const int64_t elem = std::max(src_size, dst_size);
  const int64_t bytes = numel * elem;
  const bool same = p.src_type == p.dst_type;
  const bool stream = numel * (src_size + dst_size) >= kStreamBytes;  // Note [Streaming stores]
  const int last = p.ndim - 1;
  const ConvertFn fast = same ? nullptr : convert_kernel(k, p.src_type, p.dst_type);

  // Dense on both sides: one streaming-or-not copy (or ISA conversion), split across threads when large.
  // (Not bool: PyTorch's copies turn stray bytes into 0/1, so bool copies always go through the loop.)
  if (p.ndim == 1 && p.src_strides[0] == src_size && p.dst_strides[0] == dst_size) {
    if (same && p.src_type != ScalarType::Bool) {
      parallel_for(bytes, kParallelBytes,
                   [&](int64_t b, int64_t e) { k.copy_bytes(p.dst + b, p.src + b, e - b, stream); });
      return;
    }
    if (fast) {
      parallel_for(numel, kParallelBytes / elem,
                   [&](int64_t b, int64_t e) { fast(p.src + b * src_size, p.dst + b * dst_size, e - b, stream); });
      return;
    }
  }
  // Innermost dim dst-dense and the next src-dense: a (batched) 2-D transpose.
  const bool transposed = p.ndim >= 2 && p.dst_strides[last] == dst_size && p.src_strides[last] != src_size &&
                          p.src_strides[last - 1] == src_size;
  if (transposed) {
    if (TransposeFn t = transpose_kernel(k, p.src_type, p.dst_type)) {
      run_transpose(p, t, elem, stream);
      return;
    }
  }
  // bool -> bool normalises stray bytes to 0/1 as PyTorch's strided copy does (a memcpy keeps them).
  RunFn fn = same ? (p.src_type == ScalarType::Bool ? convert_run<uint8_t, bool> : raw_fn(src_size))
                  : run_fn(p.src_type, p.dst_type);
  ST_CHECK(fn != nullptr, Runtime, "copy_(): no conversion from ", name(p.src_type), " to ", name(p.dst_type));
  const bool raw_rows = same && p.src_type != ScalarType::Bool;  // rows moved with memcpy (not bool: see above)
  Executor ex{p, fn, fast, raw_rows, src_size, dst_size, transposed ? last - 1 : -1};
  const int64_t outer = p.sizes[0];
  const int64_t grain = std::max<int64_t>(1, outer * kParallelBytes / std::max<int64_t>(bytes, 1));
  parallel_for(outer, grain, [&](int64_t lo, int64_t hi) { ex.inner(p.src, p.dst, 0, lo, hi); });
}

}  // namespace slimtensor

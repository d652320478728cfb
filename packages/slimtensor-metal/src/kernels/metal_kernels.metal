// metal_kernels.metal: the plugin's own Metal kernels: strided dtype-converting copy and pattern fill.
//
// Note [Metal conversion kernel]
// st_strided_copy gives bit-for-bit the results of slimtensor's CPU copy_ (packages/slimtensor-core:
// Note [Conversion rules], Note [Reduced-precision rounding]) for every pair of the dtypes Metal can hold
// (all but float64/complex128, which the plugin converts on the host). To be exact on any GPU it never
// relies on the GPU's float behaviour: float values are handled as their bit patterns, so denormals are
// never flushed, NaN payloads follow the CPU rules, and every rounding (integer -> float32, float32 ->
// float16/bfloat16) is done in integer arithmetic, round to nearest even. Elements are read and written
// byte by byte (little-endian, as every Apple GPU and host is), so no alignment is assumed.
//
// This file is also compiled as C++ by the Linux unit tests (tests/metal/cpp/metal_as_cpp.h defines the
// ST_* macros), which check it against the core's CPU conversions for every dtype pair; on Apple it is
// compiled by Metal at first use (newLibraryWithSource, fast math off).
#ifdef __METAL_VERSION__
#include <metal_stdlib>
using namespace metal;
#define ST_KERNEL kernel
#define ST_DEVICE device
#define ST_CONSTANT constant
#define ST_BUFFER(i) [[buffer(i)]]
#define ST_GID [[thread_position_in_grid]]
#define ST_GRID [[threads_per_grid]]
#define ST_CLZ64(x) ((int)clz((ulong)(x)))
#define ST_CLZ32(x) ((int)clz((uint)(x)))
#endif

#define ST_MAX_DIMS 16

// Must match CopyParams in src/plugin/strided_copy.h (sizes and byte strides; offsets in bytes).
struct StCopyParams {
  ulong numel;
  ulong src_offset;
  ulong dst_offset;
  int ndim;
  int src_dtype;
  int dst_dtype;
  int reserved;
  long sizes[ST_MAX_DIMS];
  long src_strides[ST_MAX_DIMS];
  long dst_strides[ST_MAX_DIMS];
};

// Must match FillParams in src/plugin/strided_copy.h.
struct StFillParams {
  ulong nbytes;
  ulong offset;
  uint pattern_size;
  uint reserved;
  uchar pattern[16];
};

// c10 ScalarType codes
#define ST_U8 0
#define ST_I8 1
#define ST_I16 2
#define ST_I32 3
#define ST_I64 4
#define ST_F16 5
#define ST_F32 6
#define ST_C32 8
#define ST_C64 9
#define ST_BOOL 11
#define ST_BF16 15
#define ST_U16 27
#define ST_U32 28
#define ST_U64 29

#define ST_KIND_SIGNED 0
#define ST_KIND_UNSIGNED 1
#define ST_KIND_FLOAT 2
#define ST_KIND_COMPLEX 3

// A loaded element: integers exactly, floats as float32 bit patterns (re, im).
struct StValue {
  int kind;
  long i;
  ulong u;
  uint re;
  uint im;
};

inline int st_itemsize(int code) {
  switch (code) {
    case ST_U8: case ST_I8: case ST_BOOL: return 1;
    case ST_I16: case ST_F16: case ST_BF16: case ST_U16: return 2;
    case ST_I32: case ST_F32: case ST_C32: case ST_U32: return 4;
    default: return 8;  // ST_I64, ST_C64, ST_U64
  }
}

inline ulong st_load_bytes(const ST_DEVICE uchar* p, int n) {
  ulong v = 0;
  for (int k = 0; k < n; ++k) v |= ((ulong)p[k]) << (8 * k);
  return v;
}

inline void st_store_bytes(ST_DEVICE uchar* p, int n, ulong v) {
  for (int k = 0; k < n; ++k) p[k] = (uchar)(v >> (8 * k));
}

inline bool st_is_nan(uint f) { return (f & 0x7FFFFFFFu) > 0x7F800000u; }

// float16 bits -> float32 bits (NaNs quieted, payload kept; subnormals exact).
inline uint st_f16_to_f32(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint e = (h >> 10) & 0x1Fu;
  const uint m = h & 0x3FFu;
  if (e == 0x1Fu) return sign | 0x7F800000u | (m << 13) | (m != 0u ? 0x00400000u : 0u);
  if (e == 0u) {
    if (m == 0u) return sign;
    const uint p = 31u - (uint)ST_CLZ32(m);  // m * 2^-24 = 2^(p-24) * (m / 2^p)
    return sign | ((p + 103u) << 23) | ((m << (23u - p)) & 0x7FFFFFu);
  }
  return sign | ((e + 112u) << 23) | (m << 13);
}

// float32 bits -> float16 bits, round to nearest even, denormals kept, NaN payload kept and quieted.
inline uint st_f32_to_f16(uint x) {
  const uint sign = (x >> 16) & 0x8000u;
  uint a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00u | ((a >> 13) & 0x3FFu);
  if (a >= 0x477FF000u) return sign | 0x7C00u;
  if (a < 0x38800000u) {  // a float16 subnormal (or zero): round |x| / 2^-24 to an integer
    uint e = a >> 23;
    uint m = a & 0x7FFFFFu;
    if (e != 0u) m |= 0x800000u; else e = 1u;
    const uint s = 126u - e;  // >= 14
    if (s >= 25u) return sign;  // below half the smallest subnormal
    uint q = m >> s;
    const uint r = m & ((1u << s) - 1u);
    const uint half = 1u << (s - 1u);
    if (r > half || (r == half && (q & 1u) != 0u)) q += 1u;
    return sign | q;
  }
  a += 0xC8000FFFu + ((a >> 13) & 1u);
  return sign | (a >> 13);
}

inline uint st_bf16_round(uint u) { return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16; }
// float32 source -> bfloat16 (torch's vectorised conversion: NaN -> 0xFFFF)
inline uint st_f32_to_bf16(uint u) { return st_is_nan(u) ? 0xFFFFu : st_bf16_round(u); }
// any other source -> bfloat16 through float (torch's scalar conversion: NaN -> 0x7FC0)
inline uint st_f32_to_bf16_scalar(uint u) { return st_is_nan(u) ? 0x7FC0u : st_bf16_round(u); }

// uint64 -> float32 bits, round to nearest even.
inline uint st_u64_to_f32(ulong u) {
  if (u == 0ul) return 0u;
  int p = 63 - ST_CLZ64(u);
  if (p <= 23) return ((uint)(p + 127) << 23) | ((uint)(u << (23 - p)) & 0x7FFFFFu);
  const int s = p - 23;
  ulong q = u >> s;
  const ulong r = u & ((1ul << s) - 1ul);
  const ulong half = 1ul << (s - 1);
  if (r > half || (r == half && (q & 1ul) != 0ul)) q += 1ul;
  if (q == (1ul << 24)) {
    q >>= 1;
    p += 1;
  }
  return ((uint)(p + 127) << 23) | ((uint)q & 0x7FFFFFu);
}

inline uint st_i64_to_f32(long v) {
  if (v >= 0) return st_u64_to_f32((ulong)v);
  const ulong mag = (ulong)(-(v + 1)) + 1ul;
  return 0x80000000u | st_u64_to_f32(mag);
}

// float32 bits truncated toward zero to an integer of `bits` (31 or 63) magnitude bits; NaN and out of
// range give the x86 "integer indefinite" (the minimum of that width), as cvttss2si does.
inline long st_truncate(uint f, int bits) {
  const long indefinite = bits == 31 ? (long)(-2147483647 - 1) : (long)(-9223372036854775807L - 1L);
  if (st_is_nan(f)) return indefinite;
  const int e = (int)((f >> 23) & 0xFFu);
  if (e < 127) return 0;                // |v| < 1
  if (e - 127 >= bits) return indefinite;  // |v| >= 2^bits (exactly -2^bits is the indefinite value too)
  const ulong m = (ulong)((f & 0x7FFFFFu) | 0x800000u);
  const int shift = e - 150;
  const ulong mag = shift >= 0 ? (m << shift) : (m >> (-shift));
  return (f & 0x80000000u) != 0u ? -(long)mag : (long)mag;
}

// float32 bits -> uint64 as the core does: exact for 0 <= v < 2^64, else through int64.
inline ulong st_f32_to_u64(uint f) {
  if (!st_is_nan(f) && ((f & 0x80000000u) == 0u || (f & 0x7FFFFFFFu) == 0u)) {
    const int e = (int)((f >> 23) & 0xFFu);
    if (e < 127) return 0ul;
    if (e - 127 < 64) {
      const ulong m = (ulong)((f & 0x7FFFFFu) | 0x800000u);
      const int shift = e - 150;
      return shift >= 0 ? (m << shift) : (m >> (-shift));
    }
  }
  return (ulong)st_truncate(f, 63);
}

inline StValue st_load(const ST_DEVICE uchar* p, int code) {
  StValue v;
  v.kind = ST_KIND_SIGNED;
  v.i = 0;
  v.u = 0;
  v.re = 0;
  v.im = 0;
  const ulong b = st_load_bytes(p, st_itemsize(code));
  switch (code) {
    // sign extension without narrowing casts (char's signedness differs between compilers)
    case ST_I8: v.i = (long)(b ^ 0x80ul) - 0x80L; break;
    case ST_I16: v.i = (long)(b ^ 0x8000ul) - 0x8000L; break;
    case ST_I32: v.i = (long)(b ^ 0x80000000ul) - 0x80000000L; break;
    case ST_I64: v.i = (long)b; break;
    case ST_U8: case ST_U16: case ST_U32: case ST_U64: v.kind = ST_KIND_UNSIGNED; v.u = b; break;
    case ST_BOOL: v.kind = ST_KIND_UNSIGNED; v.u = b != 0ul ? 1ul : 0ul; break;
    case ST_F32: v.kind = ST_KIND_FLOAT; v.re = (uint)b; break;
    case ST_F16: v.kind = ST_KIND_FLOAT; v.re = st_f16_to_f32((uint)b); break;
    case ST_BF16: v.kind = ST_KIND_FLOAT; v.re = ((uint)b) << 16; break;
    case ST_C32:
      v.kind = ST_KIND_COMPLEX;
      v.re = st_f16_to_f32((uint)(b & 0xFFFFul));
      v.im = st_f16_to_f32((uint)((b >> 16) & 0xFFFFul));
      break;
    case ST_C64: v.kind = ST_KIND_COMPLEX; v.re = (uint)b; v.im = (uint)(b >> 32); break;
    default: break;
  }
  return v;
}

// The value as float32 bits, as the core's as_float: integers round once; float values pass unchanged
// (the core's float -> double -> float round trip keeps every bit, signalling NaNs included).
inline uint st_as_f32(StValue v) {
  if (v.kind == ST_KIND_SIGNED) return st_i64_to_f32(v.i);
  if (v.kind == ST_KIND_UNSIGNED) return st_u64_to_f32(v.u);
  return v.re;
}

inline uint st_im_f32(StValue v) { return v.kind == ST_KIND_COMPLEX ? v.im : 0u; }

// Integer destinations of `bytes` bytes (signed or not) from any value (Note [Conversion rules]).
inline ulong st_store_int(StValue v, int code) {
  if (v.kind == ST_KIND_SIGNED) return (ulong)v.i;
  if (v.kind == ST_KIND_UNSIGNED) return v.u;
  switch (code) {
    case ST_I8: case ST_I16: case ST_U8: case ST_U16: case ST_I32: return (ulong)st_truncate(v.re, 31);
    case ST_U64: return st_f32_to_u64(v.re);
    default: return (ulong)st_truncate(v.re, 63);  // ST_I64, ST_U32
  }
}

inline bool st_truthy(StValue v) {
  if (v.kind == ST_KIND_SIGNED) return v.i != 0;
  if (v.kind == ST_KIND_UNSIGNED) return v.u != 0ul;
  return (v.re & 0x7FFFFFFFu) != 0u || (v.kind == ST_KIND_COMPLEX && (v.im & 0x7FFFFFFFu) != 0u);
}

inline ulong st_store(StValue v, int code) {
  switch (code) {
    case ST_BOOL: return st_truthy(v) ? 1ul : 0ul;
    case ST_F32: return (ulong)st_as_f32(v);
    case ST_F16: return (ulong)st_f32_to_f16(st_as_f32(v));
    case ST_BF16: return (ulong)st_f32_to_bf16_scalar(st_as_f32(v));
    case ST_C32: return (ulong)st_f32_to_f16(st_as_f32(v)) | ((ulong)st_f32_to_f16(st_im_f32(v)) << 16);
    case ST_C64: return (ulong)st_as_f32(v) | ((ulong)st_im_f32(v) << 32);
    default: return st_store_int(v, code);  // wraps to the destination width when written
  }
}

inline void st_convert(const ST_DEVICE uchar* src, int sd, ST_DEVICE uchar* dst, int dd) {
  const int dn = st_itemsize(dd);
  if (sd == dd) {
    for (int k = 0; k < dn; ++k) dst[k] = src[k];
    return;
  }
  ulong out;
  if (sd == ST_F32 && dd == ST_BF16) {
    out = st_f32_to_bf16((uint)st_load_bytes(src, 4));
  } else if (sd == ST_F32 && dd == ST_F16) {
    out = st_f32_to_f16((uint)st_load_bytes(src, 4));
  } else if (sd == ST_BF16 && dd == ST_F32) {
    out = st_load_bytes(src, 2) << 16;  // exact, a signalling NaN stays signalling
  } else {
    out = st_store(st_load(src, sd), dd);
  }
  st_store_bytes(dst, dn, out);
}

ST_KERNEL void st_strided_copy(const ST_DEVICE uchar* src ST_BUFFER(0), ST_DEVICE uchar* dst ST_BUFFER(1),
                               ST_CONSTANT const StCopyParams& p ST_BUFFER(2), uint gid ST_GID, uint nthreads ST_GRID) {
  for (ulong i = gid; i < p.numel; i += nthreads) {
    ulong rem = i;
    ulong so = p.src_offset;
    ulong doff = p.dst_offset;
    for (int d = p.ndim - 1; d >= 0; --d) {
      const ulong sz = (ulong)p.sizes[d];
      const ulong idx = rem % sz;
      rem /= sz;
      so += idx * (ulong)p.src_strides[d];
      doff += idx * (ulong)p.dst_strides[d];
    }
    st_convert(src + so, p.src_dtype, dst + doff, p.dst_dtype);
  }
}

ST_KERNEL void st_fill(ST_DEVICE uchar* dst ST_BUFFER(0), ST_CONSTANT const StFillParams& p ST_BUFFER(1), uint gid ST_GID,
                       uint nthreads ST_GRID) {
  for (ulong i = gid; i < p.nbytes; i += nthreads) dst[p.offset + i] = p.pattern[i % (ulong)p.pattern_size];
}

// copy_avx512.cpp: AVX-512 (F, BW, VL, DQ) copy kernels: streaming copy, f32<->bf16/f16, int64->f32, 16x16 transposes.
//
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mf16c -mfma (CMakeLists.txt); see
// Note [Copy ISA dispatch] and Note [ISA kernel files are self-contained] in copy_isa.h.
#include "copy_isa.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512DQ__)
#  include <immintrin.h>

#  include <utility>  // std::integer_sequence (types only, no code)

namespace slimtensor {
namespace {

// Note [bf16 rounding without vcvtneps2bf16]
// avx512_bf16's vcvtneps2bf16 flushes denormals to zero and keeps NaN payloads, while PyTorch keeps
// denormals and writes 0xFFFF for every NaN (Note [Reduced-precision rounding]). So the rounding is done
// in integers, exactly as half_bits.h's float_to_bf16: (u + 0x7FFF + ((u >> 16) & 1)) >> 16.
inline __m512i bf16_bits(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0xFFFF));
}
inline __m256i to_bf16(__m512 v) { return _mm512_cvtepi32_epi16(bf16_bits(v)); }
// vcvtps2ph / vcvtph2ps: round to nearest even, keep denormals, and keep a NaN's sign and payload while
// setting its quiet bit, exactly as half_bits.h's float_to_f16 / f16_to_float (Note [Reduced-precision
// rounding]: PyTorch's CPU copies use these instructions).
inline __m256i to_f16(__m512 v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline __m512 from_f16(__m256i h) { return _mm512_cvtph_ps(h); }
inline __mmask16 low_mask16(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1);
}
inline __mmask8 low_mask8(int64_t n) {
  return n >= 8 ? static_cast<__mmask8>(0xFF) : static_cast<__mmask8>((1u << n) - 1);
}
inline bool aligned64(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 63) == 0; }

// --- contiguous ---------------------------------------------------------------------------------------

void copy_bytes(void* dst_, const void* src_, size_t bytes, bool stream) {
  char* dst = static_cast<char*>(dst_);
  const char* src = static_cast<const char*>(src_);
  if (!stream) {
    __builtin_memcpy(dst, src, bytes);
    return;
  }
  // Head: bring dst to a 64-byte boundary so every streaming store writes one whole cache line.
  const size_t head = (64 - (reinterpret_cast<uintptr_t>(dst) & 63)) & 63;
  if (head >= bytes) {
    __builtin_memcpy(dst, src, bytes);
    return;
  }
  __builtin_memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  size_t i = 0;
  for (; i + 256 <= bytes; i += 256) {
    const __m512i a = _mm512_loadu_si512(src + i), b = _mm512_loadu_si512(src + i + 64);
    const __m512i c = _mm512_loadu_si512(src + i + 128), d = _mm512_loadu_si512(src + i + 192);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 64), b);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 128), c);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 192), d);
  }
  for (; i + 64 <= bytes; i += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), _mm512_loadu_si512(src + i));
  _mm_sfence();
  __builtin_memcpy(dst + i, src + i, bytes - i);
}

// Note [Aligned source for streaming conversions]
// Once dst is 64-byte aligned for streaming stores, the source usually is not (numpy's large arrays start
// 16 bytes into a page), and misaligned 64-byte loads cost this loop 40% (float32 -> bfloat16, 64 MiB:
// 30 GB/s against 50 with both aligned). So the loop loads aligned source lines and shifts them into place
// with valignd (the shift is an immediate, hence one instantiation per misalignment K). The lanes of an
// aligned line outside the source (before it in the first line, after it in the last) are masked off, so
// no load reads memory the source does not own (make test-asan found the unmasked last line: a
// heap-buffer-overflow read, and for K = 0 a whole line past the end).
template <__m256i (*Convert)(__m512), int K>
int64_t narrow_stream_shifted(const float* s, uint16_t* d, int64_t i, int64_t n) {
  const float* base = s + i - K;                                                       // 64-byte aligned
  __m512i prev = _mm512_maskz_load_epi32(static_cast<__mmask16>(0xFFFFu << K), base);  // lanes >= K are s[i..]
  for (; i + 32 <= n; i += 32, base += 32) {
    const __m512i a = _mm512_load_si512(base + 16);
    // b's lanes >= K are the next iteration's; in the last one only lanes < K are needed (none for K = 0)
    const __m512i b = i + 64 <= n ? _mm512_load_si512(base + 32)
                                  : _mm512_maskz_load_epi32(static_cast<__mmask16>((1u << K) - 1), base + 32);
    const __m512 v0 = _mm512_castsi512_ps(_mm512_alignr_epi32(a, prev, K));
    const __m512 v1 = _mm512_castsi512_ps(_mm512_alignr_epi32(b, a, K));
    const __m512i lo = _mm512_castsi256_si512(Convert(v0));
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), _mm512_inserti64x4(lo, Convert(v1), 1));
    prev = b;
  }
  return i;
}

template <__m256i (*Convert)(__m512), int... K>
int64_t narrow_stream_dispatch(int k, const float* s, uint16_t* d, int64_t i, int64_t n,
                               std::integer_sequence<int, K...>) {
  int64_t out = i;
  ((k == K ? (out = narrow_stream_shifted<Convert, K>(s, d, i, n), true) : false) || ...);
  return out;
}

// float32 -> 16-bit with streaming stores: a head until dst is 64-byte aligned, then whole-line stores of
// 32 results from aligned source loads (Note [Aligned source for streaming conversions]).
template <__m256i (*Convert)(__m512)>
int64_t narrow_stream(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i < n && !aligned64(d + i); ++i) _mm256_mask_storeu_epi16(d + i, 1, Convert(_mm512_maskz_loadu_ps(1, s + i)));
  const uintptr_t mis = reinterpret_cast<uintptr_t>(s + i) & 63;
  if (mis % 4 == 0 && i + 32 <= n) {
    i = narrow_stream_dispatch<Convert>(static_cast<int>(mis / 4), s, d, i, n, std::make_integer_sequence<int, 16>{});
  }
  for (; i + 32 <= n; i += 32) {  // a source not even 4-byte aligned
    const __m512i lo = _mm512_castsi256_si512(Convert(_mm512_loadu_ps(s + i)));
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i),
                        _mm512_inserti64x4(lo, Convert(_mm512_loadu_ps(s + i + 16)), 1));
  }
  _mm_sfence();
  return i;
}

void f32_to_bf16(const void* src_, void* dst_, int64_t n, bool stream) {
  const float* s = static_cast<const float*>(src_);
  uint16_t* d = static_cast<uint16_t*>(dst_);
  int64_t i = stream ? narrow_stream<to_bf16>(s, d, n) : 0;
  for (; i + 16 <= n; i += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), to_bf16(_mm512_loadu_ps(s + i)));
  if (i < n) {
    const __mmask16 m = low_mask16(n - i);
    _mm256_mask_storeu_epi16(d + i, m, to_bf16(_mm512_maskz_loadu_ps(m, s + i)));
  }
}

void f32_to_f16(const void* src_, void* dst_, int64_t n, bool stream) {
  const float* s = static_cast<const float*>(src_);
  uint16_t* d = static_cast<uint16_t*>(dst_);
  int64_t i = stream ? narrow_stream<to_f16>(s, d, n) : 0;
  for (; i + 16 <= n; i += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), to_f16(_mm512_loadu_ps(s + i)));
  if (i < n) {
    const __mmask16 m = low_mask16(n - i);
    _mm256_mask_storeu_epi16(d + i, m, to_f16(_mm512_maskz_loadu_ps(m, s + i)));
  }
}

// Widening conversions write twice what they read; streaming pays off as for copies.
inline void store_ps(float* d, __m512 v, bool stream) {
  if (stream) {
    _mm512_stream_ps(d, v);
  } else {
    _mm512_storeu_ps(d, v);
  }
}

void bf16_to_f32(const void* src_, void* dst_, int64_t n, bool stream) {
  const uint16_t* s = static_cast<const uint16_t*>(src_);
  float* d = static_cast<float*>(dst_);
  int64_t i = 0;
  // The head (until d is 64-byte aligned) stores through memcpy: d may not even be 4-byte aligned.
  for (; i < n && stream && !aligned64(d + i); ++i) {
    const float v = _mm512_cvtss_f32(
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(1, s + i)), 16)));
    __builtin_memcpy(d + i, &v, sizeof(v));
  }
  for (; i + 16 <= n; i += 16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    store_ps(d + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)), stream);
  }
  if (stream) _mm_sfence();
  if (i < n) {
    const __mmask16 m = low_mask16(n - i);
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s + i));
    _mm512_mask_storeu_ps(d + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
}

void f16_to_f32(const void* src_, void* dst_, int64_t n, bool stream) {
  const uint16_t* s = static_cast<const uint16_t*>(src_);
  float* d = static_cast<float*>(dst_);
  int64_t i = 0;
  for (; i < n && stream && !aligned64(d + i); ++i) {  // memcpy: d may not even be 4-byte aligned
    const float v = _mm512_cvtss_f32(from_f16(_mm256_maskz_loadu_epi16(1, s + i)));
    __builtin_memcpy(d + i, &v, sizeof(v));
  }
  for (; i + 16 <= n; i += 16) {
    store_ps(d + i, from_f16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))), stream);
  }
  if (stream) _mm_sfence();
  if (i < n) {
    const __mmask16 m = low_mask16(n - i);
    _mm512_mask_storeu_ps(d + i, m, from_f16(_mm256_maskz_loadu_epi16(m, s + i)));
  }
}

// int64 -> float32 rounds once to nearest even (vcvtqq2ps under the default MXCSR), as a C++ cast does.
void i64_to_f32(const void* src_, void* dst_, int64_t n, bool /*stream: the destination is half the source*/) {
  const int64_t* s = static_cast<const int64_t*>(src_);
  float* d = static_cast<float*>(dst_);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm512_cvtepi64_ps(_mm512_loadu_si512(s + i)));
  if (i < n) {
    const __mmask8 m = low_mask8(n - i);
    _mm256_mask_storeu_ps(d + i, m, _mm512_cvtepi64_ps(_mm512_maskz_loadu_epi64(m, s + i)));
  }
}

// --- transposes ---------------------------------------------------------------------------------------

// In-register transpose of 16 rows of 16 32-bit lanes: afterwards r[c] holds column c.
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int k = 0; k < 8; ++k) {
    t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 4; ++k) {  // r[4k+m], lane L: column 4L+m of rows 4k..4k+3
    const __m512d a = _mm512_castps_pd(t[4 * k]), b = _mm512_castps_pd(t[4 * k + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * k + 2]), d = _mm512_castps_pd(t[4 * k + 3]);
    r[4 * k + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int m = 0; m < 4; ++m) {
    const __m512 e = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x88), f = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xDD);
    const __m512 g = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x88),
                 h = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xDD);
    t[0 + m] = _mm512_shuffle_f32x4(e, g, 0x88);
    t[8 + m] = _mm512_shuffle_f32x4(e, g, 0xDD);
    t[4 + m] = _mm512_shuffle_f32x4(f, h, 0x88);
    t[12 + m] = _mm512_shuffle_f32x4(f, h, 0xDD);
  }
  for (int c = 0; c < 16; ++c) r[c] = t[c];
}

// How far ahead (in source rows) the column-inner order prefetches: its loads skip between source rows,
// which the hardware prefetchers follow poorly (NHWC -> NCHW: 50 GB/s with it, 5 without).
constexpr int64_t kPrefetchRows = 64;

template <class Store>
inline void tile16(const char* s, int64_t src_row, char* d, int64_t dst_row, int64_t j0, int64_t ni, int64_t nj,
                   const Store& store, bool prefetch = false) {
  __m512 r[16];
  if (nj == 16 && ni == 16) {
    for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_ps(s + k * src_row);
  } else {
    const __mmask16 im = low_mask16(ni);
    for (int k = 0; k < 16; ++k) r[k] = k < nj ? _mm512_maskz_loadu_ps(im, s + k * src_row) : _mm512_setzero_ps();
  }
  if (prefetch) {
    const char* p = s + kPrefetchRows * src_row;
    for (int k = 0; k < 16; ++k) _mm_prefetch(p + k * src_row, _MM_HINT_T0);
  }
  transpose16(r);
  store(d, dst_row, j0, nj, ni, r);
}

// Note [Transpose tiles]
// A tile is 16 x 16 elements: 16 loads of one 64-byte source line each (i0..i0+15 of source row j), an
// in-register transpose, 16 stores of 16 results each into destination rows i0..i0+15. Two loop orders,
// measured on the project machine (Zen 4, 64 MiB float32, one thread; benchmarks/copy_kernels_bench.cpp):
//   - source rows far apart (src_row > kNearRowBytes: t2c, c2t, NCHW -> NHWC): bands of 32 source rows
//     outermost, each read front to back (32 sequential streams, prefetched in software), while each pair
//     of tiles writes 128 contiguous bytes into each of 16 destination rows: 2-d transpose 20 GB/s (28
//     with the prefetch), NCHW -> NHWC 20 GB/s (32), where the other order gets 14 and 11 (its reads hop
//     between rows 16 KiB apart);
//   - source rows close together (NHWC -> NCHW with C = 64: rows 256 bytes apart): bands of 32 destination
//     rows outermost and the columns innermost, so both sides move forward through memory: 50 GB/s, where
//     the first order gets 18.
// Float32 destinations get whole aligned lines per store, so streaming stores skip the read-for-ownership.
// Edges use masked loads and stores.
constexpr int64_t kNearRowBytes = 512;
// The row-band order prefetches each of its 32 source rows 256 bytes (64 elements) ahead: 32 streams are
// more than the hardware prefetchers follow (1 GiB 2-d transpose: 19 GB/s with it, 10-15 without).
constexpr int64_t kFarPrefetchElems = 64;

template <class Store>
void transpose_rect(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols,
                    const Store& store) {
  if (src_row > kNearRowBytes) {
    for (int64_t j0 = 0; j0 < cols; j0 += 32) {
      const int64_t nj0 = cols - j0 < 16 ? cols - j0 : 16;
      const int64_t nj1 = cols - j0 - 16 <= 0 ? 0 : cols - j0 - 16 < 16 ? cols - j0 - 16 : 16;
      for (int64_t i0 = 0; i0 < rows; i0 += 16) {
        const int64_t ni = rows - i0 < 16 ? rows - i0 : 16;
        const char* s = src + i0 * 4 + j0 * src_row;
        if ((i0 + kFarPrefetchElems) < rows) {
          for (int64_t k = 0; k < nj0 + nj1; ++k) _mm_prefetch(s + k * src_row + kFarPrefetchElems * 4, _MM_HINT_T0);
        }
        tile16(s, src_row, dst + i0 * dst_row, dst_row, j0, ni, nj0, store);
        if (nj1 > 0) tile16(s + 16 * src_row, src_row, dst + i0 * dst_row, dst_row, j0 + 16, ni, nj1, store);
      }
    }
    return;
  }
  for (int64_t i0 = 0; i0 < rows; i0 += 32) {
    const int64_t ni0 = rows - i0 < 16 ? rows - i0 : 16;
    const int64_t ni1 = rows - i0 - 16 <= 0 ? 0 : rows - i0 - 16 < 16 ? rows - i0 - 16 : 16;
    const char* s0 = src + i0 * 4;
    char* d0 = dst + i0 * dst_row;
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      const int64_t nj = cols - j0 < 16 ? cols - j0 : 16;
      const bool ahead = j0 + kPrefetchRows < cols;
      tile16(s0 + j0 * src_row, src_row, d0, dst_row, j0, ni0, nj, store, ahead);
      if (ni1 > 0) tile16(s0 + 64 + j0 * src_row, src_row, d0 + 16 * dst_row, dst_row, j0, ni1, nj, store, ahead);
    }
  }
}

// Elements before p is 64-byte aligned, when stepping `row` bytes keeps that alignment; else 0.
inline int64_t head_elems(const void* p, int64_t row, int64_t elem, int64_t n) {
  const int64_t mis = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) & 63);
  if (mis == 0 || (row & 63) != 0 || mis % elem != 0) return 0;
  const int64_t h = (64 - mis) / elem;
  return h < n ? h : n;
}

// Note [Aligned transpose tiles]
// numpy's large arrays (and many other buffers) start 16 bytes past a page boundary, so tiles counted from
// the first element would load and store lines split across two cache lines, and float32 results could
// never use streaming stores: 64 MiB 2-d transpose 8 GB/s instead of 28 (benchmarks/copy_kernels_bench.cpp,
// OFFSET=16). So the rectangle is cut where the source rows and the destination rows reach 64-byte
// alignment: thin edge strips (fewer than 16 rows or columns) and an aligned main part. With short rows
// (NCHW <-> NHWC with C = 64: 256-byte rows that straddle lines) the strips cost a second pass over the
// lines they share, so those layouts stay below their aligned speed (OFFSET=16: 11 and 21 GB/s against
// 31 and 48); staging whole blocks through an aligned buffer would remove that.
template <class Store>
void transpose_tiles(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols,
                     Store store) {
  const int64_t ih = head_elems(src, src_row, 4, rows);
  const int64_t jh = head_elems(dst, dst_row, Store::kOut, cols);
  for (int a = 0; a < 2; ++a) {
    const int64_t i0 = a ? ih : 0, ni = a ? rows - ih : ih;
    for (int b = 0; b < 2; ++b) {
      const int64_t j0 = b ? jh : 0, nj = b ? cols - jh : jh;
      if (ni > 0 && nj > 0) {
        transpose_rect(src + i0 * 4 + j0 * src_row, src_row, dst + i0 * dst_row + j0 * Store::kOut, dst_row, ni, nj,
                       store);
      }
    }
  }
}

struct StoreF32 {
  static constexpr int64_t kOut = 4;
  bool stream;
  void operator()(char* d, int64_t dst_row, int64_t j0, int64_t nj, int64_t ni, const __m512 r[16]) const {
    char* p = d + j0 * 4;
    if (nj == 16 && stream && aligned64(p) && (dst_row & 63) == 0) {
      for (int64_t k = 0; k < ni; ++k) _mm512_stream_ps(reinterpret_cast<float*>(p + k * dst_row), r[k]);
    } else if (nj == 16) {
      for (int64_t k = 0; k < ni; ++k) _mm512_storeu_ps(p + k * dst_row, r[k]);
    } else {
      const __mmask16 jm = low_mask16(nj);
      for (int64_t k = 0; k < ni; ++k) _mm512_mask_storeu_ps(p + k * dst_row, jm, r[k]);
    }
  }
};

template <__m256i (*Convert)(__m512)>
struct StoreHalf {
  static constexpr int64_t kOut = 2;
  void operator()(char* d, int64_t dst_row, int64_t j0, int64_t nj, int64_t ni, const __m512 r[16]) const {
    char* p = d + j0 * 2;
    if (nj == 16) {
      for (int64_t k = 0; k < ni; ++k) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + k * dst_row), Convert(r[k]));
    } else {
      const __mmask16 jm = low_mask16(nj);
      for (int64_t k = 0; k < ni; ++k) _mm256_mask_storeu_epi16(p + k * dst_row, jm, Convert(r[k]));
    }
  }
};

void transpose_32bit(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols,
                     bool stream) {
  transpose_tiles(src, src_row, dst, dst_row, rows, cols, StoreF32{stream});
  if (stream) _mm_sfence();
}
void transpose_f32_to_bf16(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols,
                           bool) {
  transpose_tiles(src, src_row, dst, dst_row, rows, cols, StoreHalf<to_bf16>{});
}
void transpose_f32_to_f16(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols,
                          bool) {
  transpose_tiles(src, src_row, dst, dst_row, rows, cols, StoreHalf<to_f16>{});
}

const CopyKernels kTable = {"avx512",   copy_bytes, f32_to_bf16,     bf16_to_f32,           f32_to_f16,
                            f16_to_f32, i64_to_f32, transpose_32bit, transpose_f32_to_bf16, transpose_f32_to_f16};

}  // namespace

const CopyKernels* copy_kernels_avx512() { return &kTable; }

}  // namespace slimtensor

#else
namespace slimtensor {
const CopyKernels* copy_kernels_avx512() { return nullptr; }
}  // namespace slimtensor
#endif

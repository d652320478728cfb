// copy_avx2.cpp: AVX2 + F16C copy kernels: streaming copy, f32<->bf16/f16 and 8x8 transposes.
//
// Compiled with -mavx2 -mfma -mf16c (CMakeLists.txt); see Note [Copy ISA dispatch] and
// Note [ISA kernel files are self-contained] in copy_isa.h. Partial vectors and edge tiles go through a
// small stack buffer and the same vector code, so every element is converted by one instruction sequence.
#include "copy_isa.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)
#  include <immintrin.h>

namespace slimtensor {
namespace {

// Same integer rounding as half_bits.h's float_to_bf16 (Note [bf16 rounding without vcvtneps2bf16]).
inline __m128i to_bf16(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  r = _mm256_or_si256(r, _mm256_and_si256(nan, _mm256_set1_epi32(0xFFFF)));
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}
// F16C converts as half_bits.h does, NaN payloads and quiet bit included (see copy_avx512.cpp).
inline __m128i to_f16(__m256 v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline __m256 from_bf16(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
inline __m256 from_f16(__m128i h) { return _mm256_cvtph_ps(h); }
inline bool aligned32(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 31) == 0; }

void copy_bytes(void* dst_, const void* src_, size_t bytes, bool stream) {
  char* dst = static_cast<char*>(dst_);
  const char* src = static_cast<const char*>(src_);
  if (!stream) {
    __builtin_memcpy(dst, src, bytes);
    return;
  }
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
  for (; i + 128 <= bytes; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 96), d);
  }
  _mm_sfence();
  __builtin_memcpy(dst + i, src + i, bytes - i);
}

// Narrowing f32 -> 16-bit: 8 results per step; the tail runs the same code on a padded copy.
template <__m128i (*Convert)(__m256)>
void narrow(const void* src_, void* dst_, int64_t n, bool stream) {
  const float* s = static_cast<const float*>(src_);
  uint16_t* d = static_cast<uint16_t*>(dst_);
  int64_t i = 0;
  if (stream) {
    for (; i + 8 <= n && !aligned32(d + i); i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), Convert(_mm256_loadu_ps(s + i)));
    for (; i + 16 <= n && aligned32(d + i); i += 16) {
      const __m256i v = _mm256_set_m128i(Convert(_mm256_loadu_ps(s + i + 8)), Convert(_mm256_loadu_ps(s + i)));
      _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), v);
    }
    _mm_sfence();
  }
  for (; i + 8 <= n; i += 8) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), Convert(_mm256_loadu_ps(s + i)));
  if (i < n) {
    float in[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    uint16_t out[8];
    __builtin_memcpy(in, s + i, static_cast<size_t>(n - i) * 4);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), Convert(_mm256_loadu_ps(in)));
    __builtin_memcpy(d + i, out, static_cast<size_t>(n - i) * 2);
  }
}

template <__m256 (*Convert)(__m128i)>
void widen(const void* src_, void* dst_, int64_t n, bool stream) {
  const uint16_t* s = static_cast<const uint16_t*>(src_);
  float* d = static_cast<float*>(dst_);
  int64_t i = 0;
  if (stream) {
    for (; i + 8 <= n && !aligned32(d + i); i += 8)
      _mm256_storeu_ps(d + i, Convert(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
    for (; i + 8 <= n; i += 8)
      _mm256_stream_ps(d + i, Convert(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
    _mm_sfence();
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, Convert(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  if (i < n) {
    uint16_t in[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float out[8];
    __builtin_memcpy(in, s + i, static_cast<size_t>(n - i) * 2);
    _mm256_storeu_ps(out, Convert(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
    __builtin_memcpy(d + i, out, static_cast<size_t>(n - i) * 4);
  }
}

// In-register transpose of 8 rows of 8 32-bit lanes: afterwards r[c] holds column c.
inline void transpose8(__m256 r[8]) {
  __m256 t[8];
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 2; ++k) {  // r[4k+m], lane L: column 4L+m of rows 4k..4k+3
    const __m256d a = _mm256_castps_pd(t[4 * k]), b = _mm256_castps_pd(t[4 * k + 1]);
    const __m256d c = _mm256_castps_pd(t[4 * k + 2]), d = _mm256_castps_pd(t[4 * k + 3]);
    r[4 * k + 0] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, c));
    r[4 * k + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, c));
    r[4 * k + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(b, d));
    r[4 * k + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(b, d));
  }
  for (int m = 0; m < 4; ++m) {
    t[m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x20);
    t[4 + m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x31);
  }
  for (int c = 0; c < 8; ++c) r[c] = t[c];
}

struct StoreF32 {
  static constexpr int kOut = 4;
  static void row(char* d, __m256 v) { _mm256_storeu_ps(reinterpret_cast<float*>(d), v); }
};
template <__m128i (*Convert)(__m256)>
struct StoreHalf {
  static constexpr int kOut = 2;
  static void row(char* d, __m256 v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(d), Convert(v)); }
};

// One 8x8 tile: source rows j (stride src_row) hold elements i; destination rows i (stride dst_row) get j.
template <class Store>
inline void tile8(const char* s, int64_t src_row, char* d, int64_t dst_row) {
  __m256 r[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(s + k * src_row));
  transpose8(r);
  for (int k = 0; k < 8; ++k) Store::row(d + k * dst_row, r[k]);
}

// One 8x8 tile at (i0, j0), through padded stack buffers when it is cut by an edge.
template <class Store>
inline void tile8_at(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols,
                     int64_t i0, int64_t j0) {
  constexpr int64_t out = Store::kOut;
  const int64_t ni = rows - i0 < 8 ? rows - i0 : 8;
  const int64_t nj = cols - j0 < 8 ? cols - j0 : 8;
  const char* s = src + i0 * 4 + j0 * src_row;
  char* d = dst + i0 * dst_row + j0 * out;
  if (ni == 8 && nj == 8) {
    tile8<Store>(s, src_row, d, dst_row);
    return;
  }
  float in[8][8] = {};
  alignas(32) char res[8][8 * 4];
  for (int64_t k = 0; k < nj; ++k) __builtin_memcpy(in[k], s + k * src_row, static_cast<size_t>(ni) * 4);
  tile8<Store>(reinterpret_cast<const char*>(in), 32, &res[0][0], 32);
  for (int64_t k = 0; k < ni; ++k) __builtin_memcpy(d + k * dst_row, res[k], static_cast<size_t>(nj * out));
}

// The two loop orders of Note [Transpose tiles] (copy_avx512.cpp), with 8x8 tiles.
template <class Store>
void transpose_tiles(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols) {
  if (src_row > 512) {  // source rows far apart: bands of 16 source rows, each read front to back
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      const int64_t band = cols - j0 < 16 ? cols - j0 : 16;
      for (int64_t i0 = 0; i0 < rows; i0 += 8) {
        // each source row 256 bytes ahead, once per line, as copy_avx512.cpp's kFarPrefetchElems (64 MiB
        // 2-d transpose 7.5 GB/s against 7.0 without)
        if ((i0 & 15) == 0 && i0 + 64 < rows) {
          const char* p = src + (i0 + 64) * 4 + j0 * src_row;
          for (int64_t k = 0; k < band; ++k) _mm_prefetch(p + k * src_row, _MM_HINT_T0);
        }
        tile8_at<Store>(src, src_row, dst, dst_row, rows, cols, i0, j0);
        if (j0 + 8 < cols) tile8_at<Store>(src, src_row, dst, dst_row, rows, cols, i0, j0 + 8);
      }
    }
    return;
  }
  for (int64_t i0 = 0; i0 < rows; i0 += 8) {
    for (int64_t j0 = 0; j0 < cols; j0 += 8) tile8_at<Store>(src, src_row, dst, dst_row, rows, cols, i0, j0);
  }
}

void transpose_32bit(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols, bool) {
  transpose_tiles<StoreF32>(src, src_row, dst, dst_row, rows, cols);
}
void transpose_f32_to_bf16(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols,
                           bool) {
  transpose_tiles<StoreHalf<to_bf16>>(src, src_row, dst, dst_row, rows, cols);
}
void transpose_f32_to_f16(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols,
                          bool) {
  transpose_tiles<StoreHalf<to_f16>>(src, src_row, dst, dst_row, rows, cols);
}

const CopyKernels kTable = {"avx2",
                            copy_bytes,
                            narrow<to_bf16>,
                            widen<from_bf16>,
                            narrow<to_f16>,
                            widen<from_f16>,
                            nullptr,  // int64 -> float32 has no AVX2 instruction; the generic loop does it
                            transpose_32bit,
                            transpose_f32_to_bf16,
                            transpose_f32_to_f16};

}  // namespace

const CopyKernels* copy_kernels_avx2() { return &kTable; }

}  // namespace slimtensor

#else
namespace slimtensor {
const CopyKernels* copy_kernels_avx2() { return nullptr; }
}  // namespace slimtensor
#endif

// attention_kernel.cuh: a tiled online-softmax (flash-attention style) forward kernel for float32, bfloat16 and
// float16, on tensor cores.
//
// Note [Tiled attention kernel]
// A block of 4 warps owns 64 * MT query rows of one (batch, head); each warp owns 16 * MT rows (MT = 1 or 2
// row tiles of 16, each K/V fragment loaded from shared memory serving all of them; launch_rows picks MT). The block
// walks the keys in tiles of 64: K and V tiles are double-buffered in shared memory (cp.async when the head dim is
// contiguous and 16-byte aligned, element loads otherwise), S = Q K^T for the warp's rows x 64 keys is computed with
// mma.sync, scaled, biased and masked in registers, and the running row max m, row sum l and output O are updated with
// the online softmax (O *= e^(m_old - m_new)); P = e^(S - m) (one FFMA and one ex2 per element, log2(e) folded
// in) goes straight from the S accumulators into the A operand of P V, never through memory. So memory is
// O(S) (the tiles and O), not O(S^2).
// Masks cost nothing on the tiles that need none: a tile is masked (seq_k tail, causal diagonal) through a
// separate instantiation of the softmax step, and causal blocks stop at their diagonal tile.
// The bias tile of each step is either copied into shared memory with the K/V tiles (cp.async, coalesced 16-byte
// loads that overlap the math: kBiasSmem) or read from global memory into registers where it is used (float32,
// whose tiles leave no shared memory for it at two blocks per SM).
// Tails: query rows past seq_q are computed on zeros and not stored, key columns past seq_k are masked to
// -inf, head dims are zero-padded to the instantiated width (32, 64 or 128), so any sequence length and head
// dim <= 128 is exact. A row whose keys are all masked gives 0 (no NaN).
// Precision: bfloat16/float16 multiply on tensor cores with float32 accumulation and a float32 softmax, as
// torch's kernels; P is rounded to the input type for P V, as flash attention does. float32 uses 3xTF32 (each
// operand split into a TF32 high part and a TF32 remainder, three MMAs per product), which is what torch's
// float32 efficient-attention kernel does on sm80+ (CUTLASS OpMultiplyAddFastF32): float32-level accuracy at
// tensor-core speed.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "aoti_ops/attention_kernel.h"

// Included by one .cu file per dtype (attention_kernel_{f32,bf16,f16}.cu), so the instantiations compile in
// parallel.

namespace slimtensor_cuda::aoti_ops {
namespace {

constexpr int kBlockN = 64;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

template <typename T>
struct Elem;
template <>
struct Elem<float> {
  static constexpr int kPad = 4;  // row padding (elements) that makes the fragment loads bank-conflict free
  using Pair = float2;
  static __device__ float to_float(float x) { return x; }
  static __device__ float from_float(float x) { return x; }
  static __device__ float2 pair_to_float(float2 x) { return x; }
};
template <>
struct Elem<__nv_bfloat16> {
  static constexpr int kPad = 8;
  using Pair = __nv_bfloat162;
  static __device__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }
  static __device__ float2 pair_to_float(__nv_bfloat162 x) { return __bfloat1622float2(x); }
};
template <>
struct Elem<__half> {
  static constexpr int kPad = 8;
  using Pair = __half2;
  static __device__ float to_float(__half x) { return __half2float(x); }
  static __device__ __half from_float(float x) { return __float2half_rn(x); }
  static __device__ float2 pair_to_float(__half2 x) { return __half22float2(x); }
};

// The block shape: 4 warps of MT row tiles each (measured on an H200 against 8 warps of one row tile: 4 x 2 is
// 5-10% faster at 128 rows, Note [Tiled attention kernel]).
template <typename T, int DP_, int MT_>
struct Tiling {
  static constexpr int DP = DP_, W = 4, MT = MT_;
  // 16-bit: the bias tile goes through shared memory with K and V (1.8x faster with a bias than reading it
  // from global memory at its use). float32: its Q, K and V tiles (87 KB at 64 rows) leave no room for two
  // more bias tiles at two blocks per SM, so it reads the bias from global memory.
  static constexpr bool kBiasSmem = sizeof(T) == 2;
  static constexpr int kThreads = 32 * W;
  static constexpr int kRowsM = 16 * MT * W;
  static constexpr int kStride = DP + Elem<T>::kPad;  // Q, K, V rows in shared memory
  static constexpr int kBiasStride = kBlockN + 8;     // conflict-free pair reads (Note [Tiled attention kernel])
  static constexpr int kTile = kBlockN * kStride;
  static constexpr int kBiasTile = kRowsM * kBiasStride;
  static size_t smem_bytes(bool bias) {
    return ((kRowsM + 4 * kBlockN) * kStride + (kBiasSmem && bias ? 2 * kBiasTile : 0)) * sizeof(T);
  }
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;  // src-size 0 = zero fill
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// 2^x with the hardware's approximation (relative error ~2^-22; results below 2^-126 flush to 0, which a
// softmax weight that small is anyway). exp2f would add a denormal-range fix-up around it.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Loads rows [row0, row0 + ROWS) x columns [col0, col0 + COLS) of a matrix into smem (row stride STRIDE), zero
// outside [0, rows) x [0, cols). vector: columns contiguous, rows and base 16-byte aligned, cols a multiple of
// 16 bytes.
template <typename T, int kThreads, int ROWS, int COLS, int STRIDE>
__device__ __forceinline__ void load_tile(T* smem, const T* base, int64_t row_stride, int64_t col_stride, int row0,
                                          int col0, int rows, int cols, bool vector) {
  if (vector) {
    constexpr int kPerChunk = 16 / sizeof(T);
    constexpr int kChunksPerRow = COLS / kPerChunk;
    constexpr int kChunks = ROWS * kChunksPerRow;
#pragma unroll
    for (int i = 0; i < (kChunks + kThreads - 1) / kThreads; ++i) {
      const int c = threadIdx.x + i * kThreads;
      if (kChunks % kThreads == 0 || c < kChunks) {
        const int r = c / kChunksPerRow, d = (c % kChunksPerRow) * kPerChunk;
        const bool valid = row0 + r < rows && col0 + d < cols;
        const T* src = valid ? base + (row0 + r) * row_stride + col0 + d : base;
        cp_async16(smem + r * STRIDE + d, src, valid);
      }
    }
  } else {
    for (int e = threadIdx.x; e < ROWS * COLS; e += kThreads) {
      const int r = e / COLS, d = e % COLS;
      T v = Elem<T>::from_float(0.0f);
      if (row0 + r < rows && col0 + d < cols) v = base[(row0 + r) * row_stride + (col0 + d) * col_stride];
      smem[r * STRIDE + d] = v;
    }
  }
}

// ---- MMA wrappers -------------------------------------------------------------------------------------------

template <typename T>
__device__ __forceinline__ void mma16816(float* c, const uint32_t* a, uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma16816<__half>(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma1688_tf32(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// x = big + small, both TF32 (3xTF32).
__device__ __forceinline__ void split_tf32(float x, uint32_t& big, uint32_t& small) {
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(big) : "f"(x));
  const float rest = x - __uint_as_float(big);
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(small) : "f"(rest));
}

// An operand split once (3xTF32), reused against several fragments of the other operand.
template <int N>
struct Split {
  uint32_t big[N], small[N];
  __device__ __forceinline__ void set(const float* x) {
#pragma unroll
    for (int i = 0; i < N; ++i) split_tf32(x[i], big[i], small[i]);
  }
};

// c += a . b in 3xTF32 (small terms first).
__device__ __forceinline__ void mma_3xtf32(float* c, const Split<4>& a, const Split<2>& b) {
  mma1688_tf32(c, a.small, b.big[0], b.big[1]);
  mma1688_tf32(c, a.big, b.small[0], b.small[1]);
  mma1688_tf32(c, a.big, b.big[0], b.big[1]);
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// ---- S = Q K^T for one warp's MT x 16 rows x 64 keys ------------------------------------------------------
// Each B fragment (K, V) loaded from shared memory serves the warp's MT row tiles.

// 16-bit: q_frag holds the warp's Q A-fragments (DP/16 k-steps x 4 registers per row tile).
template <typename T, int DP, int MT>
__device__ __forceinline__ void qk_16bit(float (&s)[MT][8][4], const uint32_t (&q_frag)[MT][DP / 16][4], const T* k_s,
                                         int lane) {
  constexpr int kStride = DP + Elem<T>::kPad;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < DP / 16; ++kk) {
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {  // key tiles 2jj, 2jj+1
      uint32_t b[4];
      const int row = jj * 16 + (lane & 7) + ((lane >> 4) << 3);
      const int col = kk * 16 + (((lane >> 3) & 1) << 3);
      ldmatrix_x4(b, k_s + row * kStride + col);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma16816<T>(s[mt][2 * jj], q_frag[mt][kk], b[0], b[1]);
        mma16816<T>(s[mt][2 * jj + 1], q_frag[mt][kk], b[2], b[3]);
      }
    }
  }
}

// float32: Q fragments read from shared memory per k-step.
template <int DP, int MT>
__device__ __forceinline__ void qk_f32(float (&s)[MT][8][4], const float* q_s, const float* k_s, int warp, int lane) {
  constexpr int kStride = DP + Elem<float>::kPad;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.0f;
#pragma unroll 2
  for (int k0 = 0; k0 < DP; k0 += 8) {
    Split<4> a[MT];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const float* q0 = q_s + ((warp * MT + mt) * 16 + g) * kStride + k0;
      const float* q1 = q0 + 8 * kStride;
      const float qa[4] = {q0[t], q1[t], q0[t + 4], q1[t + 4]};
      a[mt].set(qa);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float* kr = k_s + (j * 8 + g) * kStride + k0;
      const float kb[2] = {kr[t], kr[t + 4]};
      Split<2> b;
      b.set(kb);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) mma_3xtf32(s[mt][j], a[mt], b);
    }
  }
}

// ---- O += P V ------------------------------------------------------------------------------------------------

template <typename T, int DP, int MT>
__device__ __forceinline__ void pv_16bit(float (&o)[MT][DP / 8][4], const float (&p)[MT][8][4], const T* v_s,
                                         int lane) {
  constexpr int kStride = DP + Elem<T>::kPad;
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {  // keys 16kk .. 16kk+15
    uint32_t a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      a[mt][0] = pack2<T>(p[mt][2 * kk][0], p[mt][2 * kk][1]);
      a[mt][1] = pack2<T>(p[mt][2 * kk][2], p[mt][2 * kk][3]);
      a[mt][2] = pack2<T>(p[mt][2 * kk + 1][0], p[mt][2 * kk + 1][1]);
      a[mt][3] = pack2<T>(p[mt][2 * kk + 1][2], p[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int dd = 0; dd < DP / 16; ++dd) {  // dim tiles 2dd, 2dd+1
      uint32_t b[4];
      const int row = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
      const int col = dd * 16 + ((lane >> 4) << 3);
      ldmatrix_x4_trans(b, v_s + row * kStride + col);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma16816<T>(o[mt][2 * dd], a[mt], b[0], b[1]);
        mma16816<T>(o[mt][2 * dd + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

// float32: the k index of the m16n8k8 MMA is permuted within each 8 keys (logical t <-> key 2t, t+4 <->
// key 2t+1) so the S accumulators are the A fragments as they lie, no shuffles.
template <int DP, int MT>
__device__ __forceinline__ void pv_f32(float (&o)[MT][DP / 8][4], const float (&p)[MT][8][4], const float* v_s,
                                       int lane) {
  constexpr int kStride = DP + Elem<float>::kPad;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    Split<4> a[MT];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const float pa[4] = {p[mt][j][0], p[mt][j][2], p[mt][j][1], p[mt][j][3]};
      a[mt].set(pa);
    }
    const float* v0 = v_s + (j * 8 + 2 * t) * kStride + g;
    const float* v1 = v0 + kStride;
#pragma unroll
    for (int d = 0; d < DP / 8; ++d) {
      const float vb[2] = {v0[d * 8], v1[d * 8]};
      Split<2> b;
      b.set(vb);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) mma_3xtf32(o[mt][d], a[mt], b);
    }
  }
}

// ---- scale, bias, mask ---------------------------------------------------------------------------------------

// This thread's view of the bias: shared-memory tile or the global rows of its 2 * MT rows.
template <typename T, int MT>
struct BiasView {
  const T* smem;           // kBiasSmem: this thread's first row in the tile (row g of its warp's rows)
  const T* rows[MT][2];    // else: global row pointers (clamped to seq_q - 1; rows past it are never stored)
  int64_t col_stride = 1;  // global: 1 = pairs read as one load (vector)
  bool vector = false;
};

// s (raw Q.K) -> y = s * scale + bias, -inf where masked (kMask: key past seq_k, or causal and key > query).
template <typename T, int MT, bool kSmem, bool kMask>
__device__ __forceinline__ void scale_bias_mask(float (&s)[MT][8][4], const BiasView<T, MT>& bias, bool has_bias,
                                                float scale, int n0, int row_base, int t, int seq_k, bool causal,
                                                int bias_stride_smem) {
  using Pair = typename Elem<T>::Pair;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row_base + 16 * mt + 8 * r;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int c = j * 8 + 2 * t;  // column within the tile
        float2 b = make_float2(0.0f, 0.0f);
        if (has_bias) {
          if constexpr (kSmem) {
            b = Elem<T>::pair_to_float(
                *reinterpret_cast<const Pair*>(bias.smem + (16 * mt + 8 * r) * bias_stride_smem + c));
          } else {
            const T* rp = bias.rows[mt][r];
            const int col = n0 + c;
            if (bias.vector) {
              if (!kMask || col < seq_k) b = Elem<T>::pair_to_float(*reinterpret_cast<const Pair*>(rp + col));
            } else {
              if (!kMask || col < seq_k) b.x = Elem<T>::to_float(rp[col * bias.col_stride]);
              if (!kMask || col + 1 < seq_k) b.y = Elem<T>::to_float(rp[(col + 1) * bias.col_stride]);
            }
          }
        }
        float y0 = fmaf(s[mt][j][2 * r], scale, b.x);
        float y1 = fmaf(s[mt][j][2 * r + 1], scale, b.y);
        if constexpr (kMask) {
          const int col = n0 + c;
          if (col >= seq_k || (causal && col > row)) y0 = -INFINITY;
          if (col + 1 >= seq_k || (causal && col + 1 > row)) y1 = -INFINITY;
        }
        s[mt][j][2 * r] = y0;
        s[mt][j][2 * r + 1] = y1;
      }
    }
  }
}

// ---- the kernel ----------------------------------------------------------------------------------------------

template <typename T, class C>
__global__ void __launch_bounds__(C::kThreads)
    attention_forward(const AttentionParams p, bool vector_q, bool vector_k, bool vector_v, bool vector_bias) {
  constexpr bool k16 = sizeof(T) == 2;
  constexpr int DP = C::DP, MT = C::MT, kStride = C::kStride, kRowsM = C::kRowsM, kTile = C::kTile;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* q_s = reinterpret_cast<T*>(smem_raw);
  T* k_s = q_s + kRowsM * kStride;  // [2][tile]
  T* v_s = k_s + 2 * kTile;         // [2][tile]
  T* bias_s = v_s + 2 * kTile;      // [2][bias tile], kBiasSmem and a bias only

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int m_block = gridDim.x - 1 - blockIdx.x;  // heavy (causal) blocks first
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.heads / p.kv_heads);
  const int m0 = m_block * kRowsM;

  const T* q = static_cast<const T*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
  const T* k = static_cast<const T*>(p.k) + b * p.k_stride[0] + hk * p.k_stride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.v_stride[0] + hk * p.v_stride[1];
  const bool has_bias = p.bias != nullptr;
  const T* bias = has_bias ? static_cast<const T*>(p.bias) + b * p.bias_stride[0] + h * p.bias_stride[1] : nullptr;

  int n_tiles = (p.seq_k + kBlockN - 1) / kBlockN;
  if (p.causal) n_tiles = min(n_tiles, (min(m0 + kRowsM, p.seq_q) + kBlockN - 1) / kBlockN);

  auto load_kv = [&](int tile, int buf) {
    load_tile<T, C::kThreads, kBlockN, DP, kStride>(k_s + buf * kTile, k, p.k_stride[2], p.k_stride[3], tile * kBlockN,
                                                    0, p.seq_k, p.head_dim, vector_k);
    load_tile<T, C::kThreads, kBlockN, DP, kStride>(v_s + buf * kTile, v, p.v_stride[2], p.v_stride[3], tile * kBlockN,
                                                    0, p.seq_k, p.value_dim, vector_v);
    if constexpr (C::kBiasSmem) {
      if (has_bias)
        load_tile<T, C::kThreads, kRowsM, kBlockN, C::kBiasStride>(bias_s + buf * C::kBiasTile, bias, p.bias_stride[2],
                                                                   p.bias_stride[3], m0, tile * kBlockN, p.seq_q,
                                                                   p.seq_k, vector_bias);
    }
  };

  load_tile<T, C::kThreads, kRowsM, DP, kStride>(q_s, q, p.q_stride[2], p.q_stride[3], m0, 0, p.seq_q, p.head_dim,
                                                 vector_q);
  if (n_tiles > 0) load_kv(0, 0);
  cp_async_commit();

  float o[MT][DP / 8][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int d = 0; d < DP / 8; ++d) o[mt][d][0] = o[mt][d][1] = o[mt][d][2] = o[mt][d][3] = 0.0f;
  // Per row: ml = the running max of the scaled scores times log2(e), as rounded once and used by every
  // exponent (so the rescaling alpha matches the weights it rescales); l a per-thread partial sum.
  float ml_row[MT][2], l_row[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) ml_row[mt][r] = -INFINITY, l_row[mt][r] = 0.0f;
  const int row_base = m0 + warp * 16 * MT + g;  // this thread's rows: row_base + 16 mt + 8 r

  BiasView<T, MT> bv{};
  if (has_bias) {
    bv.smem = bias_s + (warp * 16 * MT + g) * C::kBiasStride;
    bv.vector = vector_bias;
    bv.col_stride = p.bias_stride[3];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        bv.rows[mt][r] = bias + min(row_base + 16 * mt + 8 * r, p.seq_q - 1) * p.bias_stride[2];
  }

  uint32_t q_frag[MT][k16 ? DP / 16 : 1][4];
  for (int it = 0; it < n_tiles; ++it) {
    const int buf = it & 1;
    if (it + 1 < n_tiles) {
      load_kv(it + 1, buf ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if constexpr (k16) {
      if (it == 0) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int kk = 0; kk < DP / 16; ++kk)
            ldmatrix_x4(q_frag[mt][kk],
                        q_s + ((warp * MT + mt) * 16 + (lane & 15)) * kStride + kk * 16 + ((lane >> 4) << 3));
      }
    }
    float s[MT][8][4];
    if constexpr (k16) {
      qk_16bit<T, DP, MT>(s, q_frag, k_s + buf * kTile, lane);
    } else {
      qk_f32<DP, MT>(s, reinterpret_cast<const float*>(q_s), reinterpret_cast<const float*>(k_s + buf * kTile), warp,
                     lane);
    }
    const int n0 = it * kBlockN;
    BiasView<T, MT> bt = bv;
    bt.smem = bv.smem + buf * C::kBiasTile;
    // Only the seq_k tail tile and the causal tiles that reach past this block's first row need a mask.
    const bool needs_mask = n0 + kBlockN > p.seq_k || (p.causal && n0 + kBlockN - 1 > m0);
    if (needs_mask)
      scale_bias_mask<T, MT, C::kBiasSmem, true>(s, bt, has_bias, p.scale, n0, row_base, t, p.seq_k, p.causal,
                                                 C::kBiasStride);
    else
      scale_bias_mask<T, MT, C::kBiasSmem, false>(s, bt, has_bias, p.scale, n0, row_base, t, p.seq_k, p.causal,
                                                  C::kBiasStride);
    // online softmax per row; each row is spread over the 4 threads of a quad
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;  // this tile's max
#pragma unroll
        for (int j = 0; j < 8; ++j) mx = fmaxf(mx, fmaxf(s[mt][j][2 * r], s[mt][j][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // e^(y - m) = 2^(y log2e - ml); a row with no key yet keeps ml = -inf and gets 2^-inf = 0
        const float ml = fmaxf(ml_row[mt][r], mx * kLog2e);
        const float m_log2 = ml == -INFINITY ? 0.0f : ml;
        const float alpha = fast_exp2(ml_row[mt][r] - m_log2);  // 0 while the old max is -inf
        ml_row[mt][r] = ml;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          s[mt][j][2 * r] = fast_exp2(fmaf(s[mt][j][2 * r], kLog2e, -m_log2));
          s[mt][j][2 * r + 1] = fast_exp2(fmaf(s[mt][j][2 * r + 1], kLog2e, -m_log2));
          sum += s[mt][j][2 * r] + s[mt][j][2 * r + 1];
        }
        l_row[mt][r] = l_row[mt][r] * alpha + sum;
#pragma unroll
        for (int d = 0; d < DP / 8; ++d) {
          o[mt][d][2 * r] *= alpha;
          o[mt][d][2 * r + 1] *= alpha;
        }
      }
    }
    if constexpr (k16) {
      pv_16bit<T, DP, MT>(o, s, v_s + buf * kTile, lane);
    } else {
      pv_f32<DP, MT>(o, s, reinterpret_cast<const float*>(v_s + buf * kTile), lane);
    }
    __syncthreads();  // the next iteration overwrites the other buffer only after all warps finished this one
  }
  if (n_tiles == 0) cp_async_wait<0>();

  // normalise and store
  T* out = static_cast<T*>(p.out) + b * p.o_stride[0] + h * p.o_stride[1];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_row[mt][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      const int row = row_base + 16 * mt + 8 * r;
      if (row < p.seq_q) {
#pragma unroll
        for (int d = 0; d < DP / 8; ++d) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int col = d * 8 + 2 * t + e;
            if (col < p.value_dim)
              out[row * p.o_stride[2] + col * p.o_stride[3]] = Elem<T>::from_float(o[mt][d][2 * r + e] * inv);
          }
        }
        if (p.lse != nullptr && t == 0)
          p.lse[b * p.lse_stride_b + h * p.lse_stride_h + row] =
              l > 0.0f ? (ml_row[mt][r] + log2f(l)) * kLn2 : -INFINITY;
      }
    }
  }
}

template <typename T, class C>
cudaError_t launch_typed(const AttentionParams& p, cudaStream_t stream) {
  const size_t smem = C::smem_bytes(p.bias != nullptr);
  // Per call: the attribute belongs to the current device's context, and setting it costs about a microsecond.
  const cudaError_t e = cudaFuncSetAttribute(attention_forward<T, C>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  constexpr int per = 16 / static_cast<int>(sizeof(T));
  auto vec = [&](const void* base, const int64_t* st, int dims) {
    return st[3] == 1 && (reinterpret_cast<uintptr_t>(base) % 16) == 0 && dims % per == 0 &&
           (st[2] * static_cast<int64_t>(sizeof(T))) % 16 == 0 && (st[1] * static_cast<int64_t>(sizeof(T))) % 16 == 0 &&
           (st[0] * static_cast<int64_t>(sizeof(T))) % 16 == 0;
  };
  // The bias as pairs (registers) or 16-byte chunks (shared memory) of contiguous keys.
  bool vector_bias = false;
  if (p.bias != nullptr) {
    const int64_t* st = p.bias_stride;
    const int64_t align = C::kBiasSmem ? 16 : 2 * static_cast<int64_t>(sizeof(T));
    const int64_t esz = static_cast<int64_t>(sizeof(T));
    vector_bias = st[3] == 1 && (reinterpret_cast<uintptr_t>(p.bias) % align) == 0 && p.seq_k % (align / esz) == 0 &&
                  (st[2] * esz) % align == 0 && (st[1] * esz) % align == 0 && (st[0] * esz) % align == 0;
  }
  const dim3 grid((p.seq_q + C::kRowsM - 1) / C::kRowsM, p.heads, p.batch);
  attention_forward<T, C><<<grid, C::kThreads, smem, stream>>>(p, vec(p.q, p.q_stride, p.head_dim),
                                                               vec(p.k, p.k_stride, p.head_dim),
                                                               vec(p.v, p.v_stride, p.value_dim), vector_bias);
  return cudaGetLastError();
}

// Rows per block: 128 (two row tiles per warp, each K/V fragment serving both) where the grid still has two
// waves of them (264 blocks on the H200's 132 SMs) and the registers allow it (head dims up to 64: 255 registers,
// no spills), else 64. Measured at B8 H12 S1024 D64 (768 blocks of 128), 128 rows against 64: float32 causal /
// bias 0.55 / 1.03 ms against 0.56 / 1.13 ms (last session's kernel); bfloat16 with a bias 0.156 against
// 0.183 ms, causal within noise (0.115 against 0.112 ms). 16-bit takes 128 rows at head dim 64 only, the width
// that was measured and tested with them.
template <typename T, int DP>
cudaError_t launch_rows(const AttentionParams& p, cudaStream_t stream) {
  const int64_t blocks128 = static_cast<int64_t>((p.seq_q + 127) / 128) * p.heads * p.batch;
  constexpr bool k128 = sizeof(T) == 4 ? DP <= 64 : DP == 64;
  if constexpr (k128) {
    if (blocks128 >= 264) return launch_typed<T, Tiling<T, DP, 2>>(p, stream);
  }
  return launch_typed<T, Tiling<T, DP, 1>>(p, stream);
}

template <typename T>
cudaError_t launch_dims(const AttentionParams& p, cudaStream_t stream) {
  const int d = p.head_dim > p.value_dim ? p.head_dim : p.value_dim;
  if (d <= 32) return launch_rows<T, 32>(p, stream);
  if (d <= 64) return launch_rows<T, 64>(p, stream);
  return launch_rows<T, 128>(p, stream);
}

}  // namespace
}  // namespace slimtensor_cuda::aoti_ops

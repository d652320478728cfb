// tile_transpose.cuh: the tiled transpose kernel (Note [Tiled transpose]) and the fast division it batches
// with (Note [Fast divmod]); used by copy_kernels.cu (moves, scalar tiles) and transpose_convert.cu (every
// converting pair with vector tiles).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/copy_kernels.h"
#include "kernels/element_ops.cuh"

namespace slimtensor_cuda {
namespace kernels {

inline constexpr int kThreads = 256;

// Note [Fast divmod]: index decomposition divides by every dim's size for every element; a hardware
// 32-bit division is ~20 instructions, a 64-bit one far more. For a divisor d >= 1 with l = ceil(log2 d)
// and m = floor(2^32 (2^l - d) / d) + 1, n / d == (umulhi(n, m) + n) >> l for every n < 2^31 (the sum
// cannot overflow there). The kernels use it only on the 32-bit path (every index and offset < 2^31).
struct Divmod {
  uint32_t d = 1, m = 1, l = 0;
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, m) + n) >> l; }
};
inline Divmod make_divmod(uint64_t d) {  // d in [1, 2^31]
  Divmod r;
  r.d = static_cast<uint32_t>(d);
  while ((uint64_t{1} << r.l) < d) ++r.l;
  r.m = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << r.l) - d)) / d + 1);
  return r;
}

// Note [Tiled transpose]: the destination's fast dim a and the source's fast dim b differ. A T x T tile
// (rows a, columns b) goes through shared memory: the read phase walks b (the source's contiguous dim),
// the write phase walks a (the destination's), so both global sides are coalesced. The read phase loads
// VS source elements per access and converts them in registers (Op::convert: a byte move, or a dtype
// pair's conversion), the tile holds destination elements, and the write phase stores VD of them per
// access: with VS, VD > 1 (both fast dims of stride 1, sizes, other strides and pointers allowing it)
// every global access is a vector of up to 16 bytes; VS == VD == 1 reads and writes single elements
// (odd strides). Every thread issues all its loads of a tile before its first shared-memory store. Rows
// are padded to an odd number of 4-byte words so that the column-wise shared-memory accesses of the other
// phase spread over the banks (at most 2-way conflicts for 4-byte elements). Other dims form the batch:
// one decomposition per tile (Divmod on the 32-bit path).
struct TransposeParams {
  int64_t size_a, src_a, dst_a;  // the destination's fast dim
  int64_t size_b, src_b, dst_b;  // the source's fast dim
  int nbatch_dims;
  int64_t nbatch;
  int64_t batch_sizes[kMaxCopyDims], batch_src[kMaxCopyDims], batch_dst[kMaxCopyDims];
  Divmod batch_div[kMaxCopyDims];
};

template <class Op, int T, int VS, int VD, bool Small>
__global__ void __launch_bounds__(kThreads) transpose_kernel(TransposeParams p, char* dst, const char* src) {
  using S = typename Op::Src;
  using E = typename Op::Elem;
  using I = std::conditional_t<Small, uint32_t, int64_t>;
  constexpr int kPad = sizeof(E) >= 4 ? 1 : 4 / static_cast<int>(sizeof(E));
  constexpr int W = T + kPad;
  constexpr int kRowR = T / VS, kRowW = T / VD;  // vectors per tile row, read / write phase
  constexpr int kPerR = T * T / VS / kThreads, kPerW = T * T / VD / kThreads;  // vectors per thread
  static_assert(kPerR >= 1 && (T * T / VS) % kThreads == 0, "tile must split evenly over the threads");
  static_assert(kPerW >= 1 && (T * T / VD) % kThreads == 0, "tile must split evenly over the threads");
  __shared__ E tile[T * W];
  using SV = Vec<S, VS>;
  using DV = Vec<E, VD>;
  const I size_a = static_cast<I>(p.size_a), size_b = static_cast<I>(p.size_b);
  const I src_a = static_cast<I>(p.src_a), src_b = static_cast<I>(p.src_b);
  const I dst_a = static_cast<I>(p.dst_a), dst_b = static_cast<I>(p.dst_b);
  const I tiles_a = (size_a + T - 1) / T, tiles_b = (size_b + T - 1) / T;
  for (I batch = blockIdx.z; batch < static_cast<I>(p.nbatch); batch += gridDim.z) {
    I rem = batch, bs = 0, bd = 0;
    for (int d = p.nbatch_dims - 1; d >= 0; --d) {
      I q;
      if constexpr (Small)
        q = p.batch_div[d].div(rem);
      else
        q = rem / p.batch_sizes[d];
      const I r = rem - q * static_cast<I>(p.batch_sizes[d]);
      bs += r * static_cast<I>(p.batch_src[d]);
      bd += r * static_cast<I>(p.batch_dst[d]);
      rem = q;
    }
    for (I ta = blockIdx.y; ta < tiles_a; ta += gridDim.y) {
      for (I tb = blockIdx.x; tb < tiles_b; tb += gridDim.x) {
        const I a0 = ta * T, b0 = tb * T;
        SV buf[kPerR];
#pragma unroll
        for (int j = 0; j < kPerR; ++j) {
          const int i = threadIdx.x + j * kThreads;
          const I a = a0 + i / kRowR, b = b0 + (i % kRowR) * VS;
          if (a < size_a && b < size_b) {
            const char* from = src + static_cast<int64_t>(bs + a * src_a + b * src_b) * sizeof(S);
            if constexpr (VS == 1)  // the element's own alignment (a 16-byte element may sit 8 bytes off)
              buf[j].v[0] = *reinterpret_cast<const S*>(from);
            else
              buf[j] = *reinterpret_cast<const SV*>(from);
          }
        }
#pragma unroll
        for (int j = 0; j < kPerR; ++j) {
          const int i = threadIdx.x + j * kThreads;
          const int r = i / kRowR, c = (i % kRowR) * VS;
#pragma unroll
          for (int k = 0; k < VS; ++k) tile[r * W + c + k] = Op::convert(buf[j].v[k]);
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < kPerW; ++j) {
          const int i = threadIdx.x + j * kThreads;
          const int r = i / kRowW, c = (i % kRowW) * VD;  // r: column b of the tile, c: row a
          const I a = a0 + c, b = b0 + r;
          if (a < size_a && b < size_b) {
            DV out;
#pragma unroll
            for (int k = 0; k < VD; ++k) out.v[k] = tile[(c + k) * W + r];
            char* to = dst + static_cast<int64_t>(bd + a * dst_a + b * dst_b) * sizeof(E);
            if constexpr (VD == 1)
              *reinterpret_cast<E*>(to) = out.v[0];
            else
              *reinterpret_cast<DV*>(to) = out;
          }
        }
        __syncthreads();
      }
    }
  }
}

template <class Op, int T, int VS, int VD, bool Small>
void launch_transpose(const TransposeParams& p, char* dst, const char* src, cudaStream_t stream) {
  const int64_t tiles_a = (p.size_a + T - 1) / T, tiles_b = (p.size_b + T - 1) / T;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles_b, 0x7FFFFFFF)),
                  static_cast<unsigned>(std::min<int64_t>(tiles_a, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(p.nbatch, 65535)));
  transpose_kernel<Op, T, VS, VD, Small><<<grid, kThreads, 0, stream>>>(p, dst, src);
}

// Every index and offset of the layout fits the 32-bit path (Note [Fast divmod]).
inline bool small_layout(const CopyLayout& l) {
  int64_t es = 0, ed = 0;
  return l.numel < (int64_t{1} << 31) && extent_elements(l, true, &es) && extent_elements(l, false, &ed) &&
         es < (int64_t{1} << 31) && ed < (int64_t{1} << 31);
}

// True when the layout is a transpose (the destination's fast dim, the last after normalize_copy, is not
// the source's, and both have at least 8 elements): fills *p, the other dims as its batch.
inline bool plan_transpose(const CopyLayout& l, bool small, TransposeParams* p) {
  const int n = l.ndim, a = n - 1;
  int b = -1;
  for (int d = 0; d < n; ++d) {
    if (l.src_strides[d] > 0 && (b < 0 || l.src_strides[d] < l.src_strides[b])) b = d;
  }
  if (n < 2 || b < 0 || b == a || l.src_strides[b] >= l.src_strides[a] || l.sizes[a] < 8 || l.sizes[b] < 8)
    return false;
  *p = TransposeParams{};
  p->size_a = l.sizes[a];
  p->src_a = l.src_strides[a];
  p->dst_a = l.dst_strides[a];
  p->size_b = l.sizes[b];
  p->src_b = l.src_strides[b];
  p->dst_b = l.dst_strides[b];
  p->nbatch = 1;
  for (int d = 0; d < n; ++d) {
    if (d == a || d == b) continue;
    p->batch_sizes[p->nbatch_dims] = l.sizes[d];
    p->batch_src[p->nbatch_dims] = l.src_strides[d];
    p->batch_dst[p->nbatch_dims] = l.dst_strides[d];
    p->batch_div[p->nbatch_dims] = make_divmod(small ? l.sizes[d] : 1);
    ++p->nbatch_dims;
    p->nbatch *= l.sizes[d];  // <= numel: no overflow
  }
  return true;
}

// True when every global access of the tile can be a vector: VS source elements along b, VD destination
// elements along a (fast dims of stride 1, sizes and the other strides whole vectors, 16-byte pointers).
inline bool vector_tiles_fit(const TransposeParams& p, int vs, int vd, const void* dst, const void* src) {
  bool ok = p.src_b == 1 && p.dst_a == 1 && p.size_b % vs == 0 && p.src_a % vs == 0 && p.size_a % vd == 0 &&
            p.dst_b % vd == 0 && aligned(src, 16) && aligned(dst, 16);
  for (int d = 0; ok && d < p.nbatch_dims; ++d) ok = p.batch_src[d] % vs == 0 && p.batch_dst[d] % vd == 0;
  return ok;
}

}  // namespace kernels
}  // namespace slimtensor_cuda

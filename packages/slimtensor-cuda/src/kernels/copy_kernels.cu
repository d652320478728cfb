// copy_kernels.cu: the strided/converting copy kernels and the fill kernel (Note [Copy kernel choice]).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/convert.cuh"
#include "kernels/copy_kernels.h"

namespace slimtensor_cuda {
namespace {

// ---- element operations ----------------------------------------------------------------------------
struct alignas(8) Bytes16 {
  uint64_t lo, hi;
};

template <class T>
struct MoveOp {
  using Elem = T;
  __device__ __forceinline__ Elem read(const char* src, int64_t off) const {
    return reinterpret_cast<const T*>(src)[off];
  }
  __device__ __forceinline__ void write(char* dst, int64_t off, const Elem& e) const {
    reinterpret_cast<T*>(dst)[off] = e;
  }
};

struct F32ToBF16 {
  using Elem = uint16_t;
  __device__ __forceinline__ Elem read(const char* src, int64_t off) const {
    return f32_to_bf16(reinterpret_cast<const float*>(src)[off]);
  }
  __device__ __forceinline__ void write(char* dst, int64_t off, Elem e) const { reinterpret_cast<uint16_t*>(dst)[off] = e; }
};
struct BF16ToF32 {
  using Elem = float;
  __device__ __forceinline__ Elem read(const char* src, int64_t off) const {
    return bf16_to_f32(reinterpret_cast<const uint16_t*>(src)[off]);
  }
  __device__ __forceinline__ void write(char* dst, int64_t off, Elem e) const { reinterpret_cast<float*>(dst)[off] = e; }
};
struct F32ToF16 {
  using Elem = uint16_t;
  __device__ __forceinline__ Elem read(const char* src, int64_t off) const {
    return f32_to_f16(reinterpret_cast<const float*>(src)[off]);
  }
  __device__ __forceinline__ void write(char* dst, int64_t off, Elem e) const { reinterpret_cast<uint16_t*>(dst)[off] = e; }
};
struct F16ToF32 {
  using Elem = float;
  __device__ __forceinline__ Elem read(const char* src, int64_t off) const {
    return f16_to_f32(reinterpret_cast<const uint16_t*>(src)[off]);
  }
  __device__ __forceinline__ void write(char* dst, int64_t off, Elem e) const { reinterpret_cast<float*>(dst)[off] = e; }
};

// Any convertible pair, decided per element by the (uniform) dtype codes.
struct GenericOp {
  using Elem = Bytes16;
  int32_t src_dtype, dst_dtype;
  int32_t src_size, dst_size;
  __device__ __forceinline__ Elem read(const char* src, int64_t off) const {
    Elem e{0, 0};
    convert_element(dst_dtype, &e, src_dtype, src + off * src_size);
    return e;
  }
  __device__ __forceinline__ void write(char* dst, int64_t off, const Elem& e) const {
    char* p = dst + off * dst_size;
    switch (dst_size) {
      case 1: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(e.lo); break;
      case 2: *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(e.lo); break;
      case 4: *reinterpret_cast<uint32_t*>(p) = static_cast<uint32_t>(e.lo); break;
      case 8: *reinterpret_cast<uint64_t*>(p) = e.lo; break;
      default:
        reinterpret_cast<uint64_t*>(p)[0] = e.lo;
        reinterpret_cast<uint64_t*>(p)[1] = e.hi;
        break;
    }
  }
};

// ---- kernels -----------------------------------------------------------------------------------------
constexpr int kThreads = 256;

template <class Op, class IndexT>
__global__ void __launch_bounds__(kThreads) elementwise_kernel(Op op, CopyLayout l, char* dst, const char* src) {
  const IndexT n = static_cast<IndexT>(l.numel);
  const IndexT step = static_cast<IndexT>(gridDim.x) * kThreads;
  for (IndexT lin = static_cast<IndexT>(blockIdx.x) * kThreads + threadIdx.x; lin < n; lin += step) {
    IndexT rem = lin;
    int64_t so = 0, d_off = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
      const IndexT size = static_cast<IndexT>(l.sizes[d]);
      const IndexT q = rem / size;
      const IndexT r = rem - q * size;
      so += static_cast<int64_t>(r) * l.src_strides[d];
      d_off += static_cast<int64_t>(r) * l.dst_strides[d];
      rem = q;
    }
    op.write(dst, d_off, op.read(src, so));
  }
}

// Both sides one dense run: four independent elements per thread, each access coalesced.
template <class Op>
__global__ void __launch_bounds__(kThreads) dense_kernel(Op op, int64_t n, char* dst, const char* src) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads * 4;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kThreads * 4 + threadIdx.x; base < n; base += step) {
    typename Op::Elem e[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t i = base + k * kThreads;
      if (i < n) e[k] = op.read(src, i);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t i = base + k * kThreads;
      if (i < n) op.write(dst, i, e[k]);
    }
  }
}

struct TransposeParams {
  int64_t size_a, src_a, dst_a;  // the destination's fast dim
  int64_t size_b, src_b, dst_b;  // the source's fast dim
  int nbatch_dims;
  int64_t batch_sizes[kMaxCopyDims], batch_src[kMaxCopyDims], batch_dst[kMaxCopyDims];
  int64_t nbatch;
};

// Note [Tiled transpose]: a TILE x TILE tile goes through shared memory. Reads run along b (threadIdx.x
// walks the source's fast dim), writes along a (threadIdx.x walks the destination's fast dim), so both
// global accesses are coalesced; the +1 column keeps the transposed shared-memory reads conflict-free.
template <class Op, int TILE>
__global__ void __launch_bounds__(kThreads) transpose_kernel(Op op, TransposeParams p, char* dst, const char* src) {
  constexpr int ROWS = kThreads / TILE;
  __shared__ typename Op::Elem tile[TILE][TILE + 1];
  const int64_t tiles_a = (p.size_a + TILE - 1) / TILE, tiles_b = (p.size_b + TILE - 1) / TILE;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t batch = blockIdx.z; batch < p.nbatch; batch += gridDim.z) {
    int64_t rem = batch, bs = 0, bd = 0;
    for (int d = p.nbatch_dims - 1; d >= 0; --d) {
      const int64_t q = rem / p.batch_sizes[d], r = rem - q * p.batch_sizes[d];
      bs += r * p.batch_src[d];
      bd += r * p.batch_dst[d];
      rem = q;
    }
    for (int64_t ta = blockIdx.y; ta < tiles_a; ta += gridDim.y) {
      for (int64_t tb = blockIdx.x; tb < tiles_b; tb += gridDim.x) {
        const int64_t a0 = ta * TILE, b0 = tb * TILE;
        const int64_t b = b0 + tx;
#pragma unroll
        for (int r = ty; r < TILE; r += ROWS) {
          const int64_t a = a0 + r;
          if (a < p.size_a && b < p.size_b) tile[r][tx] = op.read(src, bs + a * p.src_a + b * p.src_b);
        }
        __syncthreads();
        const int64_t a = a0 + tx;
#pragma unroll
        for (int r = ty; r < TILE; r += ROWS) {
          const int64_t bb = b0 + r;
          if (a < p.size_a && bb < p.size_b) op.write(dst, bd + a * p.dst_a + bb * p.dst_b, tile[tx][r]);
        }
        __syncthreads();
      }
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) fill_kernel(T* dst, int64_t n, T value) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step) dst[i] = value;
}

__global__ void __launch_bounds__(kThreads) fill_bytes_kernel(unsigned char* dst, int64_t n, Bytes16 pattern, int size) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  const unsigned char* pat = reinterpret_cast<const unsigned char*>(&pattern);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step) dst[i] = pat[i % size];
}

unsigned grid_for(int64_t work_items) {
  const int64_t blocks = (work_items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks, 1 << 16)));
}

// ---- dispatch ------------------------------------------------------------------------------------------
template <class Op>
cudaError_t run(const Op& op, const CopyLayout& l, char* dst, const char* src, int elem_bytes, cudaStream_t stream) {
  const int n = l.ndim;
  if (n <= 1 && (n == 0 || (l.dst_strides[0] == 1 && l.src_strides[0] == 1))) {
    dense_kernel<Op><<<grid_for((l.numel + 3) / 4), kThreads, 0, stream>>>(op, l.numel, dst, src);
    return cudaGetLastError();
  }
  // The destination's fast dim is the last (normalize_copy ordered them); find the source's.
  int b = -1;
  for (int d = 0; d < n; ++d) {
    if (l.src_strides[d] > 0 && (b < 0 || l.src_strides[d] < l.src_strides[b])) b = d;
  }
  const int a = n - 1;
  if (n >= 2 && b >= 0 && b != a && l.src_strides[b] < l.src_strides[a] && l.sizes[a] >= 8 && l.sizes[b] >= 8) {
    TransposeParams p{};
    p.size_a = l.sizes[a];
    p.src_a = l.src_strides[a];
    p.dst_a = l.dst_strides[a];
    p.size_b = l.sizes[b];
    p.src_b = l.src_strides[b];
    p.dst_b = l.dst_strides[b];
    p.nbatch = 1;
    for (int d = 0; d < n; ++d) {
      if (d == a || d == b) continue;
      p.batch_sizes[p.nbatch_dims] = l.sizes[d];
      p.batch_src[p.nbatch_dims] = l.src_strides[d];
      p.batch_dst[p.nbatch_dims] = l.dst_strides[d];
      ++p.nbatch_dims;
      p.nbatch *= l.sizes[d];  // <= numel: no overflow
    }
    auto launch = [&](auto tile_tag) {
      constexpr int TILE = decltype(tile_tag)::value;
      const int64_t tiles_a = (p.size_a + TILE - 1) / TILE, tiles_b = (p.size_b + TILE - 1) / TILE;
      const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles_b, 0x7FFFFFFF)),
                      static_cast<unsigned>(std::min<int64_t>(tiles_a, 65535)),
                      static_cast<unsigned>(std::min<int64_t>(p.nbatch, 65535)));
      transpose_kernel<Op, TILE><<<grid, dim3(TILE, kThreads / TILE), 0, stream>>>(op, p, dst, src);
    };
    if (elem_bytes <= 2) launch(std::integral_constant<int, 64>{});
    else launch(std::integral_constant<int, 32>{});
    return cudaGetLastError();
  }
  if (l.numel <= 0xFFFFFFFFll) {
    elementwise_kernel<Op, uint32_t><<<grid_for(l.numel), kThreads, 0, stream>>>(op, l, dst, src);
  } else {
    elementwise_kernel<Op, uint64_t><<<grid_for(l.numel), kThreads, 0, stream>>>(op, l, dst, src);
  }
  return cudaGetLastError();
}

}  // namespace

bool normalize_copy(int ndim, const int64_t* sizes, const int64_t* dst_strides, const int64_t* src_strides,
                    CopyLayout* out, std::string* error) {
  CopyLayout l;
  if (ndim < 0) {
    *error = "ndim is " + std::to_string(ndim) + "; expected >= 0";
    return false;
  }
  if (ndim > 0 && (sizes == nullptr || dst_strides == nullptr || src_strides == nullptr)) {
    *error = "sizes, dst_strides and src_strides must not be NULL when ndim > 0";
    return false;
  }
  int64_t numel = 1;
  struct Dim {
    int64_t size, ds, ss;
  };
  Dim dims[kMaxCopyDims];
  int kept = 0;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] < 0 || dst_strides[d] < 0 || src_strides[d] < 0) {
      *error = "dim " + std::to_string(d) + " has size " + std::to_string(sizes[d]) + ", strides " +
               std::to_string(dst_strides[d]) + " (dst) and " + std::to_string(src_strides[d]) +
               " (src); sizes and strides must be >= 0";
      return false;
    }
    if (sizes[d] == 0) numel = 0;
    if (numel != 0 && __builtin_mul_overflow(numel, sizes[d], &numel)) {
      *error = "the element count overflows int64";
      return false;
    }
  }
  if (numel == 0) {
    l.numel = 0;
    *out = l;
    return true;
  }
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 1) continue;
    if (kept == kMaxCopyDims) {
      *error = "more than " + std::to_string(kMaxCopyDims) + " dims of size > 1 remain (" + std::to_string(ndim) +
               " given); the CUDA copy kernels take at most " + std::to_string(kMaxCopyDims);
      return false;
    }
    dims[kept++] = {sizes[d], dst_strides[d], src_strides[d]};
  }
  // Destination's largest stride first (its fast dim last); stable, so equal strides keep their order.
  std::stable_sort(dims, dims + kept, [](const Dim& x, const Dim& y) { return x.ds > y.ds; });
  int m = 0;
  for (int d = 0; d < kept; ++d) {
    if (m > 0) {
      Dim& prev = dims[m - 1];
      int64_t pd = 0, ps = 0;
      const bool ok_d = !__builtin_mul_overflow(dims[d].ds, dims[d].size, &pd) && pd == prev.ds;
      const bool ok_s = !__builtin_mul_overflow(dims[d].ss, dims[d].size, &ps) && ps == prev.ss;
      if (ok_d && ok_s) {  // prev is exactly `size` steps of this dim: one dim
        prev.size *= dims[d].size;  // <= numel
        prev.ds = dims[d].ds;
        prev.ss = dims[d].ss;
        continue;
      }
    }
    dims[m++] = dims[d];
  }
  l.ndim = m;
  for (int d = 0; d < m; ++d) {
    l.sizes[d] = dims[d].size;
    l.dst_strides[d] = dims[d].ds;
    l.src_strides[d] = dims[d].ss;
  }
  l.numel = numel;
  int64_t e = 0;
  if (!extent_elements(l, true, &e) || !extent_elements(l, false, &e)) {
    *error = "the largest element offset overflows int64";
    return false;
  }
  *out = l;
  return true;
}

bool extent_elements(const CopyLayout& l, bool src_side, int64_t* out) {
  if (l.numel == 0) {
    *out = 0;
    return true;
  }
  int64_t last = 0;
  for (int d = 0; d < l.ndim; ++d) {
    int64_t t = 0;
    const int64_t s = src_side ? l.src_strides[d] : l.dst_strides[d];
    if (__builtin_mul_overflow(s, l.sizes[d] - 1, &t) || __builtin_add_overflow(last, t, &last)) return false;
  }
  if (__builtin_add_overflow(last, int64_t{1}, &last)) return false;
  *out = last;
  return true;
}

cudaError_t launch_strided_copy(const CopyLayout& l, void* dst_v, int32_t dst_dtype, int dst_size, const void* src_v,
                                int32_t src_dtype, int src_size, cudaStream_t stream) {
  if (l.numel == 0) return cudaSuccess;
  char* dst = static_cast<char*>(dst_v);
  const char* src = static_cast<const char*>(src_v);
  if (dst_dtype == src_dtype) {
    if (l.ndim == 0 || (l.ndim == 1 && l.dst_strides[0] == 1 && l.src_strides[0] == 1)) {
      return cudaMemcpyAsync(dst, src, static_cast<size_t>(l.numel) * dst_size, cudaMemcpyDeviceToDevice, stream);
    }
    switch (dst_size) {
      case 1: return run(MoveOp<uint8_t>{}, l, dst, src, 1, stream);
      case 2: return run(MoveOp<uint16_t>{}, l, dst, src, 2, stream);
      case 4: return run(MoveOp<uint32_t>{}, l, dst, src, 4, stream);
      case 8: return run(MoveOp<uint64_t>{}, l, dst, src, 8, stream);
      case 16: return run(MoveOp<Bytes16>{}, l, dst, src, 16, stream);
      default: return cudaErrorInvalidValue;
    }
  }
  if (src_dtype == dt::F32 && dst_dtype == dt::BF16) return run(F32ToBF16{}, l, dst, src, 2, stream);
  if (src_dtype == dt::BF16 && dst_dtype == dt::F32) return run(BF16ToF32{}, l, dst, src, 4, stream);
  if (src_dtype == dt::F32 && dst_dtype == dt::F16) return run(F32ToF16{}, l, dst, src, 2, stream);
  if (src_dtype == dt::F16 && dst_dtype == dt::F32) return run(F16ToF32{}, l, dst, src, 4, stream);
  return run(GenericOp{src_dtype, dst_dtype, src_size, dst_size}, l, dst, src, std::max(src_size, dst_size) > 4 ? 8 : 4,
             stream);
}

cudaError_t launch_fill(void* dst, uint64_t nbytes, const void* pattern, uint32_t size, cudaStream_t stream) {
  if (nbytes == 0) return cudaSuccess;
  const unsigned char* pat = static_cast<const unsigned char*>(pattern);
  bool uniform = true;
  for (uint32_t i = 1; i < size; ++i) uniform = uniform && pat[i] == pat[0];
  if (uniform) return cudaMemsetAsync(dst, pat[0], nbytes, stream);
  Bytes16 rep{0, 0};
  unsigned char* r = reinterpret_cast<unsigned char*>(&rep);
  for (int i = 0; i < 16; ++i) r[i] = pat[i % size];
  const uintptr_t addr = reinterpret_cast<uintptr_t>(dst);
  const int64_t n = static_cast<int64_t>(nbytes);
  if (16 % size == 0 && addr % 16 == 0 && nbytes % 16 == 0) {
    uint4 v;
    std::memcpy(&v, &rep, 16);
    fill_kernel<uint4><<<grid_for(n / 16), kThreads, 0, stream>>>(static_cast<uint4*>(dst), n / 16, v);
  } else if (size == 8 && addr % 8 == 0) {
    fill_kernel<uint64_t><<<grid_for(n / 8), kThreads, 0, stream>>>(static_cast<uint64_t*>(dst), n / 8, rep.lo);
  } else if (size == 4 && addr % 4 == 0) {
    fill_kernel<uint32_t><<<grid_for(n / 4), kThreads, 0, stream>>>(static_cast<uint32_t*>(dst), n / 4,
                                                                    static_cast<uint32_t>(rep.lo));
  } else if (size == 2 && addr % 2 == 0) {
    fill_kernel<uint16_t><<<grid_for(n / 2), kThreads, 0, stream>>>(static_cast<uint16_t*>(dst), n / 2,
                                                                    static_cast<uint16_t>(rep.lo));
  } else {
    fill_bytes_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<unsigned char*>(dst), n, rep, static_cast<int>(size));
  }
  return cudaGetLastError();
}

}  // namespace slimtensor_cuda

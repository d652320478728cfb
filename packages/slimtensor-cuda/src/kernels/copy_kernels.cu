// copy_kernels.cu: the strided/converting copy kernels and the fill kernel (Note [Copy kernel choice]).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/copy_kernels.h"
#include "kernels/element_ops.cuh"
#include "kernels/tile_transpose.cuh"

namespace slimtensor_cuda {
namespace {
using namespace kernels;

// ---- kernels ---------------------------------------------------------------------------------------------
// Note [Gather kernel]: layouts whose fastest dims agree on both sides (after widening, Note [Copy kernel
// choice]), and every strided conversion of a pair without its own PairOp: each thread moves Ilp elements
// kThreads apart (4; 1 for GenericOp, whose per-element conversion is long code) (consecutive threads take consecutive
// destination elements, so both sides' accesses are coalesced along the shared fast dim), decomposing each
// linear index with Divmod on the 32-bit path, plain division on the 64-bit one.
template <class Op>
__host__ __device__ constexpr int gather_ilp() {
  return std::is_same_v<Op, GenericOp<typename Op::Elem>> ? 1 : 4;
}
struct GatherParams {
  int ndim;
  int64_t numel;
  int64_t sizes[kMaxCopyDims], src_strides[kMaxCopyDims], dst_strides[kMaxCopyDims];
  Divmod div[kMaxCopyDims];
};

template <bool Small>
__device__ __forceinline__ void gather_offsets(const GatherParams& p, int64_t lin, int64_t* so, int64_t* dof) {
  if constexpr (Small) {
    uint32_t rem = static_cast<uint32_t>(lin), s = 0, d = 0;
    for (int k = p.ndim - 1; k > 0; --k) {
      const uint32_t q = p.div[k].div(rem), r = rem - q * p.div[k].d;
      s += r * static_cast<uint32_t>(p.src_strides[k]);
      d += r * static_cast<uint32_t>(p.dst_strides[k]);
      rem = q;
    }
    *so = s + rem * static_cast<uint32_t>(p.src_strides[0]);
    *dof = d + rem * static_cast<uint32_t>(p.dst_strides[0]);
  } else {
    int64_t rem = lin, s = 0, d = 0;
    for (int k = p.ndim - 1; k > 0; --k) {
      const int64_t q = rem / p.sizes[k], r = rem - q * p.sizes[k];
      s += r * p.src_strides[k];
      d += r * p.dst_strides[k];
      rem = q;
    }
    *so = s + rem * p.src_strides[0];
    *dof = d + rem * p.dst_strides[0];
  }
}

template <class Op, bool Small>
__global__ void __launch_bounds__(kThreads) gather_kernel(Op op, GatherParams p, char* dst, const char* src) {
  constexpr int kGatherIlp = gather_ilp<Op>();
  const int64_t base = static_cast<int64_t>(blockIdx.x) * (kThreads * kGatherIlp) + threadIdx.x;
  typename Op::Elem e[kGatherIlp];
  int64_t doff[kGatherIlp];
#pragma unroll
  for (int k = 0; k < kGatherIlp; ++k) {
    const int64_t lin = base + k * kThreads;
    if (lin < p.numel) {
      int64_t so;
      gather_offsets<Small>(p, lin, &so, &doff[k]);
      e[k] = op.read(src, so);
    }
  }
#pragma unroll
  for (int k = 0; k < kGatherIlp; ++k) {
    if (base + k * kThreads < p.numel) op.write(dst, doff[k], e[k]);
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) fill_kernel(T* dst, int64_t n, T value) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step) dst[i] = value;
}

__global__ void __launch_bounds__(kThreads)
    fill_bytes_kernel(unsigned char* dst, int64_t n, Bytes16 pattern, int size) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  const unsigned char* pat = reinterpret_cast<const unsigned char*>(&pattern);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step) dst[i] = pat[i % size];
}

unsigned grid_for(int64_t work_items) {
  const int64_t blocks = (work_items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks, 1 << 16)));
}
unsigned blocks_of(int64_t items, int64_t per_block) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>((items + per_block - 1) / per_block, 0x7FFFFFFF)));
}

// ---- dispatch --------------------------------------------------------------------------------------------

// The tile edge for elements of N bytes: rows of 256 bytes (at most 128 elements, at least 32).
template <int N>
__host__ __device__ constexpr int tile_edge() {
  return 256 / N > 128 ? 128 : (256 / N < 32 ? 32 : 256 / N);
}

template <class Op>
cudaError_t run(const Op& op, const CopyLayout& l, char* dst, const char* src, cudaStream_t stream) {
  using E = typename Op::Elem;
  constexpr int kElem = static_cast<int>(sizeof(E));
  const int n = l.ndim;
  const bool small = small_layout(l);
  constexpr bool kMove = std::is_same_v<Op, MoveOp<E>>;
  // Note [Compile time]: every tile kernel is a fully unrolled body per element type; with the general
  // conversion inlined into them they took most of the plugin's build. So these tiles serve moves and the
  // four hot conversion pairs (PairOp, scalar tiles for what transpose_convert.cu's vector tiles cannot
  // take) on the 32-bit path, and only moves on the 64-bit one (past 2^31 elements); other strided
  // conversions take the gather kernel.
  if constexpr (!std::is_same_v<Op, GenericOp<E>>) {
    TransposeParams p{};
    if ((kMove || small) && plan_transpose(l, small, &p)) {
      constexpr int V = 16 / kElem;
      constexpr int kScalarTile = kElem > 8 ? 32 : 64;  // 16-byte elements: 16 KiB of shared memory
      if constexpr (kMove && V > 1) {
        if (small && vector_tiles_fit(p, V, V, dst, src)) {
          launch_transpose<Op, tile_edge<kElem>(), V, V, true>(p, dst, src, stream);
          return cudaGetLastError();
        }
      }
      if (small) {
        launch_transpose<Op, kScalarTile, 1, 1, true>(p, dst, src, stream);
        return cudaGetLastError();
      }
      if constexpr (kMove) {
        launch_transpose<Op, kScalarTile, 1, 1, false>(p, dst, src, stream);
        return cudaGetLastError();
      }
    }
  }
  GatherParams g{};
  g.ndim = n;
  g.numel = l.numel;
  for (int d = 0; d < n; ++d) {
    g.sizes[d] = l.sizes[d];
    g.src_strides[d] = l.src_strides[d];
    g.dst_strides[d] = l.dst_strides[d];
    g.div[d] = make_divmod(small ? l.sizes[d] : 1);
  }
  if (n == 0) {  // one element
    g.ndim = 1;
    g.sizes[0] = 1;
  }
  const unsigned blocks = blocks_of(l.numel, kThreads * gather_ilp<Op>());
  if (small)
    gather_kernel<Op, true><<<blocks, kThreads, 0, stream>>>(op, g, dst, src);
  else
    gather_kernel<Op, false><<<blocks, kThreads, 0, stream>>>(op, g, dst, src);
  return cudaGetLastError();
}

// Note [Copy widening]: a pure move whose destination-fast dim has stride 1 on both sides moves W-byte
// words instead of elements (W = 16, 8, 4 or 2 bytes, the widest that the dim's byte length, every other
// stride's byte length and both pointers allow): a (N, C, 2) float32 permute becomes a transpose of 8-byte
// words, a slice of rows a gather of 16-byte words.
int widen(CopyLayout* l, int elem, const char* dst, const char* src) {
  const int last = l->ndim - 1;
  if (last < 0 || l->dst_strides[last] != 1 || l->src_strides[last] != 1) return elem;
  int w = 16;
  for (; w > elem; w /= 2) {
    bool ok = aligned(dst, w) && aligned(src, w) && (l->sizes[last] * elem) % w == 0;
    for (int d = 0; ok && d < last; ++d)
      ok = (l->src_strides[d] * elem) % w == 0 && (l->dst_strides[d] * elem) % w == 0;
    if (ok) break;
  }
  if (w == elem) return elem;
  const int f = w / elem;
  CopyLayout wide;
  int m = 0;
  for (int d = 0; d <= last; ++d) {
    const int64_t size = d == last ? l->sizes[d] / f : l->sizes[d];
    if (size == 1) continue;
    wide.sizes[m] = size;
    wide.src_strides[m] = d == last ? 1 : l->src_strides[d] / f;
    wide.dst_strides[m] = d == last ? 1 : l->dst_strides[d] / f;
    ++m;
  }
  wide.ndim = m;
  wide.numel = l->numel / f;
  *l = wide;
  return w;
}

template <template <class> class OpT, class... Args>
cudaError_t by_size(int size, const CopyLayout& l, char* dst, const char* src, cudaStream_t stream, Args... args) {
  switch (size) {
    case 1: return run(OpT<uint8_t>{args...}, l, dst, src, stream);
    case 2: return run(OpT<uint16_t>{args...}, l, dst, src, stream);
    case 4: return run(OpT<uint32_t>{args...}, l, dst, src, stream);
    case 8: return run(OpT<uint64_t>{args...}, l, dst, src, stream);
    case 16: return run(OpT<Bytes16>{args...}, l, dst, src, stream);
    default: return cudaErrorInvalidValue;
  }
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
      if (ok_d && ok_s) {           // prev is exactly `size` steps of this dim: one dim
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

cudaError_t launch_strided_copy(const CopyLayout& layout, void* dst_v, int32_t dst_dtype, int dst_size,
                                const void* src_v, int32_t src_dtype, int src_size, cudaStream_t stream) {
  if (layout.numel == 0) return cudaSuccess;
  char* dst = static_cast<char*>(dst_v);
  const char* src = static_cast<const char*>(src_v);
  const bool dense = layout.ndim == 0 || (layout.ndim == 1 && layout.dst_strides[0] == 1 && layout.src_strides[0] == 1);
  if (dst_dtype == src_dtype) {
    if (dense) {
      return cudaMemcpyAsync(dst, src, static_cast<size_t>(layout.numel) * dst_size, cudaMemcpyDeviceToDevice, stream);
    }
    CopyLayout l = layout;
    const int w = widen(&l, dst_size, dst, src);
    return by_size<MoveOp>(w, l, dst, src, stream);
  }
  cudaError_t err = cudaSuccess;
  if (dense && launch_dense_convert(src_dtype, dst_dtype, layout.numel, dst, src, stream, &err)) return err;
  if (launch_transpose_convert(src_dtype, dst_dtype, layout, dst, src, stream, &err)) return err;
  if (src_dtype == dt::F32 && dst_dtype == dt::BF16) return run(PairOp<dt::F32, dt::BF16>{}, layout, dst, src, stream);
  if (src_dtype == dt::BF16 && dst_dtype == dt::F32) return run(PairOp<dt::BF16, dt::F32>{}, layout, dst, src, stream);
  if (src_dtype == dt::F32 && dst_dtype == dt::F16) return run(PairOp<dt::F32, dt::F16>{}, layout, dst, src, stream);
  if (src_dtype == dt::F16 && dst_dtype == dt::F32) return run(PairOp<dt::F16, dt::F32>{}, layout, dst, src, stream);
  return by_size<GenericOp>(dst_size, layout, dst, src, stream, src_dtype, dst_dtype, src_size);
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
    fill_kernel<uint32_t>
        <<<grid_for(n / 4), kThreads, 0, stream>>>(static_cast<uint32_t*>(dst), n / 4, static_cast<uint32_t>(rep.lo));
  } else if (size == 2 && addr % 2 == 0) {
    fill_kernel<uint16_t>
        <<<grid_for(n / 2), kThreads, 0, stream>>>(static_cast<uint16_t*>(dst), n / 2, static_cast<uint16_t>(rep.lo));
  } else {
    fill_bytes_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<unsigned char*>(dst), n, rep,
                                                            static_cast<int>(size));
  }
  return cudaGetLastError();
}

}  // namespace slimtensor_cuda

// dense_convert.cu: dtype conversions between two dense runs, one kernel per dtype pair (Note [Copy kernel
// choice]); its own translation unit, so that its 240 kernels compile beside the others.
#include "kernels/copy_kernels.h"
#include "kernels/element_ops.cuh"

namespace slimtensor_cuda {
namespace {
using namespace kernels;
constexpr int kThreads = 256;

unsigned blocks_of(int64_t items, int64_t per_block) {
  const int64_t b = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 0x7FFFFFFF ? 0x7FFFFFFF : b));
}

// Both sides one dense run, dtypes differ, both pointers aligned to their vectors: each thread converts one
// vector of V elements, 32 bytes on the wider side (two 16-byte accesses), 16 or fewer on the other. The
// n % V tail goes to the first threads of block 0, one element each. (More per thread does not help the
// pairs from 1-byte sources to 8/16-byte ones: at 16 elements per thread, 128-256 contiguous bytes each,
// a warp's 16-byte stores land 128-256 bytes apart and uint8 -> int64 fell from 0.57 to 0.13 of memcpy on
// the H200, session 5, bench/NOTES.md.)
template <int32_t S, int32_t D>
__host__ __device__ constexpr int dense_vec() {
  constexpr int w = itemsize(S) > itemsize(D) ? itemsize(S) : itemsize(D);
  return 32 / w > 16 ? 16 : 32 / w;
}
template <int32_t S, int32_t D>
__global__ void __launch_bounds__(kThreads) dense_convert_kernel(int64_t n, char* dst, const char* src) {
  using Op = PairOp<S, D>;
  constexpr int V = dense_vec<S, D>();
  using SV = Vec<typename Op::Src, V>;
  using DV = Vec<typename Op::Elem, V>;
  const int64_t nvec = n / V;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < nvec) {
    const SV in = reinterpret_cast<const SV*>(src)[i];
    DV out;
#pragma unroll
    for (int j = 0; j < V; ++j) out.v[j] = Op::convert(in.v[j]);
    reinterpret_cast<DV*>(dst)[i] = out;
  }
  const int64_t tail = nvec * V + i;
  if (blockIdx.x == 0 && tail < n) Op{}.write(dst, tail, Op{}.read(src, tail));
}

// Launches the dense conversion kernel of the pair; false (nothing launched) when a pointer is not aligned
// to the pair's vectors, or the pair is not a conversion.
template <int32_t S>
bool dense_from(int32_t d, int64_t n, char* dst, const char* src, cudaStream_t stream, cudaError_t* err) {
  auto go = [&](auto dtag) -> bool {
    constexpr int32_t D = decltype(dtag)::value;
    if constexpr (D == S) {
      return false;
    } else {
      constexpr int V = dense_vec<S, D>();
      constexpr size_t as =
          sizeof(Vec<typename PairOp<S, D>::Src, V>) < 16 ? sizeof(Vec<typename PairOp<S, D>::Src, V>) : 16;
      constexpr size_t ad =
          sizeof(Vec<typename PairOp<S, D>::Elem, V>) < 16 ? sizeof(Vec<typename PairOp<S, D>::Elem, V>) : 16;
      if (!aligned(src, as) || !aligned(dst, ad)) return false;
      dense_convert_kernel<S, D><<<blocks_of(n / V + 1, kThreads), kThreads, 0, stream>>>(n, dst, src);
      *err = cudaGetLastError();
      return true;
    }
  };
  return visit_dtype_code(d, go, false);
}

}  // namespace

bool launch_dense_convert(int32_t s, int32_t d, int64_t n, char* dst, const char* src, cudaStream_t stream,
                          cudaError_t* err) {
  return visit_dtype_code(
      s, [&](auto code) { return dense_from<decltype(code)::value>(d, n, dst, src, stream, err); }, false);
}

}  // namespace slimtensor_cuda

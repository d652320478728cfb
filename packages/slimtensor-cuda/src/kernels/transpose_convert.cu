// transpose_convert.cu: converting transposes, one vector-tile kernel per dtype pair (Note [Tiled
// transpose]: source vectors loaded and converted in registers, destination vectors stored); its own
// translation unit, so that its 240 kernels compile beside the others (Note [Compile time]).
#include "kernels/copy_kernels.h"
#include "kernels/tile_transpose.cuh"

namespace slimtensor_cuda {
namespace {
using namespace kernels;

// 64 x 64 tiles (destination elements in shared memory: at most 33 KiB), 32 x 32 when a side is 16-byte
// complex128; vectors of 16 bytes per side, fewer where the tile has too few elements for them.
template <int32_t S, int32_t D>
struct ConvertTile {
  static constexpr int T = itemsize(S) == 16 || itemsize(D) == 16 ? 32 : 64;
  static constexpr int kMaxV = T * T / kThreads;
  static constexpr int VS = 16 / itemsize(S) < kMaxV ? 16 / itemsize(S) : kMaxV;
  static constexpr int VD = 16 / itemsize(D) < kMaxV ? 16 / itemsize(D) : kMaxV;
};

template <int32_t S>
bool convert_from(int32_t d, const TransposeParams& p, char* dst, const char* src, cudaStream_t stream) {
  auto go = [&](auto dtag) -> bool {
    constexpr int32_t D = decltype(dtag)::value;
    if constexpr (D == S) {
      return false;
    } else {
      using Tile = ConvertTile<S, D>;
      if (!vector_tiles_fit(p, Tile::VS, Tile::VD, dst, src)) return false;
      launch_transpose<PairOp<S, D>, Tile::T, Tile::VS, Tile::VD, true>(p, dst, src, stream);
      return true;
    }
  };
  return visit_dtype_code(d, go, false);
}

}  // namespace

bool launch_transpose_convert(int32_t s, int32_t d, const CopyLayout& l, char* dst, const char* src,
                              cudaStream_t stream, cudaError_t* err) {
  TransposeParams p;
  if (!small_layout(l) || !plan_transpose(l, true, &p)) return false;
  const bool launched = visit_dtype_code(
      s, [&](auto code) { return convert_from<decltype(code)::value>(d, p, dst, src, stream); }, false);
  if (launched) *err = cudaGetLastError();
  return launched;
}

}  // namespace slimtensor_cuda

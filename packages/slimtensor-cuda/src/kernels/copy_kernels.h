// copy_kernels.h: host-side launchers of the device's copy and fill kernels (Note [Copy kernel choice]).
//
// Note [Copy kernel choice]
// copy_strided_v2 normalises the layout first (normalize_copy: size-1 dims dropped, dims ordered by the
// destination's strides, mergeable neighbours merged), then:
//   - same dtype, both sides one dense run          -> cudaMemcpyAsync (by the caller);
//   - both sides dense, different dtypes            -> a 1-D conversion kernel;
//   - the fastest-moving dims of src and dst differ -> a tiled transpose through shared memory: a tile
//     is read along the source's fast dim and written along the destination's, both coalesced; the
//     other dims are a batch (one offset computation per tile, not per element);
//   - otherwise                                     -> an N-d elementwise kernel (32-bit index math
//     when the element count allows it).
// Each kernel is templated on the element operation: a byte move of 1/2/4/8/16 bytes, the four hot
// float32 <-> bfloat16/float16 conversions, or the general conversion (convert.cuh) chosen per element.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace slimtensor_cuda {

inline constexpr int kMaxCopyDims = 32;

struct CopyLayout {
  int ndim = 0;  // after normalisation; 0 = one element
  int64_t sizes[kMaxCopyDims];
  int64_t dst_strides[kMaxCopyDims];  // elements
  int64_t src_strides[kMaxCopyDims];
  int64_t numel = 1;
};

// Normalises (Note [Copy kernel choice]); false with *error when a size, stride or their products are
// invalid or overflow, or more than kMaxCopyDims dims remain. numel 0 = nothing to copy.
bool normalize_copy(int ndim, const int64_t* sizes, const int64_t* dst_strides, const int64_t* src_strides,
                    CopyLayout* out, std::string* error);
// The largest element offset + 1 that the layout reaches on the src (dst) side; overflow-checked.
bool extent_elements(const CopyLayout& l, bool src_side, int64_t* out);

// Launches the copy on `stream` (the current device must be the destination's). 0 or a CUDA error.
cudaError_t launch_strided_copy(const CopyLayout& layout, void* dst, int32_t dst_dtype, int dst_size,
                                const void* src, int32_t src_dtype, int src_size, cudaStream_t stream);
// Fills nbytes at dst with the pattern (1..16 bytes, nbytes a multiple of it).
cudaError_t launch_fill(void* dst, uint64_t nbytes, const void* pattern, uint32_t pattern_size, cudaStream_t stream);

}  // namespace slimtensor_cuda

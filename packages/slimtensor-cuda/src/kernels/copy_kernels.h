// copy_kernels.h: host-side launchers of the device's copy and fill kernels (Note [Copy kernel choice]).
//
// Note [Copy kernel choice]
// copy_strided_v2 normalises the layout first (normalize_copy: size-1 dims dropped, dims ordered by the
// destination's strides, mergeable neighbours merged), then:
//   - same dtype, both sides one dense run          -> cudaMemcpyAsync;
//   - same dtype otherwise: widened first (Note [Copy widening]: a dim with stride 1 on both sides moves
//     as 2/4/8/16-byte words), then as below;
//   - both sides dense, different dtypes            -> one kernel per dtype pair (dense_convert.cu): 32
//     bytes per thread on the wider side, vector accesses on both (unaligned pointers: the strided path);
//   - the fastest-moving dims of src and dst differ -> a tiled transpose through shared memory (Note [Tiled
//     transpose]): 16-byte vectors on both global sides when strides and pointers allow, else one element
//     per access; the other dims are a batch (one decomposition per tile);
//   - otherwise                                     -> the gather kernel (Note [Gather kernel]).
// Index arithmetic is 32-bit with precomputed divisors (Note [Fast divmod]) whenever every offset is
// below 2^31, 64-bit otherwise. The element operation is a byte move of 1/2/4/8/16 bytes, one of the four
// hot float32 <-> bfloat16/float16 conversions (PairOp), or the general conversion (convert.cuh) chosen
// per element (GenericOp); Note [Compile time] says which kernels each gets.
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
cudaError_t launch_strided_copy(const CopyLayout& layout, void* dst, int32_t dst_dtype, int dst_size, const void* src,
                                int32_t src_dtype, int src_size, cudaStream_t stream);
// Both sides one dense run of n elements, dtypes s -> d differ (dense_convert.cu): launches the pair's
// vectorised kernel, *err its launch status; false (nothing launched) when a pointer is not aligned to the
// pair's vectors, so the caller takes the strided path.
bool launch_dense_convert(int32_t s, int32_t d, int64_t n, char* dst, const char* src, cudaStream_t stream,
                          cudaError_t* err);
// A transposed layout (Note [Tiled transpose]) on the 32-bit path whose strides and pointers allow vector
// tiles for the pair s -> d (transpose_convert.cu): launches the pair's converting tile kernel, *err its
// launch status; false (nothing launched) otherwise, so the caller takes the scalar tiles or the gather.
bool launch_transpose_convert(int32_t s, int32_t d, const CopyLayout& layout, char* dst, const char* src,
                              cudaStream_t stream, cudaError_t* err);
// Fills nbytes at dst with the pattern (1..16 bytes, nbytes a multiple of it).
cudaError_t launch_fill(void* dst, uint64_t nbytes, const void* pattern, uint32_t pattern_size, cudaStream_t stream);

}  // namespace slimtensor_cuda

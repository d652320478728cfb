// strided_copy.h: strided, dtype-converting copies and pattern fills on MPS: checks, the choice between a
// blit, the Metal kernel and the host conversion, and the kernels' parameter blocks.
//
// Note [MPS strided copies]
// A copy whose two dtypes Metal can hold runs the st_strided_copy kernel (Note [Metal conversion kernel]);
// a same-dtype copy of two dense sides is a blit. float64 and complex128 exist nowhere in Metal, so a
// copy involving them synchronises the stream and converts on the host through the core's own
// convert_strided over the buffers' shared contents (the same rules, bit for bit). Both sides are
// bounds-checked with their stride-aware extents (Note [Stride-aware sizes]) before anything is encoded.
#pragma once

#include <cstdint>

#include "metal_context.h"

namespace slimtensor_metal {

constexpr int kMaxCopyDims = 16;

// Mirrors StCopyParams of metal_kernels.metal (strides in bytes).
struct CopyParams {
  uint64_t numel;
  uint64_t src_offset;
  uint64_t dst_offset;
  int32_t ndim;
  int32_t src_dtype;
  int32_t dst_dtype;
  int32_t reserved;
  int64_t sizes[kMaxCopyDims];
  int64_t src_strides[kMaxCopyDims];
  int64_t dst_strides[kMaxCopyDims];
};
static_assert(sizeof(CopyParams) == 424, "CopyParams must match StCopyParams of metal_kernels.metal");

// Mirrors StFillParams of metal_kernels.metal.
struct FillParams {
  uint64_t nbytes;
  uint64_t offset;
  uint32_t pattern_size;
  uint32_t reserved;
  uint8_t pattern[16];
};
static_assert(sizeof(FillParams) == 40, "FillParams must match StFillParams of metal_kernels.metal");

// Requires the context's lock. The whole copy: checks, then a blit, the kernel or the host conversion.
int strided_copy_locked(MetalContext* ctx, Stream* s, const st_strided_copy_v2& d, int64_t* host_converts);
// Requires the lock; d already checked and both sides resolved. Encodes the st_strided_copy kernel.
int encode_strided_locked(MetalContext* ctx, Stream* s, const st_strided_copy_v2& d, const Resolved& src,
                          const Resolved& dst);
// Requires the lock. Encodes the st_fill kernel over dst (nbytes, a multiple of pattern_size).
int encode_fill_locked(MetalContext* ctx, Stream* s, const Resolved& dst, uint64_t nbytes, const uint8_t* pattern,
                       uint32_t pattern_size);
// The dispatch shape of the plugin's grid-stride kernels for `work` items.
void grid_for(uint64_t work, uint32_t max_threads, uint64_t grid[3], uint64_t group[3]);

}  // namespace slimtensor_metal

// strided_copy.cpp: strided dtype-converting copies and fills on MPS (Note [MPS strided copies]).
#include "strided_copy.h"

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstring>

#include "checked.h"
#include "dtypes.h"
#include "errors.h"
#include "layout.h"

namespace slimtensor_metal {
namespace {

constexpr uint64_t kMaxGridThreads = 1ull << 22;  // grid-stride loops cover the rest

bool is_dense(int32_t ndim, const int64_t* sizes, const int64_t* strides) {
  int64_t expected = 1;
  for (int32_t i = ndim - 1; i >= 0; --i) {
    if (sizes[i] != 1 && strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

}  // namespace

void grid_for(uint64_t work, uint32_t max_threads, uint64_t grid[3], uint64_t group[3]) {
  const uint64_t threads = std::max<uint64_t>(1, std::min(work, kMaxGridThreads));
  const uint64_t per_group = std::max<uint64_t>(1, std::min<uint64_t>({threads, max_threads ? max_threads : 1, 256}));
  grid[0] = threads;
  grid[1] = grid[2] = 1;
  group[0] = per_group;
  group[1] = group[2] = 1;
}

int encode_strided_locked(MetalContext* ctx, Stream* s, const st_strided_copy_v2& d, const Resolved& src,
                          const Resolved& dst) {
  const mtlb_api* api = ctx->api();
  CopyParams p;
  std::memset(&p, 0, sizeof p);
  uint64_t numel = 1;
  for (int32_t i = 0; i < d.ndim; ++i) numel *= static_cast<uint64_t>(d.sizes[i]);  // checked by the caller
  p.numel = numel;
  p.src_offset = src.offset;
  p.dst_offset = dst.offset;
  p.ndim = d.ndim;
  p.src_dtype = d.src_dtype;
  p.dst_dtype = d.dst_dtype;
  const int64_t si = dtype_itemsize(d.src_dtype), di = dtype_itemsize(d.dst_dtype);
  for (int32_t i = 0; i < d.ndim; ++i) {
    p.sizes[i] = d.sizes[i];
    // A size-1 dimension never moves (its stride may be anything); the others are bounded by the extent.
    p.src_strides[i] = d.sizes[i] == 1 ? 0 : d.src_strides[i] * si;
    p.dst_strides[i] = d.sizes[i] == 1 ? 0 : d.dst_strides[i] * di;
  }
  void* pso;
  uint32_t max_threads;
  if (ctx->own_pipeline_locked("st_strided_copy", &pso, &max_threads)) return 1;
  void* enc;
  if (s->compute_encoder(&enc)) return 1;
  api->set_pipeline(enc, pso);
  api->set_buffer(enc, src.buffer, 0, 0);  // offsets travel in the parameters: no alignment demands
  api->set_buffer(enc, dst.buffer, 0, 1);
  api->set_bytes(enc, &p, sizeof p, 2);
  uint64_t grid[3], group[3];
  grid_for(numel, max_threads, grid, group);
  api->dispatch_threads(enc, grid, group);
  return 0;
}

int encode_fill_locked(MetalContext* ctx, Stream* s, const Resolved& dst, uint64_t nbytes, const uint8_t* pattern,
                       uint32_t pattern_size) {
  const mtlb_api* api = ctx->api();
  FillParams p;
  std::memset(&p, 0, sizeof p);
  p.nbytes = nbytes;
  p.offset = dst.offset;
  p.pattern_size = pattern_size;
  std::memcpy(p.pattern, pattern, pattern_size);
  void* pso;
  uint32_t max_threads;
  if (ctx->own_pipeline_locked("st_fill", &pso, &max_threads)) return 1;
  void* enc;
  if (s->compute_encoder(&enc)) return 1;
  api->set_pipeline(enc, pso);
  api->set_buffer(enc, dst.buffer, 0, 0);
  api->set_bytes(enc, &p, sizeof p, 1);
  uint64_t grid[3], group[3];
  grid_for(nbytes, max_threads, grid, group);
  api->dispatch_threads(enc, grid, group);
  return 0;
}

int strided_copy_locked(MetalContext* ctx, Stream* s, const st_strided_copy_v2& d, int64_t* host_converts) {
  const char* fn = "copy_strided_v2()";
  if (d.struct_size < offsetof(st_strided_copy_v2, src_strides) + sizeof(void*))
    return fail(
        "%s: the descriptor's struct_size %u is smaller than ABI 1.1's; the core and the plugin disagree: "
        "pip install -U slimtensor-core slimtensor-metal",
        fn, d.struct_size);
  if (d.ndim < 0 || d.ndim > kMaxCopyDims)
    return fail("%s: needs 0 <= ndim <= %d but got %d; the core merges dimensions, so this is a core bug", fn,
                kMaxCopyDims, d.ndim);
  const int64_t si = dtype_itemsize(d.src_dtype), di = dtype_itemsize(d.dst_dtype);
  if (si == 0 || di == 0)
    return fail(
        "%s: no MPS copy between dtype codes %d and %d (float8 and quantized types are not supported on "
        "MPS); copy through the CPU",
        fn, d.src_dtype, d.dst_dtype);
  uint64_t numel, src_bytes, dst_bytes;
  if (!numel_of(fn, d.ndim, d.sizes, &numel)) return 1;
  if (numel == 0) return 0;
  if (!extent_bytes(fn, d.ndim, d.sizes, d.src_strides, si, &src_bytes) ||
      !extent_bytes(fn, d.ndim, d.sizes, d.dst_strides, di, &dst_bytes))
    return 1;
  Resolved src, dst;
  if (ctx->resolve_locked("copy_strided_v2() source", d.src, src_bytes, &src) ||
      ctx->resolve_locked("copy_strided_v2() destination", d.dst, dst_bytes, &dst))
    return 1;

  if (dtype_needs_host_convert(d.src_dtype) || dtype_needs_host_convert(d.dst_dtype)) {
    const st_core_table* core = ctx->core();
    if (!core || core->struct_size < ST_CORE_TABLE_SIZE_1_1 || !core->convert_strided)
      return fail(
          "%s: converting dtype %d to %d on MPS needs the core's convert_strided (ABI 1.1) because Metal "
          "has no 64-bit floats; upgrade the core: pip install -U slimtensor-core",
          fn, d.src_dtype, d.dst_dtype);
    if (s->synchronize()) return 1;  // the GPU must be done with both buffers before the host touches them
    st_strided_copy_v2 h = d;
    h.struct_size = sizeof h;  // we write this descriptor: our size, not the core's (c/device_plugin.h)
    h.src = {src.host, 0, 0, 0};
    h.dst = {dst.host, 0, 0, 0};
    if (core->convert_strided(&h) != 0)
      return fail("%s: the host conversion from dtype %d to %d failed: %s", fn, d.src_dtype, d.dst_dtype,
                  core->core_last_error ? core->core_last_error() : "no reason given");
    (*host_converts)++;
    return 0;
  }
  if (d.src_dtype == d.dst_dtype && is_dense(d.ndim, d.sizes, d.src_strides) &&
      is_dense(d.ndim, d.sizes, d.dst_strides)) {
    uint64_t nbytes;
    if (!mul_u64(numel, static_cast<uint64_t>(si), &nbytes)) return fail("%s: the copy's byte count overflows", fn);
    return ctx->encode_byte_copy_locked(s, src, dst, nbytes);
  }
  return encode_strided_locked(ctx, s, d, src, dst);
}

}  // namespace slimtensor_metal

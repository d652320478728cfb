// copy/copy.cpp: copy_ planning: broadcast, overlap, dim ordering and merging, and the choice of path.
#include "slimtensor/copy/copy.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "copy/copy_kernels.h"
#include "copy/copy_paths.h"
#include "copy/copy_plan.h"
#include "layout/layout.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/clone.h"
#include "slimtensor/runtime/events.h"

namespace slimtensor {
namespace {

constexpr int64_t kDirectCopyBytes = 1 << 16;  // dense same-dtype copies up to this size skip the planner

std::string shape_of(const int64_t* sizes, int n) {
  std::ostringstream out;
  out << "(";
  for (int i = 0; i < n; ++i) out << (i ? ", " : "") << sizes[i];
  out << (n == 1 ? ",)" : ")");
  return out.str();
}

// src's strides broadcast to dst's shape (0 where src repeats); throws when the shapes do not broadcast.
std::vector<int64_t> broadcast_strides(const Tensor& dst, const Tensor& src) {
  const int n = dst.ndim(), m = src.ndim();
  ST_CHECK(m <= n, Runtime, "copy_(): the source of shape ", shape_of(src.sizes(), m),
           " cannot be broadcast to the destination shape ", shape_of(dst.sizes(), n), " (the source has more dims)");
  std::vector<int64_t> out(static_cast<size_t>(n), 0);
  for (int i = 0; i < m; ++i) {
    const int d = n - m + i;
    const int64_t s = src.sizes()[i];
    if (s == dst.sizes()[d]) {
      out[d] = src.strides()[i];
    } else {
      ST_CHECK(s == 1, Runtime, "copy_(): the source of shape ", shape_of(src.sizes(), m),
               " cannot be broadcast to the destination shape ", shape_of(dst.sizes(), n), " (dim ", d, ": ", s, " vs ",
               dst.sizes()[d], ")");
    }
  }
  return out;
}

CpuCopyPlan plan_cpu_copy(const Tensor& dst, const int64_t* src_strides, const Tensor& src) {
  CpuCopyPlan p;
  plan_copy_dims(dst.ndim(), dst.sizes(), dst.strides(), dst.itemsize(), src_strides, src.itemsize(), p);
  p.dst = static_cast<char*>(dst.data_ptr());
  p.src = static_cast<const char*>(src.data_ptr());
  p.dst_type = dst.dtype();
  p.src_type = src.dtype();
  return p;
}

void trace_copy(const Tensor& dst, const Tensor& src) noexcept {
  events::emit(EventKind::Copy, [&](Event& e) {
    e.storage_id = dst.storage_impl()->id();
    e.src_storage_id = src.storage_impl()->id();
    e.bytes = dst.nbytes();
    e.device = dst.device();
    e.src_device = src.device();
    e.dtype = static_cast<int8_t>(dst.dtype());
    e.src_dtype = static_cast<int8_t>(src.dtype());
    e.op = "copy_";
  });
}

// Byte offset of element 0 from the start of the storage. Overlap is decided on these, never on
// addresses: device memory may be an opaque handle (Note [Device memory handles] in c/device_plugin.h).
int64_t byte_offset(const Tensor& t) noexcept { return t.storage_offset() * t.itemsize(); }  // fits: invariants

bool ranges_intersect(const Tensor& a, const Tensor& b, const int64_t* b_strides) {
  if (a.storage_impl() != b.storage_impl()) return false;
  const int64_t a0 = byte_offset(a), b0 = byte_offset(b);
  const int64_t a1 = a0 + span_bytes(a.sizes(), a.strides(), a.ndim(), a.itemsize());
  const int64_t b1 = b0 + span_bytes(a.sizes(), b_strides, a.ndim(), b.itemsize());
  return a0 < b1 && b0 < a1;
}

}  // namespace

void copy_cpu(const Tensor& dst, const Tensor& src, const std::vector<int64_t>& src_strides) {
  run_cpu_copy(plan_cpu_copy(dst, src_strides.data(), src));
}

bool has_internal_overlap(const Tensor& t) {
  return internal_overlap(t.sizes(), t.strides(), t.ndim()) == Overlap::Yes;
}

void copy_(const Tensor& dst, const Tensor& src, bool non_blocking) {
  ST_CHECK(dst.defined() && src.defined(), Runtime, "copy_(): both tensors must be defined");
  ST_CHECK(!dst.is_read_only(), Runtime,
           "copy_(): the destination is read-only (it borrows memory its owner "
           "marked read-only, e.g. a read-only numpy array); write into a copy instead: t = t.clone()");
  ST_CHECK(dst.dtype() == src.dtype() || (info(dst.dtype()).convertible && info(src.dtype()).convertible), Runtime,
           "copy_(): conversion from ", name(src.dtype()), " to ", name(dst.dtype()),
           " is not supported (float8/float4 types can only be "
           "moved between tensors of the same dtype); view them as uint8 to move their bytes");
  // Small dense copies between distinct CPU storages (the common case of tiny tensors): one memcpy, no
  // planning. Large ones take the planned path, which splits across threads and streams past the cache.
  const int64_t bytes = dst.nbytes();
  if (bytes <= kDirectCopyBytes && dst.dtype() == src.dtype() && dst.dtype() != ScalarType::Bool &&
      dst.is_contiguous() && src.is_contiguous() && dst.storage_impl() != src.storage_impl() && dst.device().is_cpu() &&
      src.device().is_cpu() && dst.ndim() == src.ndim() &&
      std::equal(dst.sizes(), dst.sizes() + dst.ndim(), src.sizes())) {
    if (events::tracing_active()) trace_copy(dst, src);
    if (bytes > 0) std::memcpy(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(bytes));
    return;
  }
  std::vector<int64_t> src_strides = broadcast_strides(dst, src);
  if (dst.numel() == 0) return;
  ST_CHECK(internal_overlap(dst.sizes(), dst.strides(), dst.ndim()) != Overlap::Yes, Runtime,
           "copy_(): more than one element of the destination refers to a single memory location (as after "
           "expand()); call .clone() on the destination first");
  Tensor source = src;
  if (ranges_intersect(dst, src, src_strides.data())) {
    const bool same_elements = byte_offset(dst) == byte_offset(src) && dst.itemsize() == src.itemsize() &&
                               std::equal(src_strides.begin(), src_strides.end(), dst.strides());
    if (same_elements && dst.dtype() == src.dtype()) return;  // copying a tensor onto itself
    // Same elements, another dtype of the same size (a.copy_(a.view(int32))): on the CPU each element is
    // read before it is written, in place, so the conversion is exact. A plugin is never asked to convert
    // in place: the source is cloned below.
    if (same_elements && dst.device().is_cpu()) {
      if (events::tracing_active()) trace_copy(dst, src);
      copy_cpu(dst, src, src_strides);
      return;
    }
    const bool both_dense = is_non_overlapping_and_dense(dst.sizes(), dst.strides(), dst.ndim()) &&
                            is_non_overlapping_and_dense(src.sizes(), src.strides(), src.ndim());
    ST_CHECK(same_elements || !(both_dense && byte_offset(dst) == byte_offset(src) && dst.numel() == src.numel()),
             Runtime,
             "copy_(): the source is the destination's own memory in another layout (as in m.copy_(m.T)): the "
             "same elements in another order, so elements would be overwritten before they are read; copy "
             "from a clone: dst.copy_(src.clone())");
    ST_CHECK(same_elements || !both_dense, Runtime,
             "copy_(): the source and the destination partially overlap in memory; "
             "copy from a clone: dst.copy_(src.clone())");
    // Interleaved views of one storage (t[::2] and t[1::2]) may share a byte range without sharing an
    // element; going through a temporary keeps the result exact either way.
    source = clone(src, MemoryFormat::Contiguous);
    src_strides = broadcast_strides(dst, source);
  }
  if (events::tracing_active()) trace_copy(dst, source);
  if (dst.device().is_cpu() && source.device().is_cpu()) {
    copy_cpu(dst, source, src_strides);
  } else {
    copy_device(dst, source, src_strides, non_blocking);
  }
}

}  // namespace slimtensor

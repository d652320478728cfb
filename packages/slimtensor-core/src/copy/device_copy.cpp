// copy/device_copy.cpp: copies to, from and within plugin devices, staged through the host where needed.
//
// Note [Device copy paths]
// Device memory is named by memory_ref() (handle + byte offset), never by address (Note [Device memory
// handles] in c/device_plugin.h). Every call runs on the current stream of the device (ST_STREAM_CURRENT):
//   1. dense, same dtype, same layout: one contiguous copy (from host, to host, or on the device);
//   2. both sides on one device type and the plugin copies strided layouts: one strided copy, dims planned
//      by plan_copy_dims (ordered, size-1 dims dropped, merged; element strides);
//   3. otherwise staged: the bytes each device side spans are downloaded, converted on the CPU by the
//      core's own kernels (Note [Conversion rules]), and dst's span uploaded: slower, but exact.
// Only path 1 passes ST_COPY_NON_BLOCKING, and only when asked: staging buffers are freed on return.
// A copy between two indices of one type (paths 1 and 2) runs on dst's current stream, which first waits
// for src's current stream (the work that produced src), and src's stream then waits for the copy (so
// later writes to src, or its stream-ordered free, cannot overtake the read); torch orders peer copies so.
#include <vector>

#include "copy/copy_paths.h"
#include "copy/copy_plan.h"
#include "layout/layout.h"
#include "runtime/device_calls.h"
#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/runtime/streams.h"

namespace slimtensor {
namespace {

constexpr const char* kFn = "copy_()";

const DeviceEntry& entry_of(Device d) { return usable_device(d, kFn); }

uint64_t span_of(const Tensor& t) {
  return static_cast<uint64_t>(span_bytes(t.sizes(), t.strides(), t.ndim(), t.itemsize()));
}

// A CPU tensor with t's layout (offset 0) over a fresh buffer of the bytes t spans.
Tensor host_buffer_like(const Tensor& t) {
  return Tensor::make(Storage::adopt(StorageImpl::allocate(kCPUDevice, static_cast<int64_t>(span_of(t)), kFn)),
                      IntList(t.sizes(), t.ndim()), IntList(t.strides(), t.ndim()), 0, t.dtype(), "copy_");
}

// A CPU tensor with t's values and layout: t itself on the CPU, else a download of the bytes it spans.
Tensor host_copy_of_span(const Tensor& t) {
  if (t.device().is_cpu()) return t;
  Tensor host = host_buffer_like(t);
  if (const uint64_t span = span_of(t)) {
    device_calls::copy_to_host(entry_of(t.device()), host.data_ptr(), t.memory_ref(), span, ST_STREAM_CURRENT, 0, kFn);
  }
  return host;
}

bool strided_on_device(const Tensor& dst, const Tensor& src, const std::vector<int64_t>& src_strides) {
  const Device dd = dst.device(), sd = src.device();
  if (dd.is_cpu() || dd.type != sd.type) return false;
  const DeviceEntry& e = entry_of(dd);
  if (!device_calls::can_copy_strided(e, dd.index, sd.index)) return false;
  CpuCopyPlan plan;  // only its dims: element strides (units of 1)
  plan_copy_dims(dst.ndim(), dst.sizes(), dst.strides(), 1, src_strides.data(), 1, plan);
  st_strided_copy_v2 desc{};
  desc.struct_size = sizeof(st_strided_copy_v2);
  desc.ndim = plan.ndim;
  desc.sizes = plan.sizes;
  desc.dst = dst.memory_ref();
  desc.dst_strides = plan.dst_strides;
  desc.dst_dtype = static_cast<int32_t>(dst.dtype());
  desc.src_dtype = static_cast<int32_t>(src.dtype());
  desc.src = src.memory_ref();
  desc.src_strides = plan.src_strides;
  device_calls::copy_strided(e, desc, ST_STREAM_CURRENT, kFn);
  return true;
}

}  // namespace

namespace {

// Note [Device copy paths]: the copy `run` on dst's stream, ordered both ways with src's for a peer copy.
template <typename Run>
void on_dst_stream(const Tensor& dst, const Tensor& src, Run&& run) {
  const Device dd = dst.device(), sd = src.device();
  if (dd.is_cpu() || sd.is_cpu() || dd == sd) {
    run();
    return;
  }
  void* dst_stream = streams::current(dd);
  void* src_stream = streams::current(sd);
  streams::order_after(dd, dst_stream, sd, src_stream);
  run();
  streams::order_after(sd, src_stream, dd, dst_stream);
}

}  // namespace

void copy_device(const Tensor& dst, const Tensor& src, const std::vector<int64_t>& src_strides, bool non_blocking) {
  const Device dd = dst.device(), sd = src.device();
  const uint32_t flags = non_blocking ? ST_COPY_NON_BLOCKING : 0u;
  const bool same_layout_dense =
      dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() && src.numel() == dst.numel();
  const uint64_t bytes = static_cast<uint64_t>(dst.nbytes());
  if (same_layout_dense) {
    if (sd.is_cpu()) {
      device_calls::copy_from_host(entry_of(dd), dst.memory_ref(), src.data_ptr(), bytes, ST_STREAM_CURRENT, flags,
                                   kFn);
      return;
    }
    if (dd.is_cpu()) {
      device_calls::copy_to_host(entry_of(sd), dst.data_ptr(), src.memory_ref(), bytes, ST_STREAM_CURRENT, flags, kFn);
      return;
    }
    if (dd.type == sd.type) {
      on_dst_stream(dst, src, [&] {
        device_calls::copy_on_device(entry_of(dd), dst.memory_ref(), src.memory_ref(), bytes, ST_STREAM_CURRENT, kFn);
      });
      return;
    }
  }
  bool done = false;
  if (!dd.is_cpu() && dd.type == sd.type && device_calls::can_copy_strided(entry_of(dd), dd.index, sd.index)) {
    on_dst_stream(dst, src, [&] { done = strided_on_device(dst, src, src_strides); });
  }
  if (done) return;
  // Note [Device copy paths], 3: stage through the host.
  const Tensor host_src = host_copy_of_span(src);
  Tensor host_dst = dd.is_cpu()           ? dst
                    : dst.is_contiguous() ? host_buffer_like(dst)    // every spanned byte is written
                                          : host_copy_of_span(dst);  // keeps the bytes between elements
  copy_cpu(host_dst, host_src, src_strides);
  if (!dd.is_cpu()) {
    device_calls::copy_from_host(entry_of(dd), dst.memory_ref(), host_dst.data_ptr(), span_of(dst), ST_STREAM_CURRENT,
                                 0, kFn);
  }
}

}  // namespace slimtensor

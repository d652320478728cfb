// copy/device_copy.cpp: copies to, from and within plugin devices, staged through the host where needed.
#include <vector>

#include "copy/copy_paths.h"
#include "layout/layout.h"
#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"

namespace slimtensor {
namespace {

const st_device_table& table_of(Device d) { return *usable_device(d, "copy_()").table; }

void check_plugin(int rc, Device d, const char* what) {
  if (rc == 0) return;
  const st_device_table& t = table_of(d);
  fail(ErrorKind::Runtime, "copy_(): ", what, " on ", device_string(d), " failed: ", t.last_error(t.ctx));
}

// A CPU tensor with t's values and layout: t itself on the CPU, else a download of the bytes it spans.
Tensor host_copy_of_span(const Tensor& t) {
  if (t.device().is_cpu()) return t;
  const int64_t span = span_bytes(t.sizes(), t.strides(), t.ndim(), t.itemsize());
  Tensor host = Tensor::make(Storage::adopt(StorageImpl::allocate(kCPUDevice, span)), IntList(t.sizes(), t.ndim()),
                             IntList(t.strides(), t.ndim()), 0, t.dtype(), "copy_");
  if (span > 0) {
    const st_device_table& tb = table_of(t.device());
    check_plugin(tb.copy_device_to_host(tb.ctx, t.device().index, host.data_ptr(), t.data_ptr(), span), t.device(),
                 "download");
  }
  return host;
}

}  // namespace

// dst or src (or both) live on a plugin device.
void copy_device(const Tensor& dst, const Tensor& src, const std::vector<int64_t>& src_strides) {
  const Device dd = dst.device(), sd = src.device();
  const bool same_layout_dense = dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
                                 src.numel() == dst.numel();
  const int64_t bytes = dst.nbytes();
  if (same_layout_dense) {
    if (sd.is_cpu()) {
      const st_device_table& t = table_of(dd);
      check_plugin(t.copy_host_to_device(t.ctx, dd.index, dst.data_ptr(), src.data_ptr(), bytes), dd, "upload");
      return;
    }
    if (dd.is_cpu()) {
      const st_device_table& t = table_of(sd);
      check_plugin(t.copy_device_to_host(t.ctx, sd.index, dst.data_ptr(), src.data_ptr(), bytes), sd, "download");
      return;
    }
    if (dd.type == sd.type) {
      const st_device_table& t = table_of(dd);
      check_plugin(t.copy_device_to_device(t.ctx, dd.index, dst.data_ptr(), sd.index, src.data_ptr(), bytes), dd,
                   "device copy");
      return;
    }
  }
  if (dd == sd && !dd.is_cpu()) {
    const st_device_table& t = table_of(dd);
    if (t.copy_strided) {
      st_strided_copy_desc desc{dst.ndim(), dst.sizes(), dst.data_ptr(), dst.strides(), static_cast<int32_t>(dst.dtype()),
                                src.data_ptr(), src_strides.data(), static_cast<int32_t>(src.dtype())};
      check_plugin(t.copy_strided(t.ctx, dd.index, &desc), dd, "strided copy");
      return;
    }
  }
  // General case: stage through the host. Download the bytes each side spans, copy on the CPU, upload dst.
  const Tensor host_src = host_copy_of_span(src);
  const bool dst_dense = dst.is_contiguous();
  Tensor host_dst = dd.is_cpu() ? dst
                    : dst_dense ? Tensor::make(Storage::adopt(StorageImpl::allocate(kCPUDevice, bytes)),
                                               IntList(dst.sizes(), dst.ndim()), IntList(dst.strides(), dst.ndim()),
                                               0, dst.dtype(), "copy_")
                                : host_copy_of_span(dst);
  copy_cpu(host_dst, host_src, src_strides);
  if (!dd.is_cpu()) {
    const int64_t span = span_bytes(dst.sizes(), dst.strides(), dst.ndim(), dst.itemsize());
    const st_device_table& t = table_of(dd);
    check_plugin(t.copy_host_to_device(t.ctx, dd.index, dst.data_ptr(), host_dst.data_ptr(), span), dd, "upload");
  }
}

}  // namespace slimtensor

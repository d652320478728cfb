// src/aoti/copies.cpp: clone, clone_preserve_strides, copy_, tensor_copy_, assign_tensors(_out), zero_.
#include <cstring>

#include "aoti/handle.h"
#include "layout/layout.h"
#include "slimtensor/copy/clone.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/copy/fill.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

// Note [copy_ fast path]
// Same dtype, same sizes, both dense row-major on the CPU, destination writable, and the two byte ranges
// either disjoint or identical: a memcpy is exactly what copy_ would do. Everything else goes to the core,
// which also reports the errors (partial overlap, read-only, shapes that do not broadcast).
bool try_fast_copy(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() != src.dtype() || dst.ndim() != src.ndim() || !dst.is_contiguous() || !src.is_contiguous()) {
    return false;
  }
  if (!dst.device().is_cpu() || !src.device().is_cpu() || dst.is_read_only()) return false;
  if (std::memcmp(dst.sizes(), src.sizes(), sizeof(int64_t) * dst.ndim()) != 0) return false;
  char* d = static_cast<char*>(dst.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  int64_t n = dst.nbytes();
  if (n == 0 || d == s) return true;
  if (d + n <= s || s + n <= d) {
    std::memcpy(d, s, static_cast<size_t>(n));
    return true;
  }
  return false;
}

AOTITorchError copy_impl(const char* fn, AtenTensorHandle self, AtenTensorHandle src, bool non_blocking = false) {
  return guarded(fn, [&] {
    const Tensor& d = tensor_arg(self, fn, "self");
    const Tensor& s = tensor_arg(src, fn, "src");
    if (!try_fast_copy(d, s)) copy_(d, s, non_blocking);
  });
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret) {
  const char* fn = "aoti_torch_clone";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(self, fn, "self");
    out_arg(ret, fn, "ret");
    *ret = make_handle(clone(t, MemoryFormat::Preserve), fn);
  });
}

// Inductor's clone_preserve_strides: copy the whole strided extent (gaps included) into a new buffer and
// view it with the same sizes and strides, so even overlapping (expanded) layouts keep their strides.
AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret) {
  const char* fn = "aoti_torch_clone_preserve_strides";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(self, fn, "self");
    out_arg(ret, fn, "ret");
    int64_t extent = span_bytes(t.sizes(), t.strides(), t.ndim(), t.itemsize()) / t.itemsize();
    int64_t one = 1;
    Tensor buffer = empty(IntList(&extent, 1), t.dtype(), t.device());
    if (extent > 0) copy_(buffer, as_strided(t, IntList(&extent, 1), IntList(&one, 1), t.storage_offset()));
    *ret = make_handle(as_strided(buffer, IntList(t.sizes(), t.ndim()), IntList(t.strides(), t.ndim()), 0), fn);
  });
}

AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking) {
  return copy_impl("aoti_torch_copy_", self, src, non_blocking != 0);
}

AOTITorchError aoti_torch_tensor_copy_(AtenTensorHandle src, AtenTensorHandle dst) {
  return copy_impl("aoti_torch_tensor_copy_", dst, src);
}

AOTITorchError aoti_torch_assign_tensors(AtenTensorHandle src, AtenTensorHandle dst) {
  const char* fn = "aoti_torch_assign_tensors";
  return guarded(fn, [&] {
    const Tensor& s = tensor_arg(src, fn, "src", false);
    AtenTensorOpaque* d = check_handle(dst, fn, "dst");
    if (src != dst) d->tensor = s;
  });
}

AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret_dst) {
  const char* fn = "aoti_torch_assign_tensors_out";
  return guarded(fn, [&] {
    const Tensor& s = tensor_arg(src, fn, "src", false);
    out_arg(ret_dst, fn, "ret_dst");
    *ret_dst = make_handle(Tensor(s), fn);
  });
}

AOTITorchError aoti_torch_zero_(AtenTensorHandle self) {
  const char* fn = "aoti_torch_zero_";
  return guarded(fn, [&] { fill_(tensor_arg(self, fn, "self"), Scalar::from_int(0)); });
}

}  // extern "C"

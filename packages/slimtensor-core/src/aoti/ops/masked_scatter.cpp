// src/aoti/ops/masked_scatter.cpp: the fallback aoti_torch_cpu_masked_scatter (mask's true places take source's
// elements in order).
#include <algorithm>
#include <cstring>
#include <vector>

#include "aoti/ops/op_args.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

// The broadcast shape of a and b; an Error(Value) naming fn when they do not broadcast.
std::vector<int64_t> broadcast_shape(const Tensor& a, const Tensor& b, const char* fn) {
  const int n = std::max(a.ndim(), b.ndim());
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int ia = i - (n - a.ndim()), ib = i - (n - b.ndim());
    const int64_t sa = ia >= 0 ? a.sizes()[ia] : 1, sb = ib >= 0 ? b.sizes()[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      fail(ErrorKind::Value, fn, "(): self and mask do not broadcast: size ", sa, " against ", sb, " at dim ", i);
    }
    out[static_cast<size_t>(i)] = sa == 1 ? sb : sa;
  }
  return out;
}

}  // namespace

extern "C" {

// As torch's masked_scatter: the result (contiguous, the broadcast shape of self and mask) is self where
// mask is false; its elements where mask is true, in row-major order, are source's first elements in
// row-major order. mask is bool; source has self's dtype and at least as many elements as mask has trues.
AOTITorchError aoti_torch_cpu_masked_scatter(AtenTensorHandle self, AtenTensorHandle mask, AtenTensorHandle source,
                                             AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_masked_scatter";
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    const Tensor& m = cpu_arg(mask, fn, "mask");
    const Tensor& src = cpu_arg(source, fn, "source");
    out_arg(ret0, fn, "ret0");
    if (m.dtype() != ScalarType::Bool) {
      fail(ErrorKind::Type, fn, "(): mask must be bool but is ", name(m.dtype()), "; compare it (mask != 0) first");
    }
    check_same_dtype(s, src, fn, "self", "source");
    std::vector<int64_t> shape = broadcast_shape(s, m, fn);
    Tensor out = empty(shape, s.dtype(), kCPUDevice, fn);
    copy_(out, expand(s, shape));
    Tensor mc = empty(shape, ScalarType::Bool, kCPUDevice, fn);
    copy_(mc, expand(m, shape));
    Tensor sc = empty(IntList(src.sizes(), src.ndim()), src.dtype(), kCPUDevice, fn);
    copy_(sc, src);
    const bool* mp = static_cast<const bool*>(mc.data_ptr());
    int64_t trues = 0;
    for (int64_t i = 0; i < mc.numel(); ++i) trues += mp[i] ? 1 : 0;
    if (trues > sc.numel()) {
      fail(ErrorKind::Value, fn, "(): mask has ", trues, " true elements but source only ", sc.numel(),
           "; source needs at least one element per true element of mask");
    }
    const size_t item = static_cast<size_t>(out.itemsize());
    char* op = static_cast<char*>(out.data_ptr());
    const char* sp = static_cast<const char*>(sc.data_ptr());
    for (int64_t i = 0, k = 0; i < mc.numel(); ++i) {
      if (mp[i]) std::memcpy(op + i * item, sp + (k++) * item, item);
    }
    *ret0 = make_handle(std::move(out), fn);
  });
}

}  // extern "C"

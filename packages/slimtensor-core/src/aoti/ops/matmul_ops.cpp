// src/aoti/ops/matmul_ops.cpp: the matrix-product fallbacks aoti_torch_cpu_{addmm,mm,bmm,baddbmm}_out.
#include <cstring>

#include "aoti/ops/gemm.h"
#include "aoti/ops/op_args.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/clone.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/layout/views.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

// out = beta * self (broadcast to out) + alpha * (a @ b), for one 2-D slice.
void addmm_into(const Tensor& out, const Tensor* self, const Tensor& a, const Tensor& b, double beta, double alpha,
                const char* fn) {
  if (self && beta != 0) {
    // self may be out itself (the generated code passes the same buffer): then there is nothing to copy.
    bool same = self->storage_impl() == out.storage_impl() && self->storage_offset() == out.storage_offset() &&
                self->dtype() == out.dtype() && self->ndim() == out.ndim() &&
                std::memcmp(self->sizes(), out.sizes(), sizeof(int64_t) * out.ndim()) == 0 &&
                std::memcmp(self->strides(), out.strides(), sizeof(int64_t) * out.ndim()) == 0;
    if (!same) {
      // self over out's own memory in another layout (a transposed view, say) is read in full first.
      if (memory_overlaps(*self, out)) {
        copy_(out, clone(*self, MemoryFormat::Contiguous));
      } else {
        copy_(out, *self);
      }
    }
    gemm(out, a, b, alpha, beta, fn);
  } else {
    gemm(out, a, b, alpha, 0.0, fn);
  }
}

void check_batched(const Tensor& out, const Tensor& a, const Tensor& b, const char* fn) {
  check_ndim(a, 3, fn, "self");
  check_ndim(b, 3, fn, "mat2");
  check_ndim(out, 3, fn, "out");
  if (a.sizes()[0] != b.sizes()[0] || out.sizes()[0] != a.sizes()[0]) {
    fail(ErrorKind::Value, fn, "(): batch sizes differ: self ", a.sizes()[0], ", mat2 ", b.sizes()[0], ", out ",
         out.sizes()[0]);
  }
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,
                                        AtenTensorHandle mat2, double beta, double alpha) {
  const char* fn = "aoti_torch_cpu_addmm_out";
  return guarded(fn, [&] {
    const Tensor& o = cpu_arg(out, fn, "out");
    const Tensor& s = cpu_arg(self, fn, "self");
    const Tensor& a = cpu_arg(mat1, fn, "mat1");
    const Tensor& b = cpu_arg(mat2, fn, "mat2");
    check_ndim(a, 2, fn, "mat1");
    check_ndim(b, 2, fn, "mat2");
    check_ndim(o, 2, fn, "out");
    if (s.ndim() > 2) fail(ErrorKind::Value, fn, "(): self must broadcast to a matrix but is ", s.ndim(), "-D");
    addmm_into(o, &s, a, b, beta, alpha, fn);
  });
}

AOTITorchError aoti_torch_cpu_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  const char* fn = "aoti_torch_cpu_mm_out";
  return guarded(fn, [&] {
    const Tensor& o = cpu_arg(out, fn, "out");
    const Tensor& a = cpu_arg(self, fn, "self");
    const Tensor& b = cpu_arg(mat2, fn, "mat2");
    check_ndim(a, 2, fn, "self");
    check_ndim(b, 2, fn, "mat2");
    check_ndim(o, 2, fn, "out");
    addmm_into(o, nullptr, a, b, 0.0, 1.0, fn);
  });
}

AOTITorchError aoti_torch_cpu_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  const char* fn = "aoti_torch_cpu_bmm_out";
  return guarded(fn, [&] {
    const Tensor& o = cpu_arg(out, fn, "out");
    const Tensor& a = cpu_arg(self, fn, "self");
    const Tensor& b = cpu_arg(mat2, fn, "mat2");
    check_batched(o, a, b, fn);
    for (int64_t i = 0; i < a.sizes()[0]; ++i) {
      addmm_into(select(o, 0, i), nullptr, select(a, 0, i), select(b, 0, i), 0.0, 1.0, fn);
    }
  });
}

AOTITorchError aoti_torch_cpu_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle batch1,
                                          AtenTensorHandle batch2, double beta, double alpha) {
  const char* fn = "aoti_torch_cpu_baddbmm_out";
  return guarded(fn, [&] {
    const Tensor& o = cpu_arg(out, fn, "out");
    const Tensor& s = cpu_arg(self, fn, "self");
    const Tensor& a = cpu_arg(batch1, fn, "batch1");
    const Tensor& b = cpu_arg(batch2, fn, "batch2");
    check_batched(o, a, b, fn);
    if (beta != 0) copy_(o, s);  // broadcasts self to out's shape
    for (int64_t i = 0; i < a.sizes()[0]; ++i) {
      gemm(select(o, 0, i), select(a, 0, i), select(b, 0, i), alpha, beta, fn);
    }
  });
}

}  // extern "C"

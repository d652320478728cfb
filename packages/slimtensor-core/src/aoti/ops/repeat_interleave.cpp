// src/aoti/ops/repeat_interleave.cpp: the fallback aoti_torch_cpu_repeat_interleave_Tensor (index i repeated repeats[i]
// times).
#include <vector>

#include "aoti/ops/op_args.h"
#include "slimtensor/base/checked_math.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

extern "C" {

// As torch's CPU repeat_interleave(repeats): repeats is a 1-D int32 or int64 tensor of non-negative counts;
// the result has repeats' dtype and sum(repeats) elements (output_size, when given, must equal it).
AOTITorchError aoti_torch_cpu_repeat_interleave_Tensor(AtenTensorHandle repeats, int64_t* output_size,
                                                       AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_repeat_interleave_Tensor";
  return guarded(fn, [&] {
    const Tensor& r = cpu_arg(repeats, fn, "repeats");
    out_arg(ret0, fn, "ret0");
    if (r.ndim() != 1) fail(ErrorKind::Value, fn, "(): repeats must be a 1-D tensor but is ", r.ndim(), "-D");
    if (r.dtype() != ScalarType::Int32 && r.dtype() != ScalarType::Int64) {
      fail(ErrorKind::Type, fn, "(): repeats must be int32 or int64 but is ", name(r.dtype()));
    }
    Tensor c = empty(IntList(r.sizes(), 1), ScalarType::Int64, kCPUDevice, fn);
    copy_(c, r);
    const int64_t* rp = static_cast<const int64_t*>(c.data_ptr());
    int64_t total = 0;
    for (int64_t i = 0; i < c.numel(); ++i) {
      if (rp[i] < 0) fail(ErrorKind::Value, fn, "(): repeats can not be negative but repeats[", i, "] = ", rp[i]);
      if (add_overflows(total, rp[i], &total)) fail(ErrorKind::Value, fn, "(): the sum of repeats overflows int64");
    }
    if (output_size && *output_size != total) {
      fail(ErrorKind::Value, fn, "(): output_size is ", *output_size, " but the repeats sum to ", total,
           "; pass their sum or no output_size");
    }
    std::vector<int64_t> sizes = {total};
    Tensor out = empty(sizes, r.dtype(), kCPUDevice, fn);
    int64_t k = 0;
    for (int64_t i = 0; i < c.numel(); ++i) {
      for (int64_t j = 0; j < rp[i]; ++j, ++k) {
        if (r.dtype() == ScalarType::Int32) {
          static_cast<int32_t*>(out.data_ptr())[k] = static_cast<int32_t>(i);
        } else {
          static_cast<int64_t*>(out.data_ptr())[k] = i;
        }
      }
    }
    *ret0 = make_handle(std::move(out), fn);
  });
}

}  // extern "C"

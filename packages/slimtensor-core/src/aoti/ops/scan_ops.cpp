// src/aoti/ops/scan_ops.cpp: the scan fallbacks aoti_torch_cpu_cumsum and aoti_torch_cpu_cumprod.
//
// Note [Scan accumulation]
// As torch's CPU kernels (cpu_cum_base_kernel): self is first converted to the result dtype (`dtype`,
// else int64 for integers and bool, else self's dtype); each row then accumulates in
// at::acc_type<result, /*is_cuda=*/false>, i.e. float64 for float32 and float64, float32 for float16 and
// bfloat16, int64 for the integers, and every partial result is converted (rounded) to the result dtype.
// Integer overflow wraps (two's complement, as torch's int64 arithmetic does in practice); a bool result
// is "any" for cumsum and "all" for cumprod, which is what torch's bool accumulator gives. The result is
// contiguous (torch's meta function gives it no strides).
#include <cstring>

#include "aoti/ops/dtype_dispatch.h"
#include "aoti/ops/op_args.h"
#include "aoti/ops/rows.h"
#include "runtime/parallel.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

enum class Scan { Sum, Prod };

ScalarType accumulation_type(ScalarType result) {
  if (result == ScalarType::Float32 || result == ScalarType::Float64) return ScalarType::Float64;
  if (result == ScalarType::Float16 || result == ScalarType::BFloat16) return ScalarType::Float32;
  return ScalarType::Int64;
}

template <typename T>
void scan_rows(T* data, int64_t rows, int64_t n, Scan op) {
  parallel_for(rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, n)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* row = data + r * n;
      if constexpr (std::is_same_v<T, int64_t>) {
        uint64_t acc = op == Scan::Sum ? 0 : 1;  // unsigned: wraps without undefined behaviour
        for (int64_t i = 0; i < n; ++i) {
          acc = op == Scan::Sum ? acc + static_cast<uint64_t>(row[i]) : acc * static_cast<uint64_t>(row[i]);
          row[i] = static_cast<int64_t>(acc);
        }
      } else {
        T acc = op == Scan::Sum ? T(0) : T(1);
        for (int64_t i = 0; i < n; ++i) {
          acc = op == Scan::Sum ? acc + row[i] : acc * row[i];
          row[i] = acc;
        }
      }
    }
  });
}

AOTITorchError scan(const char* fn, Scan op, AtenTensorHandle self, int64_t dim, int32_t* dtype,
                    AtenTensorHandle* ret0) {
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    out_arg(ret0, fn, "ret0");
    check_real_op_dtype(s.dtype(), true, fn, "self");
    const ScalarType result = dtype                          ? dtype_arg(*dtype, fn)
                              : is_integral(s.dtype(), true) ? ScalarType::Int64
                                                             : s.dtype();
    check_real_op_dtype(result, true, fn, "dtype");
    const int64_t d = wrap_dim(dim, std::max(s.ndim(), 1), fn);
    Tensor src = s;
    if (result != s.dtype()) {
      src = empty_like(s, result, kCPUDevice);
      copy_(src, s);
    }
    const ScalarType acc = accumulation_type(result);
    Tensor rows = rows_of(src, d, acc);
    const int64_t n = row_length(rows), count = row_count(rows);
    if (count > 0) {
      if (acc == ScalarType::Float64) scan_rows(static_cast<double*>(rows.data_ptr()), count, n, op);
      if (acc == ScalarType::Float32) scan_rows(static_cast<float*>(rows.data_ptr()), count, n, op);
      if (acc == ScalarType::Int64) scan_rows(static_cast<int64_t*>(rows.data_ptr()), count, n, op);
    }
    Tensor out = empty(IntList(s.sizes(), s.ndim()), result, kCPUDevice, fn);
    store_rows(out, d, rows);
    *ret0 = make_handle(std::move(out), fn);
  });
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype, AtenTensorHandle* ret0) {
  return scan("aoti_torch_cpu_cumsum", Scan::Sum, self, dim, dtype, ret0);
}

AOTITorchError aoti_torch_cpu_cumprod(AtenTensorHandle self, int64_t dim, int32_t* dtype, AtenTensorHandle* ret0) {
  return scan("aoti_torch_cpu_cumprod", Scan::Prod, self, dim, dtype, ret0);
}

}  // extern "C"

// src/aoti/ops/nonzero.cpp: the fallbacks aoti_torch_cpu_nonzero and aoti_torch_cpu_nonzero_static (indices of the
// non-zero elements).
//
// Note [nonzero layout]
// Indices are listed in row-major order of self's elements. An element is non-zero as torch decides it:
// numerically (-0.0 is zero, NaN is not; complex: either part non-zero). nonzero returns (N, ndim) int64 in
// torch's CPU layout, the transpose of a contiguous (ndim, N), i.e. strides (1, N); nonzero_static returns
// a contiguous (size, ndim), the first min(N, size) indices followed by rows of fill_value.
#include <cstring>
#include <vector>

#include "aoti/ops/op_args.h"
#include "copy/half_bits.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

// Whether element i of contiguous data of dtype t is non-zero.
template <typename T>
bool nz(const void* p, int64_t i) {
  return static_cast<const T*>(p)[i] != T(0);
}

bool (*nonzero_test(ScalarType t, const char* fn))(const void*, int64_t) {
  switch (t) {
    case ScalarType::Bool:
    case ScalarType::UInt8:
    case ScalarType::Int8: return nz<uint8_t>;
    case ScalarType::Int16: return nz<uint16_t>;
    case ScalarType::Int32: return nz<uint32_t>;
    case ScalarType::Int64: return nz<uint64_t>;
    case ScalarType::Float16:
    case ScalarType::BFloat16:  // zero exactly when every bit but the sign is clear
      return [](const void* p, int64_t i) { return (static_cast<const uint16_t*>(p)[i] & 0x7FFFu) != 0; };
    case ScalarType::Float32: return nz<float>;
    case ScalarType::Float64: return nz<double>;
    case ScalarType::Complex64:
      return [](const void* p, int64_t i) {
        const float* f = static_cast<const float*>(p);
        return f[2 * i] != 0.0f || f[2 * i + 1] != 0.0f;
      };
    case ScalarType::Complex128:
      return [](const void* p, int64_t i) {
        const double* f = static_cast<const double*>(p);
        return f[2 * i] != 0.0 || f[2 * i + 1] != 0.0;
      };
    default:
      fail(ErrorKind::Type, fn, "(): self has dtype ", name(t),
           " but nonzero takes bool, uint8, int8..int64, float16, bfloat16, float32, float64, complex64 or complex128 "
           "(as torch's CPU kernel); convert it first");
  }
}

// Row-major multi-indices of the non-zero elements of s, ndim per entry, at most `limit` entries.
std::vector<int64_t> nonzero_indices(const Tensor& s, int64_t limit, const char* fn) {
  auto test = nonzero_test(s.dtype(), fn);
  Tensor c = empty(IntList(s.sizes(), s.ndim()), s.dtype(), kCPUDevice, fn);
  copy_(c, s);
  const int nd = s.ndim();
  std::vector<int64_t> out, idx(static_cast<size_t>(nd), 0);
  const void* p = c.data_ptr();
  for (int64_t i = 0, n = s.numel(); i < n && static_cast<int64_t>(out.size()) / std::max(nd, 1) < limit; ++i) {
    if (test(p, i)) {
      out.insert(out.end(), idx.begin(), idx.end());
      if (nd == 0) out.push_back(0);  // a 0-d tensor: one entry of no coordinates (counted by a placeholder)
    }
    for (int d = nd - 1; d >= 0; --d) {  // next row-major multi-index
      if (++idx[d] < s.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu_nonzero(AtenTensorHandle self, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_nonzero";
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    out_arg(ret0, fn, "ret0");
    std::vector<int64_t> idx = nonzero_indices(s, INT64_MAX, fn);
    const int64_t nd = s.ndim();
    const int64_t n = nd == 0 ? static_cast<int64_t>(idx.size()) : static_cast<int64_t>(idx.size()) / nd;
    std::vector<int64_t> t_sizes = {nd, n};
    Tensor t = empty(t_sizes, ScalarType::Int64, kCPUDevice, fn);  // (ndim, N) contiguous, returned transposed
    int64_t* tp = static_cast<int64_t*>(t.data_ptr());
    for (int64_t j = 0; j < n && nd > 0; ++j) {
      for (int64_t d = 0; d < nd; ++d) tp[d * n + j] = idx[static_cast<size_t>(j * nd + d)];
    }
    *ret0 = make_handle(transpose(t, 0, 1), fn);
  });
}

AOTITorchError aoti_torch_cpu_nonzero_static(AtenTensorHandle self, int64_t size, int64_t fill_value,
                                             AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_nonzero_static";
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    out_arg(ret0, fn, "ret0");
    if (size < 0) fail(ErrorKind::Value, fn, "(): size must be >= 0 but is ", size);
    std::vector<int64_t> idx = nonzero_indices(s, size, fn);
    const int64_t nd = s.ndim();
    std::vector<int64_t> sizes = {size, nd};
    Tensor out = empty(sizes, ScalarType::Int64, kCPUDevice, fn);
    int64_t* op = static_cast<int64_t*>(out.data_ptr());
    const int64_t have = nd == 0 ? 0 : static_cast<int64_t>(idx.size());
    for (int64_t i = 0; i < out.numel(); ++i) op[i] = i < have ? idx[static_cast<size_t>(i)] : fill_value;
    *ret0 = make_handle(std::move(out), fn);
  });
}

}  // extern "C"

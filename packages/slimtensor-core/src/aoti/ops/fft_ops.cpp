// src/aoti/ops/fft_ops.cpp: the FFT fallbacks aoti_torch_cpu__fft_r2c and aoti_torch_cpu__fft_c2c, on pocketfft.
//
// Note [FFT fallbacks]
// The transforms are pocketfft's (third_party/pocketfft, the header-only C++ library NumPy and SciPy build on,
// vendored at a pinned commit with its BSD licence; compiled without its thread pool). What torch's ATen adds
// around its FFT library is reproduced here:
//  - dtypes: r2c takes float32/float64 (complex64/complex128 result), c2c complex64/complex128; torch's CPU
//    kernels take no other (float16 and bfloat16 are refused there too);
//  - normalization (at::native::fft_norm_mode): 0 none, 1 1/sqrt(n), 2 1/n, n the product of the transformed
//    dims' sizes (of the real input, for r2c); `forward` picks the sign of c2c's exponent (inverse unscaled);
//  - r2c with onesided = false fills the other half from conjugate symmetry, X[-k] = conj(X[k]) over all
//    transformed dims;
//  - the result's layout is torch's (_exec_fft in ATen's mkl/SpectralOps.cpp and torch's meta function, which
//    the compiled model was built against: its later kernels index this output with those strides): the
//    transformed dims sorted by self's strides, largest first (r2c keeps its last dim last), the untransformed
//    ("batch") dims first in stride order, and the output dense in that permuted order;
//  - c2c over no dims is a clone.
// Results equal torch's to floating-point rounding, not bit for bit: torch's x86 wheels use MKL, whose
// summation order differs. Inputs of any non-negative strides (expanded ones too) are read in place.
#define POCKETFFT_NO_MULTITHREADING
#define POCKETFFT_CACHE_SIZE 16
#include <algorithm>
#include <cmath>
#include <complex>
#include <numeric>
#include <vector>

#include "aoti/ops/op_args.h"
#include "pocketfft_hdronly.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/clone.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

std::vector<int64_t> fft_dims(const Tensor& s, const int64_t* dim, int64_t dim_len, const char* fn) {
  if (dim_len < 0 || (dim_len > 0 && dim == nullptr)) {
    fail(ErrorKind::Value, fn, "(): dim must be a list of dims (a pointer and a length >= 0)");
  }
  std::vector<int64_t> dims;
  std::vector<bool> seen(static_cast<size_t>(s.ndim()), false);
  for (int64_t i = 0; i < dim_len; ++i) {
    const int64_t d = wrap_dim(dim[i], s.ndim(), fn);
    if (seen[static_cast<size_t>(d)]) fail(ErrorKind::Value, fn, "(): dim ", d, " appears more than once");
    seen[static_cast<size_t>(d)] = true;
    dims.push_back(d);
  }
  return dims;
}

// The strides torch gives the output of a transform over `dims` (in the order given) of `self`, for output
// sizes `out_sizes` (Note [FFT fallbacks]).
std::vector<int64_t> torch_fft_strides(const Tensor& self, const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& out_sizes) {
  const int64_t nd = self.ndim();
  std::vector<bool> transformed(static_cast<size_t>(nd), false);
  for (int64_t d : dims) transformed[static_cast<size_t>(d)] = true;
  std::vector<int64_t> batch;
  for (int64_t d = 0; d < nd; ++d) {
    if (!transformed[static_cast<size_t>(d)]) batch.push_back(d);
  }
  std::stable_sort(batch.begin(), batch.end(),
                   [&](int64_t a, int64_t b) { return self.strides()[a] > self.strides()[b]; });
  std::vector<int64_t> strides(static_cast<size_t>(nd), 0);
  int64_t step = 1;  // the signal dims: dense, the last given dim innermost
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    strides[static_cast<size_t>(*it)] = step;
    step *= std::max<int64_t>(out_sizes[static_cast<size_t>(*it)], 1);
  }
  // torch's batch stride is the contiguous (batch, signal...) buffer's dim-0 stride: the signal's numel
  int64_t batch_numel = step;
  for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
    strides[static_cast<size_t>(*it)] = batch_numel;
    batch_numel *= out_sizes[static_cast<size_t>(*it)];
  }
  return strides;
}

std::vector<int64_t> sorted_by_stride(const Tensor& self, std::vector<int64_t> dims, bool keep_last) {
  auto end = keep_last && !dims.empty() ? dims.end() - 1 : dims.end();
  std::stable_sort(dims.begin(), end, [&](int64_t a, int64_t b) { return self.strides()[a] > self.strides()[b]; });
  return dims;
}

double norm_factor(int64_t normalization, const Tensor& self, const std::vector<int64_t>& dims, const char* fn) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(self.sizes()[d]);
  switch (normalization) {
    case 0: return 1.0;
    case 1: return 1.0 / std::sqrt(n);
    case 2: return 1.0 / n;
    default:
      fail(ErrorKind::Value, fn, "(): normalization must be 0 (none), 1 (1/sqrt(n)) or 2 (1/n) but is ", normalization);
  }
}

pocketfft::shape_t shape_of(const std::vector<int64_t>& sizes) { return {sizes.begin(), sizes.end()}; }

pocketfft::stride_t byte_strides(const Tensor& t) {
  pocketfft::stride_t out;
  for (int64_t d = 0; d < t.ndim(); ++d) out.push_back(static_cast<ptrdiff_t>(t.strides()[d] * t.itemsize()));
  return out;
}

void check_signal(const Tensor& s, const std::vector<int64_t>& dims, const char* fn) {
  for (int64_t d : dims) {
    if (s.sizes()[d] < 1) {
      fail(ErrorKind::Value, fn, "(): invalid number of data points (", s.sizes()[d], ") specified for dim ", d,
           "; each transformed dim needs at least one element");
    }
  }
}

// X[i] = conj(X[-i mod n]) for the elements of out past the onesided half of `last` (n = full size).
template <typename T>
void fill_conjugate_half(const Tensor& out, const std::vector<int64_t>& dims, int64_t last) {
  const int64_t nd = out.ndim(), n_last = out.sizes()[last], half = n_last / 2 + 1;
  if (half >= n_last || out.numel() == 0) return;
  std::vector<bool> transformed(static_cast<size_t>(nd), false);
  for (int64_t d : dims) transformed[static_cast<size_t>(d)] = true;
  auto* base = static_cast<std::complex<T>*>(out.data_ptr());
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  idx[static_cast<size_t>(last)] = half;
  while (true) {
    int64_t dst = 0, src = 0;
    for (int64_t d = 0; d < nd; ++d) {
      const int64_t i = idx[static_cast<size_t>(d)], n = out.sizes()[d];
      dst += i * out.strides()[d];
      src += (transformed[static_cast<size_t>(d)] ? (n - i) % n : i) * out.strides()[d];
    }
    base[dst] = std::conj(base[src]);
    int64_t d = nd - 1;  // next index, the last dim running from half to n_last
    for (; d >= 0; --d) {
      int64_t& i = idx[static_cast<size_t>(d)];
      if (++i < out.sizes()[d]) break;
      i = d == last ? half : 0;
    }
    if (d < 0) return;
  }
}

template <typename T>
void run_r2c(const Tensor& s, const Tensor& out, const std::vector<int64_t>& dims, bool forward, double fct) {
  std::vector<int64_t> in_sizes(s.sizes(), s.sizes() + s.ndim());
  pocketfft::shape_t axes(dims.begin(), dims.end());
  pocketfft::r2c(shape_of(in_sizes), byte_strides(s), byte_strides(out), axes, forward,
                 static_cast<const T*>(s.data_ptr()), static_cast<std::complex<T>*>(out.data_ptr()),
                 static_cast<T>(fct));
}

template <typename T>
void run_c2c(const Tensor& s, const Tensor& out, const std::vector<int64_t>& dims, bool forward, double fct) {
  std::vector<int64_t> sizes(s.sizes(), s.sizes() + s.ndim());
  pocketfft::shape_t axes(dims.begin(), dims.end());
  pocketfft::c2c(shape_of(sizes), byte_strides(s), byte_strides(out), axes, forward,
                 static_cast<const std::complex<T>*>(s.data_ptr()), static_cast<std::complex<T>*>(out.data_ptr()),
                 static_cast<T>(fct));
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu__fft_r2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_,
                                       int64_t normalization, int32_t onesided, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu__fft_r2c";
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    out_arg(ret0, fn, "ret0");
    if (s.dtype() != ScalarType::Float32 && s.dtype() != ScalarType::Float64) {
      fail(ErrorKind::Type, fn, "(): self has dtype ", name(s.dtype()),
           " but the real-to-complex FFT takes float32 or float64 (as torch's CPU FFT); convert it first");
    }
    std::vector<int64_t> dims = fft_dims(s, dim, dim_len_, fn);
    if (dims.empty()) fail(ErrorKind::Value, fn, "(): dim must name at least one dim to transform");
    check_signal(s, dims, fn);
    const double fct = norm_factor(normalization, s, dims, fn);
    const int64_t last = dims.back();
    std::vector<int64_t> out_sizes(s.sizes(), s.sizes() + s.ndim());
    if (onesided) out_sizes[static_cast<size_t>(last)] = s.sizes()[last] / 2 + 1;
    dims = sorted_by_stride(s, dims, /*keep_last=*/true);
    const ScalarType ct = s.dtype() == ScalarType::Float32 ? ScalarType::Complex64 : ScalarType::Complex128;
    Tensor out = empty_strided(out_sizes, torch_fft_strides(s, dims, out_sizes), ct, kCPUDevice, fn);
    if (out.numel() > 0) {
      // pocketfft writes the onesided half; a two-sided result gets the rest from conjugate symmetry
      std::vector<int64_t> half_sizes = out_sizes;
      half_sizes[static_cast<size_t>(last)] = s.sizes()[last] / 2 + 1;
      Tensor half = as_strided(out, half_sizes, IntList(out.strides(), out.ndim()), out.storage_offset());
      if (s.dtype() == ScalarType::Float32) {
        run_r2c<float>(s, half, dims, true, fct);
        if (!onesided) fill_conjugate_half<float>(out, dims, last);
      } else {
        run_r2c<double>(s, half, dims, true, fct);
        if (!onesided) fill_conjugate_half<double>(out, dims, last);
      }
    }
    *ret0 = make_handle(std::move(out), fn);
  });
}

AOTITorchError aoti_torch_cpu__fft_c2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_,
                                       int64_t normalization, int32_t forward, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu__fft_c2c";
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    out_arg(ret0, fn, "ret0");
    if (s.dtype() != ScalarType::Complex64 && s.dtype() != ScalarType::Complex128) {
      fail(ErrorKind::Type, fn, "(): self has dtype ", name(s.dtype()),
           " but the complex-to-complex FFT takes complex64 or complex128 (as torch's CPU FFT); convert it first");
    }
    std::vector<int64_t> dims = fft_dims(s, dim, dim_len_, fn);
    if (dims.empty()) {
      *ret0 = make_handle(clone(s, MemoryFormat::Preserve), fn);
      return;
    }
    check_signal(s, dims, fn);
    const double fct = norm_factor(normalization, s, dims, fn);
    std::vector<int64_t> sizes(s.sizes(), s.sizes() + s.ndim());
    dims = sorted_by_stride(s, dims, /*keep_last=*/false);
    Tensor out = empty_strided(sizes, torch_fft_strides(s, dims, sizes), s.dtype(), kCPUDevice, fn);
    if (out.numel() > 0) {
      if (s.dtype() == ScalarType::Complex64) {
        run_c2c<float>(s, out, dims, forward != 0, fct);
      } else {
        run_c2c<double>(s, out, dims, forward != 0, fct);
      }
    }
    *ret0 = make_handle(std::move(out), fn);
  });
}

}  // extern "C"

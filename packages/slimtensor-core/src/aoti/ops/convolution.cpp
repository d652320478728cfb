// src/aoti/ops/convolution.cpp: aoti_torch_cpu_convolution: 1-D/2-D/3-D, stride, padding, dilation, groups, transposed
// (oneDNN primitives, else im2col + BLAS).
//
// Note [Convolution layout]
// The result has the input's dtype and torch's memory format: channels-last when the input is
// channels-last (what torch's meta function, and so the compiled model, expects), else contiguous.
// float32, bfloat16 and float16 run through oneDNN (conv_onednn.cpp, Note [oneDNN convolution plans])
// when it is loaded and has a primitive for the case. The other cases (float64 and integers, empty
// tensors, no oneDNN) take the im2col path: contiguous NC(D)HW buffers in float32 (float16, bfloat16) or
// float64 (float64 and integer inputs; exact for integers below 2^53), every spatial rank padded to 3-D
// with size-1 leading dims.
#include <climits>
#include <cstring>
#include <vector>

#include "aoti/ops/blas.h"
#include "aoti/ops/conv_onednn.h"
#include "aoti/ops/onednn.h"
#include "aoti/ops/op_args.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

// A per-dimension parameter list: length 1 (same for every dim) or nd.
void read_param(const int64_t* p, int64_t len, int nd, int64_t lo, const char* what, const char* fn, int64_t def,
                int64_t* dst /* 3, right-aligned */) {
  if (len < 0 || (len > 0 && !p)) fail(ErrorKind::Value, fn, "(): ", what, " is NULL with length ", len);
  if (len != 0 && len != 1 && len != nd) {
    fail(ErrorKind::Value, fn, "(): ", what, " must have 1 or ", nd, " values but has ", len);
  }
  for (int d = 0; d < nd; ++d) {
    int64_t v = len == 0 ? def : p[len == 1 ? 0 : d];
    if (v < lo) fail(ErrorKind::Value, fn, "(): ", what, "[", d, "] must be >= ", lo, " but is ", v);
    if (v > (int64_t{1} << 31)) fail(ErrorKind::Value, fn, "(): ", what, "[", d, "] = ", v, " is too large");
    dst[3 - nd + d] = v;
  }
}

template <typename T>
void raw_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
              int64_t ldc, T beta, const char* fn) {
  for (int64_t v : {m, n, k, lda, ldb, ldc}) {
    if (v > INT_MAX)
      fail(ErrorKind::NotImplemented, fn, "(): a GEMM dimension ", v, " exceeds the BLAS's 32-bit limit");
  }
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : c[i * ldc + j] * beta;
    return;
  }
  int oa = ta ? blas::kTrans : blas::kNoTrans, ob = tb ? blas::kTrans : blas::kNoTrans;
  if constexpr (sizeof(T) == 4) {  // Note [GEMM on oneDNN] in gemm.cpp
    if (onednn::sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc, fn)) return;
  }
  const blas::Api& api = blas::api(fn);
  if constexpr (sizeof(T) == 4) {
    api.sgemm(blas::kRowMajor, oa, ob, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb), beta, c, int(ldc));
  } else {
    api.dgemm(blas::kRowMajor, oa, ob, int(m), int(n), int(k), 1.0, a, int(lda), b, int(ldb), beta, c, int(ldc));
  }
}

template <typename T>
void conv_forward(const ConvGeometry& g, const T* x, const T* w, T* y, const char* fn) {
  const int64_t cg = g.c / g.groups, ocg = g.oc / g.groups, K = g.k_len(), L = g.out_len(), Lin = g.in_len();
  std::vector<T> col(static_cast<size_t>(cg * K * L));
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      T* cp = col.data();
      for (int64_t c = 0; c < cg; ++c) {
        const T* xc = x + (n * g.c + gr * cg + c) * Lin;
        for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
          for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
            for (int64_t k2 = 0; k2 < g.k[2]; ++k2)
              for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
                int64_t i0 = o0 * g.stride[0] - g.pad[0] + k0 * g.dil[0];
                for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
                  int64_t i1 = o1 * g.stride[1] - g.pad[1] + k1 * g.dil[1];
                  bool row_ok = i0 >= 0 && i0 < g.in[0] && i1 >= 0 && i1 < g.in[1];
                  for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
                    int64_t i2 = o2 * g.stride[2] - g.pad[2] + k2 * g.dil[2];
                    *cp++ = row_ok && i2 >= 0 && i2 < g.in[2] ? xc[(i0 * g.in[1] + i1) * g.in[2] + i2] : T(0);
                  }
                }
              }
      }
      const T* wg = w + gr * ocg * cg * K;
      T* yg = y + (n * g.oc + gr * ocg) * L;
      raw_gemm<T>(false, false, ocg, L, cg * K, wg, cg * K, col.data(), L, yg, L, T(0), fn);
    }
  }
}

template <typename T>
void conv_transposed(const ConvGeometry& g, const T* x, const T* w, T* y, const char* fn) {
  // weight (C, OC/groups, k...); y = col2im(W_g^T @ x_g)
  const int64_t cg = g.c / g.groups, ocg = g.oc / g.groups, K = g.k_len(), L = g.out_len(), Lin = g.in_len();
  std::vector<T> col(static_cast<size_t>(ocg * K * Lin));
  std::memset(y, 0, sizeof(T) * static_cast<size_t>(g.n * g.oc * L));
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      const T* wg = w + gr * cg * ocg * K;
      const T* xg = x + (n * g.c + gr * cg) * Lin;
      raw_gemm<T>(true, false, ocg * K, Lin, cg, wg, ocg * K, xg, Lin, col.data(), Lin, T(0), fn);
      const T* cp = col.data();
      for (int64_t oc = 0; oc < ocg; ++oc) {
        T* yc = y + (n * g.oc + gr * ocg + oc) * L;
        for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
          for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
            for (int64_t k2 = 0; k2 < g.k[2]; ++k2)
              for (int64_t i0 = 0; i0 < g.in[0]; ++i0) {
                int64_t o0 = i0 * g.stride[0] - g.pad[0] + k0 * g.dil[0];
                for (int64_t i1 = 0; i1 < g.in[1]; ++i1) {
                  int64_t o1 = i1 * g.stride[1] - g.pad[1] + k1 * g.dil[1];
                  bool row_ok = o0 >= 0 && o0 < g.out[0] && o1 >= 0 && o1 < g.out[1];
                  for (int64_t i2 = 0; i2 < g.in[2]; ++i2, ++cp) {
                    int64_t o2 = i2 * g.stride[2] - g.pad[2] + k2 * g.dil[2];
                    if (row_ok && o2 >= 0 && o2 < g.out[2]) yc[(o0 * g.out[1] + o1) * g.out[2] + o2] += *cp;
                  }
                }
              }
      }
    }
  }
}

template <typename T>
void add_bias(const ConvGeometry& g, const T* b, T* y) {
  const int64_t L = g.out_len();
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oc = 0; oc < g.oc; ++oc) {
      T* yc = y + (n * g.oc + oc) * L;
      for (int64_t l = 0; l < L; ++l) yc[l] += b[oc];
    }
}

Tensor contiguous_in(const Tensor& t, ScalarType dt) {
  if (t.dtype() == dt && t.is_contiguous()) return t;
  Tensor out = empty(IntList(t.sizes(), t.ndim()), dt, kCPUDevice);
  copy_(out, t);
  return out;
}

// The im2col path on contiguous buffers of the compute dtype T.
template <typename T>
void im2col_convolution(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor& y,
                        const char* fn) {
  const T* xp = static_cast<const T*>(x.data_ptr());
  const T* wp = static_cast<const T*>(w.data_ptr());
  T* yp = static_cast<T*>(const_cast<void*>(static_cast<const void*>(y.data_ptr())));
  if (g.transposed)
    conv_transposed<T>(g, xp, wp, yp, fn);
  else
    conv_forward<T>(g, xp, wp, yp, fn);
  if (b) add_bias<T>(g, static_cast<const T*>(b->data_ptr()), yp);
}

// torch's suggest_memory_format: channels-last when the tensor is laid out that way and not plain contiguous.
bool channels_last(const Tensor& t) {
  if (t.ndim() == 4) return !t.is_contiguous() && t.is_contiguous(MemoryFormat::ChannelsLast);
  if (t.ndim() == 5) return !t.is_contiguous() && t.is_contiguous(MemoryFormat::ChannelsLast3d);
  return false;
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu_convolution(AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,
                                          const int64_t* stride, int64_t stride_len_, const int64_t* padding,
                                          int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
                                          int32_t transposed, const int64_t* output_padding,
                                          int64_t output_padding_len_, int64_t groups, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_convolution";
  return guarded(fn, [&] {
    const Tensor& x = cpu_arg(input, fn, "input");
    const Tensor& w = cpu_arg(weight, fn, "weight");
    const Tensor* b = bias && *bias ? &cpu_arg(*bias, fn, "bias") : nullptr;
    out_arg(ret0, fn, "ret0");
    int nd = x.ndim() - 2;
    if (nd < 1 || nd > 3) {
      fail(ErrorKind::Value, fn, "(): input must be 3-D, 4-D or 5-D (batch, channels, 1-3 spatial dims) but is ",
           x.ndim(), "-D");
    }
    check_ndim(w, x.ndim(), fn, "weight");
    check_same_dtype(x, w, fn, "input", "weight");
    if (b) {
      check_same_dtype(x, *b, fn, "input", "bias");
      check_ndim(*b, 1, fn, "bias");
    }
    if (groups < 1) fail(ErrorKind::Value, fn, "(): groups must be >= 1 but is ", groups);
    ConvGeometry g;
    g.nd = nd;
    g.transposed = transposed != 0;
    g.groups = groups;
    g.n = x.sizes()[0];
    g.c = x.sizes()[1];
    for (int d = 0; d < nd; ++d) {
      g.in[3 - nd + d] = x.sizes()[2 + d];
      g.k[3 - nd + d] = w.sizes()[2 + d];
    }
    read_param(stride, stride_len_, nd, 1, "stride", fn, 1, g.stride);
    read_param(padding, padding_len_, nd, 0, "padding", fn, 0, g.pad);
    read_param(dilation, dilation_len_, nd, 1, "dilation", fn, 1, g.dil);
    int64_t* opad = g.opad;
    if (transposed) read_param(output_padding, output_padding_len_, nd, 0, "output_padding", fn, 0, opad);
    if (g.c % groups != 0)
      fail(ErrorKind::Value, fn, "(): input channels ", g.c, " are not divisible by groups ", groups);
    if (!transposed) {
      g.oc = w.sizes()[0];
      if (g.oc % groups != 0)
        fail(ErrorKind::Value, fn, "(): weight's out channels ", g.oc, " are not divisible by groups ", groups);
      if (w.sizes()[1] != g.c / groups) {
        fail(ErrorKind::Value, fn, "(): weight expects ", w.sizes()[1] * groups, " input channels (", w.sizes()[1],
             " per group) but input has ", g.c);
      }
    } else {
      if (w.sizes()[0] != g.c) {
        fail(ErrorKind::Value, fn, "(): transposed weight expects ", w.sizes()[0], " input channels but input has ",
             g.c);
      }
      g.oc = w.sizes()[1] * groups;
    }
    if (b && b->sizes()[0] != g.oc)
      fail(ErrorKind::Value, fn, "(): bias has ", b->sizes()[0], " values but there are ", g.oc, " output channels");
    for (int d = 3 - nd; d < 3; ++d) {
      int64_t span = g.dil[d] * (g.k[d] - 1);
      if (!transposed) {
        g.out[d] = (g.in[d] + 2 * g.pad[d] - span - 1) / g.stride[d] + 1;
        if (g.in[d] + 2 * g.pad[d] - span - 1 < 0) g.out[d] = 0;
      } else {
        if (opad[d] >= g.stride[d] && opad[d] >= g.dil[d]) {
          fail(ErrorKind::Value, fn, "(): output_padding ", opad[d], " must be smaller than stride or dilation");
        }
        g.out[d] = (g.in[d] - 1) * g.stride[d] - 2 * g.pad[d] + span + opad[d] + 1;
      }
      if (g.out[d] <= 0) {
        fail(ErrorKind::Value, fn, "(): the output would have size ", g.out[d], " in spatial dim ", d - (3 - nd),
             " (input ", g.in[d], ", kernel ", g.k[d], ", padding ", g.pad[d], ", dilation ", g.dil[d],
             "); the input is too small for this kernel");
      }
    }
    const ScalarTypeInfo& inf = info(x.dtype());
    if (inf.is_complex || !inf.convertible || x.dtype() == ScalarType::Bool) {
      fail(ErrorKind::NotImplemented, fn, "(): no convolution for dtype ", name(x.dtype()));
    }
    std::vector<int64_t> out_sizes = {g.n, g.oc};
    for (int d = 3 - nd; d < 3; ++d) out_sizes.push_back(g.out[d]);
    std::vector<int64_t> strides(out_sizes.size());
    if (channels_last(x)) {  // N, C, spatial... with C fastest
      int64_t s = 1;
      strides[1] = s;
      s *= out_sizes[1];
      for (size_t d = out_sizes.size() - 1; d >= 2; --d) {
        strides[d] = s;
        s *= out_sizes[d];
      }
      strides[0] = s;
    } else {
      contiguous_strides(out_sizes.data(), static_cast<int>(out_sizes.size()), strides.data());
    }
    Tensor result = empty_strided(out_sizes, strides, x.dtype(), kCPUDevice);
    if (convolution_onednn(g, x, w, b, result, fn)) {
      *ret0 = make_handle(std::move(result), fn);
      return;
    }
    ScalarType ct = (x.dtype() == ScalarType::Float64 || !inf.is_floating) ? ScalarType::Float64 : ScalarType::Float32;
    Tensor xc = contiguous_in(x, ct), wc = contiguous_in(w, ct);
    Tensor y = result.dtype() == ct && result.is_contiguous() ? result : empty(out_sizes, ct, kCPUDevice);
    Tensor bc;
    if (b) bc = contiguous_in(*b, ct);
    if (g.n * g.oc * g.out_len() > 0) {
      if (ct == ScalarType::Float32) {
        im2col_convolution<float>(g, xc, wc, b ? &bc : nullptr, y, fn);
      } else {
        im2col_convolution<double>(g, xc, wc, b ? &bc : nullptr, y, fn);
      }
    }
    if (y.data_ptr() != result.data_ptr()) copy_(result, y);
    *ret0 = make_handle(std::move(result), fn);
  });
}

}  // extern "C"

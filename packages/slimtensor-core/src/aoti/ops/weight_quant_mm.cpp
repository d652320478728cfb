// src/aoti/ops/weight_quant_mm.cpp: the weight-only quantised matmul fallbacks of LLM inference,
// aoti_torch_cpu__weight_int8pack_mm and aoti_torch_cpu__weight_int4pack_mm_cpu_tensor.
//
// Note [Weight-only int8 matmul]
// torch._weight_int8pack_mm(A (M, K), B int8 (N, K), scales (N)) = (A @ B^T) * scales, a new contiguous (M, N)
// tensor of A's dtype (float32, float16 or bfloat16; scales the same dtype). As torch's CPU kernel
// (int8mm_kernel.cpp) the products are summed in float32 and each sum is multiplied by its scale in float32,
// then rounded once to A's dtype. Here the sum is a float32 GEMM (the int8 values are exact in float32), so
// sums agree with torch's to float32 rounding, not bit for bit (the summation order differs).
//
// Note [int4 packed weights]
// torch._weight_int4pack_mm_for_cpu(A (M, K), B uint8 (N, K/2), group, qScaleAndZeros (ceil(K/group), N, 2))
// (and the AOTI fallback _weight_int4pack_mm_cpu_tensor, which takes the group size as a 1-element int64
// tensor) multiplies A by the dequantised weight W (N, K): W[n][k] = (q[n][k] - 8) * scale + zero, with
// (scale, zero) = qScaleAndZeros[k / group][n], computed as one fused multiply-add in float32, as torch's
// AVX-512 kernel does. The 4-bit values q are packed by torch._convert_weight_to_int4pack_for_cpu in a layout
// that depends on the CPU capability torch dispatched to when it packed them (int4mm_kernel.cpp), in blocks
// of BLOCK_N rows of W, block b at byte b * BLOCK_N * K / 2, each block k-major:
//  - avx512 (BLOCK_N = 64): a full block stores, for each k, 32 bytes: byte d (d < 16) = q[d] | q[d+32] << 4,
//    byte 16 + d = q[d+16] | q[d+48] << 4;
//  - avx2 (BLOCK_N = 32): a full block stores 16 bytes per k: byte d = q[d] | q[d+16] << 4;
//  - otherwise (and the last, partial block of 16, 32 or 48 rows under avx512/avx2): nb bytes/2 per k,
//    byte j = q[2j] | q[2j+1] << 4.
// A model's packed weight is a constant made when it was exported, so this kernel reads it as torch on this
// machine would: the capability is ATEN_CPU_CAPABILITY when set (as torch reads it: default, avx2, avx512),
// else the best this CPU has (avx512 = AVX-512 F/BW/VL/DQ, as torch's cpuinfo check; avx2 = AVX2 + FMA). A
// weight packed on a machine of another capability is not recognisable from its bytes; it gives the same wrong
// results on torch. The product is a float32 GEMM of A and W (summation order differs from torch's, so results
// agree to float32 rounding), rounded once to A's dtype. N must be a multiple of 16 (torch's blocks are).
// A (and int8's B and scales) may have any strides; torch's kernels require them contiguous (a compiled
// model passes them so), slimtensor reads them through copies.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "aoti/ops/gemm.h"
#include "aoti/ops/op_args.h"
#include "aoti/ops/operands.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

bool is_matmul_float(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float16 || t == ScalarType::BFloat16;
}

void check_activation(const Tensor& a, const char* fn) {
  if (!is_matmul_float(a.dtype())) {
    fail(ErrorKind::Type, fn, "(): self has dtype ", name(a.dtype()),
         " but this fallback takes float32, float16 or bfloat16 activations; convert it first");
  }
  check_ndim(a, 2, fn, "self");
}

// The result of A (M, K) @ W (N, K)^T in A's dtype, W float32 contiguous; `scales` (N) multiplies each column
// before the one rounding when given.
Tensor weight_matmul(const Tensor& a, const Tensor& w, const Tensor* scales, const char* fn) {
  const int64_t m = a.sizes()[0], n = w.sizes()[0];
  Tensor c = empty(std::vector<int64_t>{m, n}, ScalarType::Float32, kCPUDevice, fn);
  if (m > 0 && n > 0) {
    gemm(c, contiguous_as(a, ScalarType::Float32, fn), transpose(w, 0, 1), 1.0, 0.0, fn);
    if (scales) {
      Tensor s = contiguous_as(*scales, ScalarType::Float32, fn);
      const float* sp = static_cast<const float*>(s.data_ptr());
      float* cp = static_cast<float*>(c.data_ptr());
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) cp[i * n + j] *= sp[j];
      }
    }
  }
  if (a.dtype() == ScalarType::Float32) return c;
  Tensor out = empty(std::vector<int64_t>{m, n}, a.dtype(), kCPUDevice, fn);
  copy_(out, c);
  return out;
}

// ---- int4: the packed layout (Note [int4 packed weights]) ---------------------------------------------------
int int4_block_n(bool* full_blocks_interleaved) {
  static const int block = [] {
    const char* env = std::getenv("ATEN_CPU_CAPABILITY");
    std::string cap = env ? env : "";
    if (cap.empty()) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_cpu_init();
      if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
        cap = "avx512";
      } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        cap = "avx2";
      }
#endif
    }
    return cap == "avx512" ? 64 : cap == "avx2" ? 32 : -32;  // negative: blocks of 32, pairs everywhere
  }();
  *full_blocks_interleaved = block > 0;
  return block > 0 ? block : -block;
}

// q[n][k] (0..15) of the packed weight, for every n < N and k < K, into q (N x K bytes).
void unpack_int4(const uint8_t* packed, int64_t n_rows, int64_t k_cols, uint8_t* q) {
  bool interleaved = false;
  const int64_t block = int4_block_n(&interleaved);
  for (int64_t b0 = 0; b0 < n_rows; b0 += block) {
    const int64_t nb = std::min(block, n_rows - b0);
    const uint8_t* src = packed + b0 * k_cols / 2;
    for (int64_t k = 0; k < k_cols; ++k) {
      if (interleaved && nb == block) {
        const uint8_t* row = src + k * (block / 2);
        const int64_t lanes = block / 16;  // 4 under avx512, 2 under avx2
        for (int64_t d = 0; d < 16; ++d) {
          for (int64_t half = 0; half < lanes / 2; ++half) {
            const uint8_t byte = row[half * 16 + d];
            const int64_t lo = d + 16 * half, hi = d + 16 * (half + lanes / 2);
            q[(b0 + lo) * k_cols + k] = byte & 0x0F;
            q[(b0 + hi) * k_cols + k] = byte >> 4;
          }
        }
      } else {
        const uint8_t* row = src + k * (nb / 2);
        for (int64_t j = 0; j < nb / 2; ++j) {
          q[(b0 + 2 * j) * k_cols + k] = row[j] & 0x0F;
          q[(b0 + 2 * j + 1) * k_cols + k] = row[j] >> 4;
        }
      }
    }
  }
}

Tensor int4pack_mm(const Tensor& a, const Tensor& b, int64_t group, const Tensor& sz, const char* fn) {
  check_activation(a, fn);
  if (b.dtype() != ScalarType::UInt8) {
    fail(ErrorKind::Type, fn, "(): w must be uint8 (torch._convert_weight_to_int4pack_for_cpu's output) but is ",
         name(b.dtype()));
  }
  check_ndim(b, 2, fn, "w");
  if (!b.is_contiguous()) fail(ErrorKind::Value, fn, "(): w must be contiguous");
  const int64_t k = a.sizes()[1], n = b.sizes()[0];
  if (k % 2 != 0 || b.sizes()[1] != k / 2) {
    fail(ErrorKind::Value, fn, "(): w must be (N, K/2) = (", n, ", ", k / 2, ") for self's K = ", k, " but is (", n,
         ", ", b.sizes()[1], ")", k % 2 ? " (K must be even)" : "");
  }
  if (n % 16 != 0) fail(ErrorKind::Value, fn, "(): N = ", n, " must be a multiple of 16 (torch's packed blocks)");
  if (group != 32 && group != 64 && group != 128 && group != 256) {
    fail(ErrorKind::Value, fn, "(): the group size must be 32, 64, 128 or 256 but is ", group);
  }
  check_same_dtype(sz, a, fn, "qScaleAndZeros", "self");
  check_ndim(sz, 3, fn, "qScaleAndZeros");
  const int64_t groups = (k + group - 1) / group;
  if (sz.sizes()[0] < groups || sz.sizes()[1] != n || sz.sizes()[2] != 2) {
    fail(ErrorKind::Value, fn, "(): qScaleAndZeros must be (ceil(K/group), N, 2) = (", groups, ", ", n, ", 2) but is (",
         sz.sizes()[0], ", ", sz.sizes()[1], ", ", sz.sizes()[2], ")");
  }
  std::vector<uint8_t> q(static_cast<size_t>(n * k));
  if (n > 0 && k > 0) unpack_int4(static_cast<const uint8_t*>(b.data_ptr()), n, k, q.data());
  Tensor s = contiguous_as(sz, ScalarType::Float32, fn);
  const float* sp = static_cast<const float*>(s.data_ptr());
  Tensor w = empty(std::vector<int64_t>{n, k}, ScalarType::Float32, kCPUDevice, fn);
  float* wp = static_cast<float*>(w.data_ptr());
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      const float* scale_zero = sp + ((c / group) * n + r) * 2;
      wp[r * k + c] = std::fma(static_cast<float>(q[r * k + c]) - 8.0f, scale_zero[0], scale_zero[1]);
    }
  }
  return weight_matmul(a, w, nullptr, fn);
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu__weight_int8pack_mm(AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scales,
                                                  AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu__weight_int8pack_mm";
  return guarded(fn, [&] {
    const Tensor& a = cpu_arg(self, fn, "self");
    const Tensor& b = cpu_arg(mat2, fn, "mat2");
    const Tensor& s = cpu_arg(scales, fn, "scales");
    out_arg(ret0, fn, "ret0");
    check_activation(a, fn);
    if (b.dtype() != ScalarType::Int8) fail(ErrorKind::Type, fn, "(): mat2 must be int8 but is ", name(b.dtype()));
    check_ndim(b, 2, fn, "mat2");
    check_same_dtype(s, a, fn, "scales", "self");
    check_ndim(s, 1, fn, "scales");
    const int64_t k = a.sizes()[1], n = b.sizes()[0];
    if (b.sizes()[1] != k) {
      fail(ErrorKind::Value, fn, "(): mat2 must be (N, K) with self's K = ", k, " but is (", n, ", ", b.sizes()[1],
           ")");
    }
    if (s.sizes()[0] != n) {
      fail(ErrorKind::Value, fn, "(): scales must have N = ", n, " elements (mat2's rows) but has ", s.sizes()[0]);
    }
    *ret0 = make_handle(weight_matmul(a, contiguous_as(b, ScalarType::Float32, fn), &s, fn), fn);
  });
}

AOTITorchError aoti_torch_cpu__weight_int4pack_mm_cpu_tensor(AtenTensorHandle X, AtenTensorHandle w,
                                                             AtenTensorHandle qGroupSize,
                                                             AtenTensorHandle qScaleAndZeros, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu__weight_int4pack_mm_cpu_tensor";
  return guarded(fn, [&] {
    const Tensor& a = cpu_arg(X, fn, "X");
    const Tensor& b = cpu_arg(w, fn, "w");
    const Tensor& g = cpu_arg(qGroupSize, fn, "qGroupSize");
    const Tensor& sz = cpu_arg(qScaleAndZeros, fn, "qScaleAndZeros");
    out_arg(ret0, fn, "ret0");
    if (g.numel() != 1 || g.dtype() != ScalarType::Int64) {
      fail(ErrorKind::Value, fn, "(): qGroupSize must be one int64 element (the group size) but is ", name(g.dtype()),
           " with ", g.numel(), " elements");
    }
    int64_t group = 0;
    Tensor g1 = empty(std::vector<int64_t>{}, ScalarType::Int64, kCPUDevice, fn);
    copy_(g1, reshape(g, std::vector<int64_t>{}));
    std::memcpy(&group, g1.data_ptr(), sizeof(group));
    *ret0 = make_handle(int4pack_mm(a, b, group, sz, fn), fn);
  });
}

}  // extern "C"

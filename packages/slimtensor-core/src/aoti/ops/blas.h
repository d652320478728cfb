// src/aoti/ops/blas.h: the BLAS behind the CPU fallbacks: scipy-openblas32 (scipy_-prefixed, 32-bit ints), loaded on
// first use.
//
// Note [Prefixed BLAS]
// scipy-openblas32 exports every BLAS name with a scipy_ prefix, so it can share a process with
// torch's own BLAS (or numpy's) without either taking the other's symbols. Its integers are 32-bit:
// callers must check that every dimension and leading dimension fits (gemm.cpp does).
//
// Note [Lazy BLAS]
// libslimtensor does not link OpenBLAS: blas() dlopens it (RTLD_LOCAL) the first time a fallback needs it,
// so a process that never multiplies matrices never starts OpenBLAS's thread pool. Where it looks:
// $SLIMTENSOR_OPENBLAS, then the scipy_openblas32 wheel next to the slimtensor package
// (<site-packages>/scipy_openblas32/lib, found from libslimtensor's own path), then the build tree's copy.
// OpenBLAS picks its kernels once, when it loads; on AMD CPUs with AVX-512 (Zen 4 and later) it picks
// its AVX2 "Haswell" kernels, so there, unless OPENBLAS_CORETYPE is already set, we set it to SkylakeX
// (AVX-512 kernels, about 1.8x faster here) for the load and unset it again.
#pragma once

namespace slimtensor::aoti::blas {

constexpr int kRowMajor = 101;
constexpr int kNoTrans = 111;
constexpr int kTrans = 112;

struct Api {
  void (*sgemm)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                const float* b, int ldb, float beta, float* c, int ldc);
  void (*dgemm)(int order, int trans_a, int trans_b, int m, int n, int k, double alpha, const double* a, int lda,
                const double* b, int ldb, double beta, double* c, int ldc);
  void (*set_num_threads)(int n);
  int (*get_num_threads)();
  const char* (*get_config)();
};

// The loaded BLAS; throws Error(Runtime) naming `function` and the fix when it cannot be loaded.
const Api& api(const char* function);
// Threads for the BLAS: applied now if it is loaded, else when it loads.
void set_threads(int n);
int threads();
// The path it was loaded from ("" before it is).
const char* loaded_path();

}  // namespace slimtensor::aoti::blas

// src/aoti/ops/blas.h: the few CBLAS entry points of the scipy-openblas32 wheel slimtensor uses (prefixed scipy_, 32-bit ints).
//
// Note [Prefixed BLAS]
// scipy-openblas32 exports every BLAS name with a scipy_ prefix, so it can share a process with
// torch's own BLAS (or numpy's) without either taking the other's symbols. Its integers are 32-bit:
// callers must check that every dimension and leading dimension fits (gemm.cpp does).
#pragma once

extern "C" {
// CBLAS enum values (cblas.h): RowMajor 101, NoTrans 111, Trans 112.
void scipy_cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a,
                       int lda, const float* b, int ldb, float beta, float* c, int ldc);
void scipy_cblas_dgemm(int order, int trans_a, int trans_b, int m, int n, int k, double alpha, const double* a,
                       int lda, const double* b, int ldb, double beta, double* c, int ldc);
void scipy_openblas_set_num_threads(int num_threads);
int scipy_openblas_get_num_threads(void);
}

namespace slimtensor::aoti::blas {
constexpr int kRowMajor = 101;
constexpr int kNoTrans = 111;
constexpr int kTrans = 112;
}  // namespace slimtensor::aoti::blas

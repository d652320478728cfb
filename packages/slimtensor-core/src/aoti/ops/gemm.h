// src/aoti/ops/gemm.h: C = alpha * A @ B + beta * C on strided CPU tensors, any real dtype (BLAS for float32/float64).
#pragma once

#include "slimtensor/tensor/tensor.h"

namespace slimtensor::aoti {

// a (m, k), b (k, n), c (m, n), all 2-D CPU tensors of one dtype; any strides. beta == 0 ignores c's
// contents (NaN included), as BLAS and torch do. Throws Error on bad shapes or unsupported dtypes.
void gemm(const Tensor& c, const Tensor& a, const Tensor& b, double alpha, double beta, const char* fn);

// Whether the bytes x and y address intersect (by address, so two borrowed storages over the same memory
// count too). False when either has no elements.
bool memory_overlaps(const Tensor& x, const Tensor& y);

// Threads of the BLAS (scipy-openblas32).
void set_blas_threads(int n);
int blas_threads();

}  // namespace slimtensor::aoti

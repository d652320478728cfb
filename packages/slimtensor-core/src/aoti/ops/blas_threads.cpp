// src/aoti/ops/blas_threads.cpp: the C functions that set and read the BLAS's thread count.
#include "aoti/ops/gemm.h"
#include "slimtensor/c/shim_cpu.h"

extern "C" {
void slimtensor_blas_set_num_threads(int32_t n) { slimtensor::aoti::set_blas_threads(n); }
int32_t slimtensor_blas_get_num_threads(void) { return slimtensor::aoti::blas_threads(); }
}

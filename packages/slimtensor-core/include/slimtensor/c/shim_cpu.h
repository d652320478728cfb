/* slimtensor/c/shim_cpu.h: the CPU op fallbacks (torch 2.13's generated c_shim_cpu.h names) that libslimtensor
 * implements.
 *
 * Same ownership and error rules as slimtensor/c/shim.h. *_out functions write into a caller-provided
 * (possibly strided) out; the others return new references in ret0/ret1. Optional tensors are
 * AtenTensorHandle* (NULL or pointing at NULL = None); lists are (pointer, length).
 */
#ifndef SLIMTENSOR_C_SHIM_CPU_H_
#define SLIMTENSOR_C_SHIM_CPU_H_

#include "slimtensor/c/shim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out = beta * self + alpha * (mat1 @ mat2); self broadcasts to out. float32/float64 use BLAS. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                         AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
                                                         double alpha);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                      AtenTensorHandle mat2);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                       AtenTensorHandle mat2);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                           AtenTensorHandle batch1, AtenTensorHandle batch2,
                                                           double beta, double alpha);
/* 1-D, 2-D and 3-D convolution (input N,C,spatial...), stride/padding/dilation of length 1 or ndim-2,
 * groups, transposed with output_padding. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride, int64_t stride_len_,
    const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_, int32_t transposed,
    const int64_t* output_padding, int64_t output_padding_len_, int64_t groups, AtenTensorHandle* ret0);
/* Attention of (B,H,L,E) queries over (B,H,S,E) keys and (B,H,S,Ev) values; ret0 = output, ret1 = logsumexp.
 * dropout_p must be 0. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    AtenTensorHandle* attn_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1);

/* Dim-wise scans (Note [Scan accumulation] in src/aoti/ops/scan_ops.cpp): dtype NULL = int64 for integers and
 * bool, else self's dtype; accumulates in torch's CPU accumulation type; contiguous result. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                      AtenTensorHandle* ret0);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_cumprod(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                       AtenTensorHandle* ret0);
/* Sorting along dim (Note [Sort order] in src/aoti/ops/sort_ops.cpp): NaN above every number, stable ties
 * when asked; ret0 = values, ret1 = int64 indices, both laid out like self. stable NULL = not stable. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_sort(AtenTensorHandle self, int64_t dim, int32_t descending,
                                                    AtenTensorHandle* ret0, AtenTensorHandle* ret1);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_sort_stable(AtenTensorHandle self, int32_t* stable, int64_t dim,
                                                           int32_t descending, AtenTensorHandle* ret0,
                                                           AtenTensorHandle* ret1);
/* The k largest (or smallest) along dim, contiguous values and int64 indices; 0 <= k <= size of dim. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_topk(AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest,
                                                    int32_t sorted, AtenTensorHandle* ret0, AtenTensorHandle* ret1);

/* Threads of the BLAS behind the float32/float64 fallbacks (scipy-openblas32). slimtensor's
 * set_num_threads calls it; n < 1 means 1. */
SLIMTENSOR_C_API void slimtensor_blas_set_num_threads(int32_t n);
SLIMTENSOR_C_API int32_t slimtensor_blas_get_num_threads(void);
/* "<path> | <OpenBLAS config>" of the loaded BLAS, loading it if needed; "" (and the last error set) when it
 * cannot be loaded. */
SLIMTENSOR_C_API const char* slimtensor_blas_info(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SLIMTENSOR_C_SHIM_CPU_H_ */

/* shim_cuda_ops.h: the CUDA op fallbacks slimtensor-cuda implements (torch's aoti_torch_cuda_* prototypes).
 *
 * Each declaration has torch's exact prototype from torch/csrc/inductor/aoti_torch/generated/c_shim_cuda.h
 * (identical in torch 2.11 and 2.13); slimtensor.aoti._ops_table reads this header to mark these ops
 * implemented in the one op table (Note [The op table]) and tests/aoti/test_ops_table.py checks the
 * prototypes against the installed torch's headers. The functions live in the plugin's AOTI shim library;
 * they take CUDA tensors, run on the calling thread's current stream, and return AOTI_TORCH_FAILURE with a
 * readable message on bad input or when the NVIDIA library they need (cuBLASLt, cuDNN) is not installed
 * (Notes [Op fallback errors], [NVIDIA libraries at run time] in src/aoti_ops/).
 */
#ifndef SLIMTENSOR_C_SHIM_CUDA_OPS_H
#define SLIMTENSOR_C_SHIM_CUDA_OPS_H

#include "slimtensor/c/shim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuBLASLt (nvidia-cublas): float32 (full precision, as torch's default), bfloat16, float16. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                       AtenTensorHandle mat2);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                          AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
                                                          double alpha);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                        AtenTensorHandle mat2);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                            AtenTensorHandle batch1, AtenTensorHandle batch2,
                                                            double beta, double alpha);

/* cuDNN (nvidia-cudnn-cu13): 1-3 spatial dims, groups, stride, padding, dilation, transposed. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cuda_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride, int64_t stride_len_,
    const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_, int32_t transposed,
    const int64_t* output_padding, int64_t output_padding_len_, int64_t groups, AtenTensorHandle* ret0);

/* slimtensor's tiled online-softmax attention kernel (forward; no dropout). */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8);

/* Host function (not an op): 0 when the NVIDIA library ("cublasLt" or "cudnn") that op fallbacks need opens
 * here, else 1 with slimtensor_cuda_aoti_last_error() saying what is missing and the pip package to install. */
SLIMTENSOR_C_API int32_t slimtensor_cuda_aoti_op_library_status(const char* library);

#ifdef __cplusplus
}
#endif

#endif /* SLIMTENSOR_C_SHIM_CUDA_OPS_H */

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
/* One LSTM layer in one direction (torch's mkldnn_rnn_layer, what compiled nn.LSTM calls with oneDNN on):
 * input (T, N, I), weight0/weight1 (4H, I)/(4H, H), weight2/weight3 the biases (ignored unless has_biases),
 * hx_/cx_ (1, N, H); ret0 = output (T, N, H), ret1/ret2 = final hidden/cell states (hx_'s sizes), ret3 = an
 * empty uint8 workspace. mode must be 2 (LSTM). float32, bfloat16, float16. Note [The mkldnn_rnn_layer
 * contract] in src/aoti/ops/rnn_layer.cpp says where it differs from torch's kernel. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_mkldnn_rnn_layer(
    AtenTensorHandle input, AtenTensorHandle weight0, AtenTensorHandle weight1, AtenTensorHandle weight2,
    AtenTensorHandle weight3, AtenTensorHandle hx_, AtenTensorHandle cx_, int32_t reverse, const int64_t* batch_sizes,
    int64_t batch_sizes_len_, int64_t mode, int64_t hidden_size, int64_t num_layers, int32_t has_biases,
    int32_t bidirectional, int32_t batch_first, int32_t train, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
    AtenTensorHandle* ret2, AtenTensorHandle* ret3);
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

/* Binary search (Note [searchsorted] in src/aoti/ops/search_ops.cpp): positions of self's values in the rows of
 * sorted_sequence (left: first e >= v, right: first e > v); side NULL or "left"/"right"; sorter NULL or int64
 * indices ordering each row; contiguous int64 result (int32 with out_int32) shaped like self. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_searchsorted_Tensor(AtenTensorHandle sorted_sequence,
                                                                   AtenTensorHandle self, int32_t out_int32,
                                                                   int32_t right, const char** side,
                                                                   AtenTensorHandle* sorter, AtenTensorHandle* ret0);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_searchsorted_Scalar(AtenTensorHandle sorted_sequence, double self,
                                                                   int32_t out_int32, int32_t right, const char** side,
                                                                   AtenTensorHandle* sorter, AtenTensorHandle* ret0);
/* searchsorted(boundaries, self) for 1-D boundaries. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_bucketize_Tensor(AtenTensorHandle self, AtenTensorHandle boundaries,
                                                                int32_t out_int32, int32_t right,
                                                                AtenTensorHandle* ret0);

/* Indices of the non-zero elements in row-major order (Note [nonzero layout] in src/aoti/ops/nonzero.cpp):
 * nonzero gives (N, ndim) int64 with strides (1, N); nonzero_static a contiguous (size, ndim) padded with
 * fill_value. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_nonzero(AtenTensorHandle self, AtenTensorHandle* ret0);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_nonzero_static(AtenTensorHandle self, int64_t size, int64_t fill_value,
                                                              AtenTensorHandle* ret0);
/* repeats (1-D int32/int64, >= 0) -> each index i repeated repeats[i] times; output_size NULL or their sum. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_repeat_interleave_Tensor(AtenTensorHandle repeats, int64_t* output_size,
                                                                        AtenTensorHandle* ret0);
/* Histogram of `bins` equal bins over [min, max] (Note [histc arithmetic] in src/aoti/ops/histc.cpp). */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_histc(AtenTensorHandle self, int64_t bins, double min, double max,
                                                     AtenTensorHandle* ret0);
/* self (broadcast with mask) with mask's true places filled by source's elements in order; contiguous. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_masked_scatter(AtenTensorHandle self, AtenTensorHandle mask,
                                                              AtenTensorHandle source, AtenTensorHandle* ret0);

/* out = self (out may be self), then scattered along dim (Note [Scatter semantics] in src/aoti/ops/scatter_ops.cpp):
 * out[.., index[j], ..] = src[j] or value, or reduced with "sum", "prod", "mean", "amax", "amin". */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_scatter_src_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                                               AtenTensorHandle index, AtenTensorHandle src);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_scatter_value_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                 int64_t dim, AtenTensorHandle index, double value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_scatter_reduce_two_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                      int64_t dim, AtenTensorHandle index,
                                                                      AtenTensorHandle src, const char* reduce,
                                                                      int32_t include_self);

/* self.clone() with self.select(dim, index[i]) reduced ("prod", "mean", "amax", "amin") with source.select(dim, i). */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_index_reduce(AtenTensorHandle self, int64_t dim, AtenTensorHandle index,
                                                            AtenTensorHandle source, const char* reduce,
                                                            int32_t include_self, AtenTensorHandle* ret0);

/* self.clone() with self[indices] = values (accumulate: +=); indices[i] NULL = a full slice (Note [index_put] in
 * src/aoti/ops/index_put.cpp). */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_index_put(AtenTensorHandle self, const AtenTensorHandle** indices,
                                                         int64_t indices_len_, AtenTensorHandle values,
                                                         int32_t accumulate, AtenTensorHandle* ret0);

/* out = self (out may be self), then out[indices] = values (or +=): the index_put fallback that torch declares in
 * its c/shim.h (inductor's IndexPutFallback calls it); indices[i] NULL = a full slice. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_index_put_out(AtenTensorHandle out, AtenTensorHandle self,
                                                         const AtenTensorHandle* indices, const uint32_t num_indices,
                                                         const AtenTensorHandle values, bool accumulate);

/* EmbeddingBag forward (Note [embedding_bag] in src/aoti/ops/embedding_bag.cpp): mode 0 sum, 1 mean, 2 max;
 * ret0 = (num_bags, D) result, ret1 = offset2bag, ret2 = bag_size, ret3 = max_indices. scale_grad_by_freq and
 * sparse only concern gradients and are ignored. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu__embedding_bag(AtenTensorHandle weight, AtenTensorHandle indices,
                                                              AtenTensorHandle offsets, int32_t scale_grad_by_freq,
                                                              int64_t mode, int32_t sparse,
                                                              AtenTensorHandle* per_sample_weights,
                                                              int32_t include_last_offset, int64_t padding_idx,
                                                              AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                                              AtenTensorHandle* ret2, AtenTensorHandle* ret3);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu__embedding_bag_forward_only(
    AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets, int32_t scale_grad_by_freq,
    int64_t mode, int32_t sparse, AtenTensorHandle* per_sample_weights, int32_t include_last_offset,
    int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3);

/* Weight-only quantised matmuls (Notes [Weight-only int8 matmul], [int4 packed weights] in
 * src/aoti/ops/weight_quant_mm.cpp): self (M, K) float32/float16/bfloat16; int8: (self @ mat2^T) * scales with
 * mat2 int8 (N, K), scales (N); int4: w uint8 (N, K/2) as torch._convert_weight_to_int4pack_for_cpu packs it,
 * qGroupSize a 1-element int64 tensor (32, 64, 128 or 256), qScaleAndZeros (ceil(K/group), N, 2). A new
 * contiguous (M, N) result of self's dtype. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu__weight_int8pack_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                                   AtenTensorHandle scales, AtenTensorHandle* ret0);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu__weight_int4pack_mm_cpu_tensor(AtenTensorHandle X, AtenTensorHandle w,
                                                                              AtenTensorHandle qGroupSize,
                                                                              AtenTensorHandle qScaleAndZeros,
                                                                              AtenTensorHandle* ret0);

/* FFTs on pocketfft (Note [FFT fallbacks] in src/aoti/ops/fft_ops.cpp): r2c of float32/float64 over dim (the
 * last listed dim halved when onesided), c2c of complex64/complex128 (forward or inverse); normalization 0 none,
 * 1 1/sqrt(n), 2 1/n; the result laid out as torch's CPU FFT lays it out. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu__fft_r2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_,
                                                        int64_t normalization, int32_t onesided,
                                                        AtenTensorHandle* ret0);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu__fft_c2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_,
                                                        int64_t normalization, int32_t forward, AtenTensorHandle* ret0);

/* Complex tensors around the FFTs (Notes [Complex views], [mul_Tensor] in src/aoti/ops/complex_ops.cpp):
 * view_as_real / view_as_complex share self's storage; mul_Tensor is self * other with broadcasting, torch's
 * result_type (complex included) and TensorIterator's output layout. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_view_as_real(AtenTensorHandle self, AtenTensorHandle* ret0);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_view_as_complex(AtenTensorHandle self, AtenTensorHandle* ret0);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu_mul_Tensor(AtenTensorHandle self, AtenTensorHandle other,
                                                          AtenTensorHandle* ret0);

/* Threads of the BLAS behind the float32/float64 fallbacks (scipy-openblas32). slimtensor's
 * set_num_threads calls it; n < 1 means 1. */
SLIMTENSOR_C_API void slimtensor_blas_set_num_threads(int32_t n);
SLIMTENSOR_C_API int32_t slimtensor_blas_get_num_threads(void);
/* "<path> | <OpenBLAS config>" of the loaded BLAS, loading it if needed; "" (and the last error set) when it
 * cannot be loaded. */
SLIMTENSOR_C_API const char* slimtensor_blas_info(void);
/* "<path> | oneDNN <version>" of the oneDNN behind convolution and the LSTM layer, loading it if needed; ""
 * (and the last error set to why) when it is unavailable. */
SLIMTENSOR_C_API const char* slimtensor_onednn_info(void);
/* Threads for oneDNN's primitives (slimtensor.aoti.set_num_threads calls it; n < 1 means 1); until it is
 * called, oneDNN follows slimtensor's own thread count (slimtensor::set_num_threads). */
SLIMTENSOR_C_API void slimtensor_onednn_set_num_threads(int32_t n);
/* The OpenMP thread count oneDNN sees on the calling thread now (the calling thread's omp_get_max_threads()
 * in oneDNN's libgomp); each oneDNN call first sets it to the count above. -1 when oneDNN is
 * unavailable. */
SLIMTENSOR_C_API int32_t slimtensor_onednn_threads(void);
/* How many oneDNN convolution plans (primitives per call shape) the process has cached. */
SLIMTENSOR_C_API int64_t slimtensor_onednn_convolution_plans(void);

/* The c10d functional collectives over a named group (Note [Collective groups] in slimtensor/c/collectives.h):
 * all_reduce returns a new reduced tensor, all_reduce_ reduces inp in place; wait_tensor waits for the work. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu__c10d_functional_all_reduce(AtenTensorHandle inp, const char* reduce_op,
                                                                           const char* group_name,
                                                                           AtenTensorHandle* ret0);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu__c10d_functional_all_reduce_(AtenTensorHandle inp, const char* reduce_op,
                                                                            const char* group_name,
                                                                            AtenTensorHandle* ret0);
SLIMTENSOR_C_API AOTITorchError aoti_torch_cpu__c10d_functional_wait_tensor(AtenTensorHandle inp,
                                                                            AtenTensorHandle* ret0);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SLIMTENSOR_C_SHIM_CPU_H_ */

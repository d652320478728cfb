/* slimtensor/c/shim.h: the AOTInductor tensor shim ABI (torch 2.13's aoti_torch/c/shim.h names), implemented by
 * libslimtensor.
 *
 * Note [AOTI shim ABI]
 * These are slimtensor's own declarations of the extern "C" functions an AOTInductor model .so calls.
 * Names, parameter and return types match torch 2.13.0 exactly (tests/aoti/test_shim_header.py compares
 * them with the installed torch headers); c10 value types are replaced by ABI-identical C types
 * (c10::Half and c10::BFloat16 are 16-bit values, c10::complex<T> is two T's aligned to 2*sizeof(T)).
 *
 * Ownership: AtenTensorHandle points at a heap object holding one owning reference to a tensor. Every
 * function that returns a handle (ret, ret_new_tensor, new_handle, ret_dst) returns a new reference
 * the caller releases exactly once with aoti_torch_delete_tensor_object. Handles given as inputs are
 * borrowed. Storage is shared and refcounted: views outlive the handle they were made from.
 *
 * Errors: functions returning AOTITorchError return AOTI_TORCH_SUCCESS (0) or AOTI_TORCH_FAILURE (1)
 * and never throw; the message is in slimtensor_last_error() (thread-local). The one exception is
 * aoti_torch_check, which throws std::runtime_error on a false condition, as libtorch's does.
 */
#ifndef SLIMTENSOR_C_SHIM_H_
#define SLIMTENSOR_C_SHIM_H_

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#  include <stdbool.h>
#endif

#if defined(_WIN32)
#  define SLIMTENSOR_C_API __declspec(dllexport)
#else
#  define SLIMTENSOR_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct AtenTensorOpaque;
typedef struct AtenTensorOpaque* AtenTensorHandle;
typedef int32_t AOTITorchError;
#define AOTI_TORCH_SUCCESS 0
#define AOTI_TORCH_FAILURE 1

/* c10::Half / c10::BFloat16: the 16 raw bits. c10::complex<float|double>: {real, imag}. */
typedef uint16_t slimtensor_half;
typedef uint16_t slimtensor_bfloat16;
typedef struct slimtensor_complex64 {
  float real, imag;
} __attribute__((aligned(8))) slimtensor_complex64;
typedef struct slimtensor_complex128 {
  double real, imag;
} __attribute__((aligned(16))) slimtensor_complex128;

/* ---- constants (c10's numbers) ---------------------------------------------------------------- */
SLIMTENSOR_C_API int32_t aoti_torch_device_type_cpu(void);
SLIMTENSOR_C_API int32_t aoti_torch_device_type_cuda(void);
SLIMTENSOR_C_API int32_t aoti_torch_device_type_meta(void);
SLIMTENSOR_C_API int32_t aoti_torch_device_type_xpu(void);
SLIMTENSOR_C_API int32_t aoti_torch_device_type_mps(void);
SLIMTENSOR_C_API int32_t aoti_torch_device_type_privateuse1(void);

SLIMTENSOR_C_API int32_t aoti_torch_dtype_float8_e5m2(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_float8_e4m3fn(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_float8_e5m2fnuz(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_float8_e4m3fnuz(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_float8_e8m0fnu(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_float4_e2m1fn_x2(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_bfloat16(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_float16(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_float32(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_float64(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_uint8(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_uint16(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_uint32(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_uint64(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_int8(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_int16(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_int32(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_int64(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_bool(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_complex32(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_complex64(void);
SLIMTENSOR_C_API int32_t aoti_torch_dtype_complex128(void);
/* Bytes per element; 0 (and slimtensor_last_error set) for a code that is not a c10 dtype. */
SLIMTENSOR_C_API size_t aoti_torch_dtype_element_size(int32_t dtype);

SLIMTENSOR_C_API int32_t aoti_torch_layout_strided(void);
SLIMTENSOR_C_API int32_t aoti_torch_layout_sparse_coo(void);
SLIMTENSOR_C_API int32_t aoti_torch_layout_sparse_csr(void);
SLIMTENSOR_C_API int32_t aoti_torch_layout_sparse_csc(void);
SLIMTENSOR_C_API int32_t aoti_torch_layout_sparse_bsr(void);
SLIMTENSOR_C_API int32_t aoti_torch_layout_sparse_bsc(void);
SLIMTENSOR_C_API int32_t aoti_torch_layout__mkldnn(void);
SLIMTENSOR_C_API int32_t aoti_torch_layout_jagged(void);

SLIMTENSOR_C_API int32_t aoti_torch_memory_format_contiguous_format(void);
SLIMTENSOR_C_API int32_t aoti_torch_memory_format_channels_last(void);
SLIMTENSOR_C_API int32_t aoti_torch_memory_format_channels_last_3d(void);
SLIMTENSOR_C_API int32_t aoti_torch_memory_format_preserve_format(void);

/* The torch version whose shim ABI this is: 0x020d000000000000 (2.13). */
SLIMTENSOR_C_API uint64_t aoti_torch_abi_version(void);

/* ---- scalars ------------------------------------------------------------------------------------ */
/* item_<T>: the single element (numel must be 1), converted to T as torch's Scalar would. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_float16(AtenTensorHandle tensor, slimtensor_half* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_float32(AtenTensorHandle tensor, float* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_float64(AtenTensorHandle tensor, double* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_uint8(AtenTensorHandle tensor, uint8_t* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_uint16(AtenTensorHandle tensor, uint16_t* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_uint32(AtenTensorHandle tensor, uint32_t* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_uint64(AtenTensorHandle tensor, uint64_t* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_int8(AtenTensorHandle tensor, int8_t* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_int16(AtenTensorHandle tensor, int16_t* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_int32(AtenTensorHandle tensor, int32_t* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_int64(AtenTensorHandle tensor, int64_t* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_bool(AtenTensorHandle tensor, bool* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_bfloat16(AtenTensorHandle tensor, slimtensor_bfloat16* ret_value);
SLIMTENSOR_C_API AOTITorchError aoti_torch_item_complex64(AtenTensorHandle tensor, slimtensor_complex64* ret_value);

/* scalar_to_tensor_<T>: a new 0-d CPU tensor holding value. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_float32(float value, AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_float64(double value, AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_uint8(uint8_t value, AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_uint16(uint16_t value, AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_uint32(uint32_t value, AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_uint64(uint64_t value, AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_int8(int8_t value, AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_int16(int16_t value, AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_int32(int32_t value, AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_int64(int64_t value, AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_bool(bool value, AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_complex64(slimtensor_complex64 value,
                                                                      AtenTensorHandle* ret_new_tensor);
SLIMTENSOR_C_API AOTITorchError aoti_torch_scalar_to_tensor_complex128(slimtensor_complex128 value,
                                                                       AtenTensorHandle* ret_new_tensor);

/* ---- grad mode (thread-local; slimtensor has no autograd, the flag is only remembered) ---------- */
SLIMTENSOR_C_API bool aoti_torch_grad_mode_is_enabled(void);
SLIMTENSOR_C_API void aoti_torch_grad_mode_set_enabled(bool enabled);

/* ---- lifecycle ---------------------------------------------------------------------------------- */
/* Releases one handle. Succeeds for every valid handle; NULL is an error (nothing happens). */
SLIMTENSOR_C_API AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor);

/* ---- getters (borrowed results, valid while the handle lives) ---------------------------------- */
/* Element 0's address; for device memory only where it is addressable (CUDA): a tensor whose device memory
 * is an opaque handle (Metal) fails, naming slimtensor_aoti_get_memory_ref. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret_data_ptr);
/* Bytes of the tensor's storage. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret_size);
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret_dim);
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret_numel);
/* Elements of the tensor's dtype that fit in its storage. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_storage_numel(AtenTensorHandle tensor, int64_t* ret_numel);
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret_sizes);
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret_size);
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret_strides);
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret_stride);
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret_dtype);
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret_device_type);
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret_device_index);
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret_layout);
/* Elements from the storage base to element 0. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret_storage_offset);
SLIMTENSOR_C_API AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret_is_contiguous);
SLIMTENSOR_C_API AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret_is_defined);

/* ---- new handles -------------------------------------------------------------------------------- */
/* Another reference to the same tensor (same storage, sizes, strides, offset). */
SLIMTENSOR_C_API AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle,
                                                             AtenTensorHandle* new_handle);
/* A view of self's storage starting offset_bytes into it, as dtype; self's offset must be 0. */
SLIMTENSOR_C_API AOTITorchError aoti_torch__alloc_from_pool(AtenTensorHandle self, int64_t offset_bytes, int32_t dtype,
                                                            int64_t ndim, const int64_t* sizes_ptr,
                                                            const int64_t* strides_ptr,
                                                            AtenTensorHandle* ret_new_tensor);
/* A view of self's storage; storage_offset is added to self's offset. strides_ptr NULL = contiguous. */
SLIMTENSOR_C_API AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim,
                                                               const int64_t* sizes_ptr, const int64_t* strides_ptr,
                                                               int64_t storage_offset,
                                                               AtenTensorHandle* ret_new_tensor);
/* New owning storage of the strided extent on (device_type, device_index). strides_ptr NULL = contiguous. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes_ptr,
                                                         const int64_t* strides_ptr, int32_t dtype, int32_t device_type,
                                                         int32_t device_index, AtenTensorHandle* ret_new_tensor);
/* Same as empty_strided (slimtensor has no pinned host allocator; CPU memory is returned). */
SLIMTENSOR_C_API AOTITorchError aoti_torch_empty_strided_pinned(int64_t ndim, const int64_t* sizes_ptr,
                                                                const int64_t* strides_ptr, int32_t dtype,
                                                                int32_t device_type, int32_t device_index,
                                                                AtenTensorHandle* ret_new_tensor);
/* A view with self's ndim and storage offset and the given sizes and strides. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_as_strided(AtenTensorHandle self, const int64_t* sizes_ptr,
                                                      const int64_t* strides_ptr, AtenTensorHandle* ret);
/* Borrowed memory: data is the storage base (may be NULL when the view has no elements), element 0 is
 * storage_offset elements after it; the memory must outlive every handle made over it. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim, const int64_t* sizes_ptr,
                                                                   const int64_t* strides_ptr, int64_t storage_offset,
                                                                   int32_t dtype, int32_t device_type,
                                                                   int32_t device_index, AtenTensorHandle* ret);
/* Same; layout must be strided (the opaque metadata of mkldnn tensors is not supported). */
SLIMTENSOR_C_API AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret, int32_t layout,
    const uint8_t* opaque_metadata, int64_t opaque_metadata_size);
/* A handle holding an undefined tensor (to be filled by assign_tensors). */
SLIMTENSOR_C_API AOTITorchError aoti_torch_new_uninitialized_tensor(AtenTensorHandle* ret);

/* ---- copies and assignment ---------------------------------------------------------------------- */
/* dst.copy_(src) (note the argument order). */
SLIMTENSOR_C_API AOTITorchError aoti_torch_tensor_copy_(AtenTensorHandle src, AtenTensorHandle dst);
/* dst's handle now refers to src's tensor (shares storage). */
SLIMTENSOR_C_API AOTITorchError aoti_torch_assign_tensors(AtenTensorHandle src, AtenTensorHandle dst);
/* A new handle to src's tensor; src stays valid. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret_dst);
/* New storage with the same data; dense layouts keep their strides, others become contiguous. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret);
/* New storage with the same data and exactly the same sizes and strides. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret);
/* self.copy_(src): broadcasting, dtype-converting, cross-device; non_blocking is accepted and ignored. */
SLIMTENSOR_C_API AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking);
SLIMTENSOR_C_API AOTITorchError aoti_torch_zero_(AtenTensorHandle self);

/* ---- checks and warnings ------------------------------------------------------------------------ */
/* Throws std::runtime_error("<msg> (<func> at <file>:<line>)") when cond is false. C++ callers only. */
SLIMTENSOR_C_API void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg);
/* Prints "Warning: <msg> (<func> at <file>:<line>)" to stderr. */
SLIMTENSOR_C_API void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg);

/* ---- slimtensor's own functions ----------------------------------------------------------------- */
/* The message of the last failed shim call on this thread ("" if none). Valid until the next call. */
SLIMTENSOR_C_API const char* slimtensor_last_error(void);
/* Clears the thread's last error. */
SLIMTENSOR_C_API void slimtensor_clear_last_error(void);
/* AOTI handles alive now, all devices (also in memory_stats per device type). */
SLIMTENSOR_C_API int64_t slimtensor_aoti_live_handles(void);
/* 1 when SLIMTENSOR_DEBUG_HANDLES=1 was set at load (double deletes and foreign pointers are errors). */
SLIMTENSOR_C_API int32_t slimtensor_aoti_debug_handles(void);
/* Where element 0 of any tensor lives, as the device-plugin ABI names memory (struct st_memory_ref of
 * slimtensor/c/device_plugin.h): {allocation handle, byte offset, device index}; for CPU tensors {base
 * address, byte offset, 0}. Works for every device, addressable or not (Note [Device memory handles]). */
struct st_memory_ref;
SLIMTENSOR_C_API AOTITorchError slimtensor_aoti_get_memory_ref(AtenTensorHandle tensor,
                                                               struct st_memory_ref* ret_memory_ref);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SLIMTENSOR_C_SHIM_H_ */

// shim_mps.h: the MPS shims of torch's c/shim_mps.h and the op fallbacks of c_shim_mps.h that the plugin exports.
//
// Note [MPS shim objects]
// A shader library (aoti_torch_mps_create_shader_library) belongs to the model that made it: it owns its
// MTLLibrary and the kernel functions (pipelines) made from it, and aoti_torch_mps_delete_shader_library
// releases exactly those, never another model's (pitfall 11). A kernel function encodes into the calling
// thread's current stream: start_encoding opens (or joins) the stream's compute encoder and sets the
// pipeline; set_arg_tensor binds (buffer, byte offset) of the tensor, never a copy, for views at any offset
// (pitfalls 7, 8); dispatch encodes dispatchThreads. run_command_block runs the model's encoding callback
// and reports the first error any shim call on that function met inside it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor_access.h"

#if defined(__GNUC__)
#  define ST_MPS_EXPORT __attribute__((visibility("default")))
#else
#  define ST_MPS_EXPORT
#endif

extern "C" {
struct AOTIMetalShaderLibraryOpaque;
typedef struct AOTIMetalShaderLibraryOpaque* AOTIMetalShaderLibraryHandle;
struct AOTIMetalKernelFunctionOpaque;
typedef struct AOTIMetalKernelFunctionOpaque* AOTIMetalKernelFunctionHandle;
typedef void (*aoti_torch_mps_command_block_callback_t)(AOTIMetalKernelFunctionHandle func, void* user_data);

ST_MPS_EXPORT int32_t aoti_torch_device_type_mps(void);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_malloc(void** buffer, size_t num_bytes);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_free(void* ptr);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_memcpy(void* buffer, size_t constant_offset, size_t bytes_read,
                                                   size_t data_size, uint8_t* constants_start);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_copy_buffer(void* src_buffer, void* dst_buffer, size_t data_size,
                                                        size_t src_offset, size_t dst_offset);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_create_shader_library(const char* metal_shader_source,
                                                                  AOTIMetalShaderLibraryHandle* library_handle);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_delete_shader_library(AOTIMetalShaderLibraryHandle library_handle);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_get_kernel_function(AOTIMetalShaderLibraryHandle library_handle,
                                                                const char* kernel_name,
                                                                AOTIMetalKernelFunctionHandle* function_handle);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_start_encoding(AOTIMetalKernelFunctionHandle func);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_set_arg_tensor(AOTIMetalKernelFunctionHandle func, unsigned idx,
                                                           AtenTensorHandle tensor);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_set_arg_int(AOTIMetalKernelFunctionHandle func, unsigned idx, int64_t val);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_dispatch_single(AOTIMetalKernelFunctionHandle func, uint64_t length);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_dispatch_single_with_group_size(AOTIMetalKernelFunctionHandle func,
                                                                            uint64_t length, uint64_t group_size);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_dispatch_array(AOTIMetalKernelFunctionHandle func, const uint64_t* length,
                                                           size_t length_size);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_dispatch_array_with_group_size(AOTIMetalKernelFunctionHandle func,
                                                                           const uint64_t* length, size_t length_size,
                                                                           const uint64_t* group_size,
                                                                           size_t group_size_size);
ST_MPS_EXPORT void aoti_torch_mps_shared_callback(AOTIMetalKernelFunctionHandle func, void* user_data);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_run_command_block(AOTIMetalKernelFunctionHandle func,
                                                              aoti_torch_mps_command_block_callback_t callback,
                                                              void* user_data);
// c_shim_mps.h op fallbacks (MetalPerformanceShaders matrix multiplication)
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                      AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
                                                      double alpha);
ST_MPS_EXPORT AOTITorchError aoti_torch_mps_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
}

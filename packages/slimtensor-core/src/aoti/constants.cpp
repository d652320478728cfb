// src/aoti/constants.cpp: the dtype, device, layout and memory-format code functions (c10's numbers) and the ABI
// version.
#include "aoti/handle.h"
#include "slimtensor/tensor/scalar_type.h"

using slimtensor::ScalarType;

namespace {
constexpr int32_t code(ScalarType t) { return static_cast<int32_t>(t); }
}  // namespace

extern "C" {

int32_t aoti_torch_device_type_cpu(void) { return 0; }
int32_t aoti_torch_device_type_cuda(void) { return 1; }
int32_t aoti_torch_device_type_meta(void) { return 14; }
int32_t aoti_torch_device_type_xpu(void) { return 12; }
int32_t aoti_torch_device_type_mps(void) { return 13; }
int32_t aoti_torch_device_type_privateuse1(void) { return 20; }

int32_t aoti_torch_dtype_float8_e5m2(void) { return code(ScalarType::Float8_e5m2); }
int32_t aoti_torch_dtype_float8_e4m3fn(void) { return code(ScalarType::Float8_e4m3fn); }
int32_t aoti_torch_dtype_float8_e5m2fnuz(void) { return code(ScalarType::Float8_e5m2fnuz); }
int32_t aoti_torch_dtype_float8_e4m3fnuz(void) { return code(ScalarType::Float8_e4m3fnuz); }
int32_t aoti_torch_dtype_float8_e8m0fnu(void) { return code(ScalarType::Float8_e8m0fnu); }
int32_t aoti_torch_dtype_float4_e2m1fn_x2(void) { return code(ScalarType::Float4_e2m1fn_x2); }
int32_t aoti_torch_dtype_bfloat16(void) { return code(ScalarType::BFloat16); }
int32_t aoti_torch_dtype_float16(void) { return code(ScalarType::Float16); }
int32_t aoti_torch_dtype_float32(void) { return code(ScalarType::Float32); }
int32_t aoti_torch_dtype_float64(void) { return code(ScalarType::Float64); }
int32_t aoti_torch_dtype_uint8(void) { return code(ScalarType::UInt8); }
int32_t aoti_torch_dtype_uint16(void) { return code(ScalarType::UInt16); }
int32_t aoti_torch_dtype_uint32(void) { return code(ScalarType::UInt32); }
int32_t aoti_torch_dtype_uint64(void) { return code(ScalarType::UInt64); }
int32_t aoti_torch_dtype_int8(void) { return code(ScalarType::Int8); }
int32_t aoti_torch_dtype_int16(void) { return code(ScalarType::Int16); }
int32_t aoti_torch_dtype_int32(void) { return code(ScalarType::Int32); }
int32_t aoti_torch_dtype_int64(void) { return code(ScalarType::Int64); }
int32_t aoti_torch_dtype_bool(void) { return code(ScalarType::Bool); }
int32_t aoti_torch_dtype_complex32(void) { return code(ScalarType::Complex32); }
int32_t aoti_torch_dtype_complex64(void) { return code(ScalarType::Complex64); }
int32_t aoti_torch_dtype_complex128(void) { return code(ScalarType::Complex128); }

size_t aoti_torch_dtype_element_size(int32_t dtype) {
  const slimtensor::ScalarTypeInfo* info = slimtensor::scalar_type_info(dtype);
  if (!info || !info->name) {
    slimtensor::aoti::set_last_error("aoti_torch_dtype_element_size",
                                     "the code is not a c10 dtype (see aoti_torch_dtype_*); returned 0");
    return 0;
  }
  return static_cast<size_t>(info->itemsize);
}

int32_t aoti_torch_layout_strided(void) { return 0; }
int32_t aoti_torch_layout_sparse_coo(void) { return 1; }
int32_t aoti_torch_layout_sparse_csr(void) { return 2; }
int32_t aoti_torch_layout__mkldnn(void) { return 3; }
int32_t aoti_torch_layout_sparse_csc(void) { return 4; }
int32_t aoti_torch_layout_sparse_bsr(void) { return 5; }
int32_t aoti_torch_layout_sparse_bsc(void) { return 6; }
int32_t aoti_torch_layout_jagged(void) { return 7; }

int32_t aoti_torch_memory_format_contiguous_format(void) { return 0; }
int32_t aoti_torch_memory_format_preserve_format(void) { return 1; }
int32_t aoti_torch_memory_format_channels_last(void) { return 2; }
int32_t aoti_torch_memory_format_channels_last_3d(void) { return 3; }

uint64_t aoti_torch_abi_version(void) { return 0x020d000000000000ull; }

}  // extern "C"

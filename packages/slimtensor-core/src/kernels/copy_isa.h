// copy_isa.h: the table of CPU copy kernels that one instruction set provides (scalar, AVX2, AVX-512).
//
// Note [Copy ISA dispatch]
// Every kernel file is compiled with its own instruction-set flags (CMakeLists.txt sets them per file;
// nothing shipped uses -march=native). At the first copy, copy_kernels.cpp picks the best table the CPU
// supports (__builtin_cpu_supports), or the one SLIMTENSOR_ISA=scalar|avx2|avx512 names (a request the
// CPU cannot run falls back to the best it can, never to an illegal instruction). A null entry means
// "this ISA has no special kernel": the caller falls back to the generic loops of copy_kernels.cpp.
// Every kernel gives bit-identical results on every ISA (Note [Conversion rules] and
// Note [Reduced-precision rounding]); tests/kernels/test_copy_isa.py checks each path against torch.
//
// Note [ISA kernel files are self-contained]
// The files compiled with -mavx2 / -mavx512* include only <immintrin.h>, <cstdint>, <cstddef> (and <utility>
// for std::integer_sequence, a type), and
// keep all their helpers in an anonymous namespace: an inline function from a shared header instantiated
// there could be emitted with AVX-512 instructions and then chosen by the linker for scalar callers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace slimtensor {

// Contiguous element-wise conversion of n elements; `stream` asks for non-temporal stores (the
// destination will not be read back soon and does not fit in the last-level cache).
using ConvertFn = void (*)(const void* src, void* dst, int64_t n, bool stream);

// Batched 2-D transpose with a per-element conversion, for the planner's "inner dim dense in dst, next
// dim dense in src" shape:  dst[i * dst_row + j * dst_item] = convert(src[i * src_item + j * src_row])
// for i < rows, j < cols. Strides are in bytes.
using TransposeFn = void (*)(const char* src, int64_t src_row, char* dst, int64_t dst_row, int64_t rows, int64_t cols,
                             bool stream);

struct CopyKernels {
  const char* name;                                                           // "scalar", "avx2", "avx512"
  void (*copy_bytes)(void* dst, const void* src, size_t bytes, bool stream);  // dense same-dtype copy
  ConvertFn f32_to_bf16, bf16_to_f32, f32_to_f16, f16_to_f32, i64_to_f32;
  TransposeFn transpose_32bit;  // any 4-byte type to itself
  TransposeFn transpose_f32_to_bf16;
  TransposeFn transpose_f32_to_f16;
};

// Each returns nullptr when the file was built for a target without that instruction set.
const CopyKernels* copy_kernels_avx512();
const CopyKernels* copy_kernels_avx2();

}  // namespace slimtensor

// copy/copy_kernels.h: the CPU loops behind copy_ and fill_, after copy.cpp has planned the layout.
#pragma once

#include <cstdint>

#include "slimtensor/base/export.h"
#include "slimtensor/tensor/scalar_type.h"

namespace slimtensor {

constexpr int kMaxCopyDims = 64;

// A CPU copy after planning: dims ordered outermost first, size-1 dims dropped, mergeable dims merged,
// strides in BYTES. Both sides are valid for every index (checked by the planner).
struct CpuCopyPlan {
  int ndim = 0;
  int64_t sizes[kMaxCopyDims];
  int64_t dst_strides[kMaxCopyDims];
  int64_t src_strides[kMaxCopyDims];
  char* dst = nullptr;
  const char* src = nullptr;
  ScalarType dst_type = ScalarType::Float32;
  ScalarType src_type = ScalarType::Float32;
};

// Runs the plan, on several threads when it is large enough.
void run_cpu_copy(const CpuCopyPlan& plan);

// The instruction set the copy kernels run with: "avx512", "avx2" or "scalar" (Note [Copy ISA dispatch]).
// Exported so the Python module can report it (slimtensor.bench records it with every result).
SLIMTENSOR_API const char* cpu_copy_isa();

// Converts one element; used for scalars (fill_, item) so they follow exactly the rules of copies.
void convert_element(const void* src, ScalarType src_type, void* dst, ScalarType dst_type);

}  // namespace slimtensor

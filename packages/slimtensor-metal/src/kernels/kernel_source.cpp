// kernel_source.cpp: embeds metal_kernels.metal as a string (metal_kernels.metal.inc is generated from it by
// CMake, or by the test build, as one raw string literal).
#include "kernel_source.h"

namespace slimtensor_metal {
const char* const kMetalKernelSource =
#include "metal_kernels.metal.inc"
    ;
}  // namespace slimtensor_metal

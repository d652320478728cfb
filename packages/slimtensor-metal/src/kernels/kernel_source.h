// kernel_source.h: the Metal source of the plugin's kernels (metal_kernels.metal, embedded at build time).
#pragma once

namespace slimtensor_metal {
extern const char* const kMetalKernelSource;
}

// copy/copy_plan.h: the dims planner of every strided copy: order, drop size-1 dims, merge.
#pragma once

#include <cstdint>

#include "copy/copy_kernels.h"

namespace slimtensor {

// Fills plan.ndim, plan.sizes and both stride arrays from n dims: size-1 dims dropped, the rest ordered
// outermost first by the destination's strides (so writes walk memory forward) and merged where both sides
// allow it. Strides come in elements and leave multiplied by dst_unit / src_unit: the itemsizes for a CPU
// copy (byte strides), 1 for a plugin's strided copy (element strides). Leaves pointers and dtypes alone.
// The result may have 0 dims (one element). n <= kMaxCopyDims.
void plan_copy_dims(int n, const int64_t* sizes, const int64_t* dst_strides, int64_t dst_unit,
                    const int64_t* src_strides, int64_t src_unit, CpuCopyPlan& plan);

}  // namespace slimtensor

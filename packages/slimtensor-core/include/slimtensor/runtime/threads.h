// slimtensor/runtime/threads.h: how many threads slimtensor's own kernels (large copies and fills) may use.
#pragma once

#include "slimtensor/base/export.h"

namespace slimtensor {

// The default is the number of hardware threads. Throws Error(Value) outside 1..64.
SLIMTENSOR_API void set_num_threads(int n);
SLIMTENSOR_API int num_threads();

}  // namespace slimtensor

// runtime/parallel.h: a tiny fixed pool of worker threads for large copies and fills.
#pragma once

#include <cstdint>
#include <functional>

#include "slimtensor/runtime/threads.h"

namespace slimtensor {

// Runs fn(begin, end) over [0, n) in up to num_threads() chunks of at least `grain`; the caller's thread
// takes the first chunk. Runs inline when one chunk suffices or when called from inside a worker.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace slimtensor

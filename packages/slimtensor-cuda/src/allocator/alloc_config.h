// alloc_config.h: the caching allocator's settings and their parser (SLIMTENSOR_CUDA_ALLOC_CONF).
//
// Note [Allocator configuration]
// SLIMTENSOR_CUDA_ALLOC_CONF is a comma-separated list of key:value pairs, read once when the allocator
// of the first device is made:
//   max_split_size_mb:N    blocks of N MiB or more are never split, and a request below N MiB never
//                          takes such a block (limits fragmentation of huge blocks); default unlimited
//   large_segment_mb:N     the segment reserved for a large request below it (default 20; at least 2)
//   caching:0|1            0 gives every freed block back at once (a debugging aid; slow)
// Unknown keys and bad values are errors that name the key, the value and what is accepted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace slimtensor_cuda {

struct AllocatorConfig {
  size_t max_split_size = SIZE_MAX;  // bytes; SIZE_MAX = every block may be split
  size_t large_segment = 20u << 20;  // bytes
  bool caching = true;
};

// Parses `text` (may be empty). Returns false with *error set on a malformed value.
bool parse_allocator_config(const std::string& text, AllocatorConfig* config, std::string* error);

// The environment variable's name.
inline constexpr const char* kAllocConfEnv = "SLIMTENSOR_CUDA_ALLOC_CONF";

}  // namespace slimtensor_cuda

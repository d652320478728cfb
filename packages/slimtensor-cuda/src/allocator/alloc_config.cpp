// alloc_config.cpp: parses SLIMTENSOR_CUDA_ALLOC_CONF (Note [Allocator configuration]).
#include "alloc_config.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>

namespace slimtensor_cuda {
namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

bool parse_unsigned(const std::string& key, const std::string& value, uint64_t lo, uint64_t hi,
                    uint64_t* out, std::string* error) {
  const std::string where = std::string(kAllocConfEnv) + ": '" + key + ":" + value + "'";
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
    *error = where + " is not a whole number; expected " + key + ":N with N in [" + std::to_string(lo) +
             ", " + std::to_string(hi) + "]";
    return false;
  }
  errno = 0;
  const unsigned long long v = std::strtoull(value.c_str(), nullptr, 10);
  if (errno == ERANGE || v < lo || v > hi) {
    *error = where + " is out of range; expected N in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return false;
  }
  *out = v;
  return true;
}

}  // namespace

bool parse_allocator_config(const std::string& text, AllocatorConfig* config, std::string* error) {
  AllocatorConfig c;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = trim(text.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) {
      if (comma >= text.size()) break;
      continue;  // tolerate "a:1,,b:2" and a trailing comma
    }
    const size_t colon = item.find(':');
    if (colon == std::string::npos) {
      *error = std::string(kAllocConfEnv) + ": '" + item +
               "' has no ':'; expected key:value pairs such as max_split_size_mb:256,caching:1";
      return false;
    }
    const std::string key = trim(item.substr(0, colon)), value = trim(item.substr(colon + 1));
    uint64_t v = 0;
    if (key == "max_split_size_mb") {
      // Below the large-pool threshold (1 MiB) every block is "small" and never split anyway.
      if (!parse_unsigned(key, value, 2, uint64_t{1} << 30, &v, error)) return false;
      c.max_split_size = static_cast<size_t>(v) << 20;
    } else if (key == "large_segment_mb") {
      if (!parse_unsigned(key, value, 2, 1024, &v, error)) return false;
      c.large_segment = static_cast<size_t>(v) << 20;
    } else if (key == "caching") {
      if (!parse_unsigned(key, value, 0, 1, &v, error)) return false;
      c.caching = v == 1;
    } else {
      *error = std::string(kAllocConfEnv) + ": unknown key '" + key +
               "'; the keys are max_split_size_mb, large_segment_mb and caching";
      return false;
    }
    if (comma >= text.size()) break;
  }
  *config = c;
  return true;
}

}  // namespace slimtensor_cuda

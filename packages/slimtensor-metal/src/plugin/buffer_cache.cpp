// buffer_cache.cpp: buckets and the limit of the free-buffer cache (Note [Buffer cache]).
#include "buffer_cache.h"

#include "checked.h"

namespace slimtensor_metal {

bool BufferCache::bucket_length(uint64_t n, uint64_t* out) {
  if (n == 0) return false;
  constexpr uint64_t kMin = 256, kMiB = 1ull << 20;
  if (n <= kMin) {
    *out = kMin;
    return true;
  }
  if (n <= kMiB) {
    uint64_t b = kMin;
    while (b < n) b <<= 1;
    *out = b;
    return true;
  }
  return round_up_u64(n, kMiB, out);
}

void BufferCache::put(const CachedBuffer& b, std::vector<CachedBuffer>* evicted) {
  if (b.length > limit_) {  // larger than the whole cache: never kept
    evicted->push_back(b);
    stats_.releases++;
    return;
  }
  free_[b.length].push_back(b);
  stats_.cached_bytes += static_cast<int64_t>(b.length);
  stats_.cached_buffers++;
  // Over the limit: give back the oldest entries of the largest buckets first (they free the most memory
  // per release and are the least likely to be asked for again).
  while (static_cast<uint64_t>(stats_.cached_bytes) > limit_ && !free_.empty()) {
    auto it = std::prev(free_.end());
    auto& v = it->second;
    evicted->push_back(v.front());
    stats_.cached_bytes -= static_cast<int64_t>(v.front().length);
    stats_.cached_buffers--;
    stats_.evictions++;
    stats_.releases++;
    v.erase(v.begin());
    if (v.empty()) free_.erase(it);
  }
  if (stats_.cached_bytes > stats_.peak_cached_bytes) stats_.peak_cached_bytes = stats_.cached_bytes;
}

}  // namespace slimtensor_metal

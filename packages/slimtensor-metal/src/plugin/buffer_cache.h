// buffer_cache.h: the size-bucketed cache of free MTLBuffers, its stream-ordered reuse and its statistics.
//
// Note [Buffer cache]
// A freed buffer is kept in the bucket of its length (bucket_length: powers of two from 256 bytes up to
// 1 MiB, then whole MiB) and handed to the next allocation of that bucket, so a model's steady state makes
// no new MTLBuffers. Reuse is stream-ordered (Note [Streams] of the plugin ABI): an entry freed on stream S
// after work up to serial N may go to another stream only once S has completed N; on S itself at once.
// The cache holds at most `limit` bytes (SLIMTENSOR_MPS_CACHE_LIMIT_MB, default 1024); what does not fit is
// given back to Metal. empty_cache() gives back every entry whose GPU work has finished. The cache never
// calls Metal itself: it returns what must be released, and the context releases it (so it is plain
// bookkeeping, tested without a device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

namespace slimtensor_metal {

class Stream;

struct CachedBuffer {
  void* handle = nullptr;
  void* contents = nullptr;
  uint64_t length = 0;
  Stream* stream = nullptr;   // the stream its last use was queued on
  uint64_t ready_serial = 0;  // free for other streams once `stream` has completed this serial
};

struct CacheStats {
  int64_t hits = 0, misses = 0, releases = 0, evictions = 0, empty_cache_calls = 0;
  int64_t cached_bytes = 0, cached_buffers = 0, peak_cached_bytes = 0;
};

class BufferCache {
 public:
  explicit BufferCache(uint64_t limit_bytes) : limit_(limit_bytes) {}
  // The buffer length an allocation of n bytes gets; false on overflow or n == 0.
  static bool bucket_length(uint64_t n, uint64_t* out);
  // Takes a buffer of exactly `length` usable on `stream` (ready(entry) says whether another stream's entry
  // has completed); counts a hit or a miss.
  template <class Ready>
  bool take(uint64_t length, Stream* stream, Ready&& ready, CachedBuffer* out) {
    auto it = free_.find(length);
    if (it != free_.end()) {
      auto& v = it->second;
      for (size_t i = v.size(); i-- > 0;) {  // most recently freed first: warm in the caches
        if (v[i].stream == stream || ready(v[i])) {
          *out = v[i];
          v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
          if (v.empty()) free_.erase(it);
          stats_.hits++;
          stats_.cached_bytes -= static_cast<int64_t>(out->length);
          stats_.cached_buffers--;
          return true;
        }
      }
    }
    stats_.misses++;
    return false;
  }
  // Keeps a freed buffer; whatever no longer fits under the limit comes back in *evicted.
  void put(const CachedBuffer& b, std::vector<CachedBuffer>* evicted);
  // Removes every entry for which ready(entry) holds (empty_cache), or all of them (shutdown).
  template <class Ready>
  std::vector<CachedBuffer> drain(Ready&& ready) {
    std::vector<CachedBuffer> out;
    for (auto it = free_.begin(); it != free_.end();) {
      auto& v = it->second;
      for (size_t i = 0; i < v.size();) {
        if (ready(v[i])) {
          out.push_back(v[i]);
          stats_.cached_bytes -= static_cast<int64_t>(v[i].length);
          stats_.cached_buffers--;
          v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          ++i;
        }
      }
      it = v.empty() ? free_.erase(it) : std::next(it);
    }
    stats_.releases += static_cast<int64_t>(out.size());
    return out;
  }
  CacheStats& stats() { return stats_; }
  const CacheStats& stats() const { return stats_; }
  uint64_t limit() const { return limit_; }

 private:
  uint64_t limit_;
  std::map<uint64_t, std::vector<CachedBuffer>> free_;  // bucket length -> entries, oldest first
  CacheStats stats_;
};

}  // namespace slimtensor_metal

// runtime/events.cpp: the shared event log behind nested traces (Note [Tracing cost]).
#include "slimtensor/runtime/events.h"

#include <chrono>
#include <mutex>
#include <set>

namespace slimtensor {
namespace events {

std::atomic<int> g_active_traces{0};

namespace {
std::mutex g_mutex;
std::vector<Event> g_log;        // events since g_log_base, guarded by g_mutex
size_t g_log_base = 0;           // absolute sequence number of g_log[0]
std::multiset<size_t> g_starts;  // absolute start of each active trace, guarded by g_mutex
}  // namespace

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record(Event event) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_starts.empty()) return;  // the last trace stopped between the caller's check and here
  g_log.push_back(std::move(event));
}

size_t start_trace() {
  std::lock_guard<std::mutex> lock(g_mutex);
  const size_t start = g_log_base + g_log.size();
  g_starts.insert(start);
  g_active_traces.fetch_add(1, std::memory_order_relaxed);
  return start;
}

std::vector<Event> stop_trace(size_t first) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_starts.find(first);
  if (it == g_starts.end()) return {};
  g_starts.erase(it);
  g_active_traces.fetch_sub(1, std::memory_order_relaxed);
  std::vector<Event> mine(g_log.begin() + static_cast<std::ptrdiff_t>(first - g_log_base), g_log.end());
  // Drop the prefix no active trace needs any more.
  const size_t keep_from = g_starts.empty() ? g_log_base + g_log.size() : *g_starts.begin();
  g_log.erase(g_log.begin(), g_log.begin() + static_cast<std::ptrdiff_t>(keep_from - g_log_base));
  g_log_base = keep_from;
  return mine;
}

}  // namespace events
}  // namespace slimtensor

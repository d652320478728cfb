// tests/aoti/cpp/threads_stress.cpp: the shims' per-thread caches and counters under real concurrency.
//
// Threads share one storage (views made and dropped concurrently: the refcount, including the sole-owner
// release, must stay exact), make handles on one thread and delete them on another (handle blocks and
// storage headers migrate between per-thread caches; counts go negative in one thread's block and
// positive in another's), and exit while doing so (their caches and counter blocks are folded at thread
// exit). Afterwards every counter must be back at its baseline.
// Prints "ok" and exits 0, or prints what differs and exits 1.
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "slimtensor/c/shim.h"
#include "slimtensor/runtime/memory_stats.h"

namespace {

int g_failures = 0;

void expect_ok(AOTITorchError rc, const char* what) {
  if (rc != AOTI_TORCH_SUCCESS) {
    std::printf("%s failed: %s\n", what, slimtensor_last_error());
    ++g_failures;
  }
}

struct Queue {  // handles made by producers, deleted by the consumer
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<AtenTensorHandle> items;
  int producers_left = 0;
};

}  // namespace

int main() {
  const slimtensor::MemoryStats before = slimtensor::memory_stats(slimtensor::kCPU);
  const int64_t sizes[2] = {4, 8}, strides[2] = {8, 1}, view_sizes[2] = {8, 4}, view_strides[2] = {1, 8};
  AtenTensorHandle base = nullptr;
  expect_ok(aoti_torch_empty_strided(2, sizes, strides, 6, 0, 0, &base), "empty_strided(base)");

  constexpr int kViewThreads = 4, kProducers = 3, kIters = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kViewThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIters; ++i) {
        AtenTensorHandle v = nullptr, w = nullptr;
        expect_ok(aoti_torch__reinterpret_tensor(base, 2, view_sizes, view_strides, 0, &v), "_reinterpret_tensor");
        expect_ok(aoti_torch_new_tensor_handle(v, &w), "new_tensor_handle");
        expect_ok(aoti_torch_delete_tensor_object(v), "delete(view)");
        expect_ok(aoti_torch_delete_tensor_object(w), "delete(new handle)");
      }
    });
  }

  Queue q;
  q.producers_left = kProducers;
  static float blob[32];
  for (int t = 0; t < kProducers; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        AtenTensorHandle h = nullptr;
        if ((i + t) % 2 == 0) {
          expect_ok(aoti_torch_empty_strided(2, sizes, strides, 6, 0, 0, &h), "empty_strided");
        } else {
          expect_ok(aoti_torch_create_tensor_from_blob_v2(blob, 2, sizes, strides, 0, 6, 0, 0, &h, 0, nullptr, 0),
                    "create_tensor_from_blob_v2");
        }
        std::lock_guard<std::mutex> lock(q.mutex);
        q.items.push_back(h);
        q.ready.notify_one();
      }
      std::lock_guard<std::mutex> lock(q.mutex);
      --q.producers_left;
      q.ready.notify_one();
    });
  }
  std::thread consumer([&] {
    for (;;) {
      std::unique_lock<std::mutex> lock(q.mutex);
      q.ready.wait(lock, [&] { return !q.items.empty() || q.producers_left == 0; });
      if (q.items.empty()) return;
      AtenTensorHandle h = q.items.front();
      q.items.pop_front();
      lock.unlock();
      expect_ok(aoti_torch_delete_tensor_object(h), "delete(from another thread)");
    }
  });
  for (std::thread& th : threads) th.join();
  consumer.join();

  // The base's storage must now be freed by this delete: an extra or a lost reference would leave
  // live_storages off (or crash).
  expect_ok(aoti_torch_delete_tensor_object(base), "delete(base)");

  const slimtensor::MemoryStats after = slimtensor::memory_stats(slimtensor::kCPU);
  struct Row {
    const char* name;
    int64_t before, after;
  } rows[] = {
      {"live_aoti_handles", before.live_aoti_handles, after.live_aoti_handles},
      {"live_tensors", before.live_tensors, after.live_tensors},
      {"live_storages", before.live_storages, after.live_storages},
      {"live_bytes", before.live_bytes, after.live_bytes},
  };
  for (const Row& r : rows) {
    if (r.before != r.after) {
      std::printf("%s: %lld before, %lld after\n", r.name, static_cast<long long>(r.before),
                  static_cast<long long>(r.after));
      ++g_failures;
    }
  }
  const int64_t expected_allocations = 1 + kProducers * kIters / 2;  // base + the producers' empty_strided
  const int64_t allocations = after.total_allocations - before.total_allocations;
  if (allocations != expected_allocations) {
    std::printf("total_allocations grew by %lld, expected %lld\n", static_cast<long long>(allocations),
                static_cast<long long>(expected_allocations));
    ++g_failures;
  }
  if (slimtensor_aoti_live_handles() != 0) {
    std::printf("slimtensor_aoti_live_handles() = %lld\n", static_cast<long long>(slimtensor_aoti_live_handles()));
    ++g_failures;
  }
  if (g_failures) return 1;
  std::puts("ok");
  return 0;
}

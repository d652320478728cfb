// runtime/parallel.cpp: the worker pool behind parallel_for (threads start lazily, on first parallel use).
#include "runtime/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "slimtensor/base/error.h"

namespace slimtensor {
namespace {

int default_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(std::min(hw, 64u));
}

std::atomic<int> g_threads{default_threads()};
thread_local bool t_in_worker = false;

class Pool {
 public:
  // Runs tasks 1..count-1 on workers, task 0 on the caller, and waits for all.
  void run(int count, const std::function<void(int)>& task) {
    std::unique_lock<std::mutex> run_lock(run_mutex_);  // one parallel region at a time
    ensure_workers(count - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = &task;
      next_ = 1;
      count_ = count;
      pending_ = count - 1;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    std::exception_ptr mine;
    try {
      task(0);
    } catch (...) {
      mine = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    task_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.detach();  // process exit: never join from a static destructor
  }

 private:
  void ensure_workers(int n) {
    while (static_cast<int>(workers_.size()) < n) workers_.emplace_back([this] { work(); });
  }

  void work() {
    t_in_worker = true;
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || (generation_ != seen && next_ < count_); });
      if (stop_) return;
      seen = generation_;
      while (next_ < count_) {
        const int index = next_++;
        const auto* task = task_;
        lock.unlock();
        try {
          (*task)(index);
        } catch (...) {
          std::lock_guard<std::mutex> elock(error_mutex_);
          if (!error_) error_ = std::current_exception();
        }
        lock.lock();
        if (--pending_ == 0) done_.notify_all();
      }
    }
  }

  std::mutex run_mutex_, mutex_, error_mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* task_ = nullptr;
  int next_ = 0, count_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: workers may outlive static destruction order
  return *p;
}

}  // namespace

int num_threads() { return g_threads.load(std::memory_order_relaxed); }

void set_num_threads(int n) {
  ST_CHECK(n >= 1 && n <= 64, Value, "set_num_threads(): expected 1..64 threads but got ", n);
  g_threads.store(n, std::memory_order_relaxed);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  const int chunks = static_cast<int>(std::min<int64_t>(num_threads(), max_chunks));
  if (chunks <= 1 || t_in_worker) {
    fn(0, n);
    return;
  }
  const int64_t per = (n + chunks - 1) / chunks;
  pool().run(chunks, [&](int i) {
    const int64_t begin = i * per, end = std::min(n, begin + per);
    if (begin < end) fn(begin, end);
  });
}

}  // namespace slimtensor

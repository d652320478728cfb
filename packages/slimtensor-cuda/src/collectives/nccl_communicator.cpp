// nccl_communicator.cpp: NCCL communicators as slimtensor collective groups (slimtensor/c/nccl_collectives.h).
//
// Note [NCCL communicators]
// - Creation: non-blocking (ncclConfig_t blocking = 0, Note [NCCL config]); ncclCommGetAsyncError is polled
//   until the communicator is ready or the timeout passes, then it is aborted: a rank that never arrives is
//   an error naming the group, never a hang.
// - all_reduce is queued in place on the calling thread's current stream of the tensor's device (Note
//   [Current streams]: inside a model run, the model's stream); an event recorded after it is what
//   wait(data) makes the then-current stream wait on (cudaStreamWaitEvent: the host does not block, as
//   torch's wait_tensor). A non-blocking communicator may answer ncclInProgress while it connects: the
//   call is complete, and the event recorded, once ncclCommGetAsyncError says so (polled, within the
//   timeout).
// - A watchdog thread per communicator watches the events of work in flight: when one is not done within
//   the timeout, or NCCL reports an asynchronous error (a peer that died: ncclRemoteError, or a failed
//   connection), it aborts the communicator (ncclCommAbort makes NCCL's kernels return, so nothing waits on
//   them forever) and records why; every later all_reduce or wait of the group fails with that message.
//   Without work in flight it sleeps on a condition variable.
// - Lifetime: an intrusive count; the creator holds one reference, a registered group another (dropped by
//   the core's release once nothing in flight refers to it). The last one waits (within the timeout) for
//   the work in flight, finalizes and destroys the communicator, or aborts it past the timeout.
#include "slimtensor/c/nccl_collectives.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "collectives/nccl_api.h"
#include "device/error.h"
#include "device/runtime.h"
#include "device/streams.h"
#include "slimtensor/c/collectives.h"

namespace slimtensor_cuda::collectives {
namespace {

using Clock = std::chrono::steady_clock;
using nccl::Result;

std::atomic<int64_t> g_live{0};

// A CUDA event shared by the watchdog (is the work done?) and wait() (make a stream wait on it).
struct Event {
  cudaEvent_t event = nullptr;
  ~Event() {
    if (event) cudaEventDestroy(event);
  }
};
using EventRef = std::shared_ptr<Event>;

const char* const kOpNames[] = {"sum", "avg", "product", "min", "max"};

class Communicator {
 public:
  Communicator(const nccl::Api* api, int rank, int size, int device, double timeout_s)
      : api_(api), rank_(rank), size_(size), device_(device), timeout_(std::chrono::duration<double>(timeout_s)) {
    ++g_live;
  }
  ~Communicator() { --g_live; }

  void retain() { refs_.fetch_add(1); }
  void release() {
    if (refs_.fetch_sub(1) == 1) {
      shutdown();
      delete this;
    }
  }

  int init(const nccl::UniqueId& id) {
    const char* fn = "slimtensor_cuda_nccl_create";
    DeviceGuard guard(device_);
    if (guard.status() != cudaSuccess) return fail_cuda(fn, "cudaSetDevice", guard.status());
    nccl::Config config{
        sizeof(nccl::Config), nccl::kConfigMagic,    nccl::kConfigVersion,
        /*blocking=*/0,       nccl::kConfigUndefInt, nccl::kConfigUndefInt, nccl::kConfigUndefInt, nullptr};
    const Result r = api_->CommInitRankConfig(&comm_, size_, id, rank_, &config);
    if (r != nccl::kSuccess && r != nccl::kInProgress) {
      const std::string why = describe(r);
      abort_comm();
      return fail("%s(): ncclCommInitRankConfig (rank %d of %d, cuda:%d) failed: %s", fn, rank_, size_, device_,
                  why.c_str());
    }
    std::string why;
    if (!settle("ncclCommInitRankConfig", &why)) {
      abort_comm();
      return fail("%s(): the NCCL communicator (rank %d of %d, cuda:%d) could not be set up: %s", fn, rank_, size_,
                  device_, why.c_str());
    }
    watchdog_ = std::thread([this] { watch(); });
    return 0;
  }

  void set_name(const char* name) {
    std::lock_guard<std::mutex> lock(mutex_);
    name_ = name;
  }

  int all_reduce(void* data, int64_t numel, int32_t dtype, int32_t device, int32_t op) {
    const char* fn = "all_reduce";
    const int type = nccl::datatype(dtype), red = nccl::reduce_op(op);
    if (red < 0) return fail("%s(): reduce op %d is not one of ST_REDUCE_SUM..ST_REDUCE_MAX", fn, op);
    if (type < 0) {
      return fail(
          "%s(): NCCL cannot reduce c10 dtype %d (it reduces int8, uint8, int32, uint32, int64, uint64, float16, "
          "bfloat16, float32, float64); convert the tensor first",
          fn, dtype);
    }
    if (op == ST_REDUCE_AVG && !(type >= 6 && type <= 9)) {
      return fail("%s(): avg needs a floating-point tensor (NCCL's integer average truncates); use sum and divide", fn);
    }
    if (device != device_) {
      return fail(
          "%s(): the tensor is on cuda:%d but group '%s' (rank %d) communicates on cuda:%d; each rank uses one GPU "
          "(its LOCAL_RANK): move the tensor there",
          fn, device, name_.c_str(), rank_, device_);
    }
    if (numel < 0) return fail("%s(): numel is negative (%lld)", fn, static_cast<long long>(numel));
    if (numel > 0 && data == nullptr) return fail("%s(): data is NULL", fn);
    DeviceGuard guard(device_);
    if (guard.status() != cudaSuccess) return fail_cuda(fn, "cudaSetDevice", guard.status());
    const cudaStream_t stream = current_stream(device_);
    auto done = std::make_shared<Event>();
    ST_CUDA_TRY(fn, "cudaEventCreateWithFlags", cudaEventCreateWithFlags(&done->event, cudaEventDisableTiming));
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!failure_.empty()) return failed_already(fn);
      const Result r = api_->AllReduce(data, data, static_cast<size_t>(numel), type, red, comm_, stream);
      std::string why;
      if (r != nccl::kSuccess && r != nccl::kInProgress) {
        why = describe(r);
      } else if (r == nccl::kInProgress) {
        settle("ncclAllReduce", &why);
      }
      if (!why.empty()) {
        abort_locked("ncclAllReduce failed: " + why);
        return failed_already(fn);
      }
      const cudaError_t e = cudaEventRecord(done->event, stream);
      if (e != cudaSuccess) {
        cudaGetLastError();
        return fail_cuda(fn, "cudaEventRecord", e);
      }
      std::vector<EventRef>& waits = ready_[reinterpret_cast<uintptr_t>(data)];
      // Reductions never waited for (allowed, as in torch) must not pile up: forget those that are done.
      waits.erase(std::remove_if(waits.begin(), waits.end(),
                                 [](const EventRef& e) { return cudaEventQuery(e->event) == cudaSuccess; }),
                  waits.end());
      waits.push_back(done);
      inflight_.push_back(InFlight{done, Clock::now() + deadline_span(), kOpNames[op], numel});
    }
    wake_.notify_one();
    return 0;
  }

  int wait(void* data, int32_t device) {
    const char* fn = "wait_tensor";
    std::vector<EventRef> events;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = ready_.find(reinterpret_cast<uintptr_t>(data));
      if (it != ready_.end()) {
        events = std::move(it->second);
        ready_.erase(it);
      }
      if (!failure_.empty()) return failed_already(fn);
    }
    if (events.empty()) return 0;  // nothing in flight on this memory: nothing to wait for (as torch)
    DeviceGuard guard(device);
    if (guard.status() != cudaSuccess) return fail_cuda(fn, "cudaSetDevice", guard.status());
    const cudaStream_t stream = current_stream(device);
    for (const EventRef& e : events) ST_CUDA_TRY(fn, "cudaStreamWaitEvent", cudaStreamWaitEvent(stream, e->event, 0));
    return 0;
  }

 private:
  struct InFlight {
    EventRef done;
    Clock::time_point deadline;
    const char* op;
    int64_t numel;
  };

  std::string seconds() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", timeout_.count());
    return buf;
  }

  Clock::duration deadline_span() const { return std::chrono::duration_cast<Clock::duration>(timeout_); }

  std::string describe(Result r) const {
    std::string s = nccl::result_name(r);
    s += " (";
    s += api_->GetErrorString(r);
    s += ")";
    const char* last = comm_ ? api_->GetLastError(comm_) : nullptr;
    if (last && *last) {
      s += ": ";
      s += last;
    }
    return s;
  }

  int failed_already(const char* fn) const {
    return fail(
        "%s(): group '%s' (rank %d of %d, cuda:%d) cannot be used: %s. Call "
        "slimtensor.distributed.destroy_process_group() and start the job again",
        fn, name_.c_str(), rank_, size_, device_, failure_.c_str());
  }

  // Polls ncclCommGetAsyncError until the communicator's pending call is complete; false with *why on an
  // error or when the timeout passes.
  bool settle(const char* what, std::string* why) {
    const Clock::time_point deadline = Clock::now() + deadline_span();
    while (true) {
      Result state = nccl::kInProgress;
      const Result r = api_->CommGetAsyncError(comm_, &state);
      if (r != nccl::kSuccess) {
        *why = std::string("ncclCommGetAsyncError failed: ") + describe(r);
        return false;
      }
      if (state == nccl::kSuccess) return true;
      if (state != nccl::kInProgress) {
        *why = describe(state);
        return false;
      }
      if (Clock::now() > deadline) {
        *why = std::string(what) + " did not complete within " + seconds() +
               " s: another rank has not joined or has died (each rank of the group must make the same calls)";
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  void abort_comm() {
    if (comm_) api_->CommAbort(comm_);
    comm_ = nullptr;
  }

  // With mutex_ held: aborts the communicator once, recording why.
  void abort_locked(const std::string& why) {
    if (failure_.empty()) failure_ = why + "; the NCCL communicator was aborted";
    abort_comm();
    inflight_.clear();
  }

  // Note [NCCL communicators]: the watchdog.
  void watch() {
    cudaSetDevice(device_);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      if (inflight_.empty() || !failure_.empty()) {
        wake_.wait(lock, [this] { return stopping_ || (!inflight_.empty() && failure_.empty()); });
        continue;
      }
      const Clock::time_point now = Clock::now();
      while (!inflight_.empty()) {
        InFlight& front = inflight_.front();
        const cudaError_t q = cudaEventQuery(front.done->event);
        if (q == cudaSuccess) {
          inflight_.pop_front();
          continue;
        }
        if (q != cudaErrorNotReady) {
          cudaGetLastError();
          abort_locked(std::string("a collective's completion event failed: ") + cudaGetErrorName(q) + " (" +
                       cudaGetErrorString(q) + ")");
        } else if (now > front.deadline) {
          abort_locked(std::string("all_reduce(") + front.op + ") of " + std::to_string(front.numel) +
                       " elements did not finish within " + seconds() +
                       " s (the group's timeout): a peer rank has likely died or stopped calling collectives");
        }
        break;
      }
      if (comm_ && failure_.empty()) {
        Result state = nccl::kSuccess;
        if (api_->CommGetAsyncError(comm_, &state) == nccl::kSuccess && state != nccl::kSuccess &&
            state != nccl::kInProgress) {
          abort_locked("NCCL reported an asynchronous error (a peer rank died or a connection failed): " +
                       describe(state));
        }
      }
      wake_.wait_for(lock, std::chrono::milliseconds(1));
    }
  }

  // The last reference: stop the watchdog, then finish or abort the communicator.
  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    if (!comm_) return;
    DeviceGuard guard(device_);
    // Work still in flight must end first (within the timeout), else the communicator is aborted.
    const Clock::time_point deadline = Clock::now() + deadline_span();
    bool drained = true;
    for (const InFlight& w : inflight_) {
      while (cudaEventQuery(w.done->event) == cudaErrorNotReady) {
        if (Clock::now() > deadline) {
          drained = false;
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      if (!drained) break;
    }
    cudaGetLastError();
    inflight_.clear();
    ready_.clear();
    std::string ignored;
    const Result r = drained ? api_->CommFinalize(comm_) : nccl::kInProgress;
    if (drained && (r == nccl::kSuccess || r == nccl::kInProgress) && settle("ncclCommFinalize", &ignored)) {
      api_->CommDestroy(comm_);
      comm_ = nullptr;
    } else {
      abort_comm();
    }
  }

  const nccl::Api* api_;
  const int rank_, size_, device_;
  const std::chrono::duration<double> timeout_;
  std::atomic<int> refs_{1};
  nccl::Comm comm_ = nullptr;
  std::string name_ = "(unregistered)";

  std::mutex mutex_;  // guards comm_ against abort, failure_, inflight_, ready_, stopping_
  std::condition_variable wake_;
  std::string failure_;                                         // set once, when aborted
  std::deque<InFlight> inflight_;                               // watched, oldest first
  std::unordered_map<uintptr_t, std::vector<EventRef>> ready_;  // what wait(data) waits on
  bool stopping_ = false;
  std::thread watchdog_;
};

Communicator* as_comm(void* comm) { return static_cast<Communicator*>(comm); }

// ---- the st_collective_group table (Note [Collective groups]) --------------------------------------------
int32_t group_all_reduce(void* context, st_memory_ref data, int64_t numel, int32_t dtype, int32_t device_type,
                         int32_t op) {
  if (device_type != 1) {  // c10 DeviceType CUDA
    return fail(
        "all_reduce(): the nccl backend reduces CUDA tensors, and this one is on device type %d; move it to its "
        "rank's GPU (t.to('cuda'))",
        device_type);
  }
  return as_comm(context)->all_reduce(static_cast<char*>(data.handle) + data.byte_offset, numel, dtype,
                                      data.device_index, op);
}

int32_t group_wait(void* context, st_memory_ref data, int32_t device_type) {
  if (device_type != 1) return 0;  // never reduced here: nothing to wait for
  return as_comm(context)->wait(static_cast<char*>(data.handle) + data.byte_offset, data.device_index);
}

const char* group_last_error(void*) { return last_error(); }

void group_release(void* context) { as_comm(context)->release(); }

}  // namespace
}  // namespace slimtensor_cuda::collectives

using slimtensor_cuda::fail;
using slimtensor_cuda::collectives::as_comm;
using slimtensor_cuda::collectives::Communicator;
namespace nccl = slimtensor_cuda::collectives::nccl;

extern "C" {

int32_t slimtensor_cuda_nccl_version(int32_t* version) {
  const char* fn = "slimtensor_cuda_nccl_version";
  if (version == nullptr) return fail("%s(): version is NULL", fn);
  const nccl::Api* api = nccl::api(fn);
  if (api == nullptr) return 1;
  int v = 0;
  const nccl::Result r = api->GetVersion(&v);
  if (r != nccl::kSuccess) return fail("%s(): ncclGetVersion failed: %s", fn, api->GetErrorString(r));
  *version = v;
  return 0;
}

int32_t slimtensor_cuda_nccl_unique_id(uint8_t* id, int64_t id_bytes) {
  const char* fn = "slimtensor_cuda_nccl_unique_id";
  if (id == nullptr || id_bytes != static_cast<int64_t>(sizeof(nccl::UniqueId)))
    return fail("%s(): id must point to %zu bytes", fn, sizeof(nccl::UniqueId));
  const nccl::Api* api = nccl::api(fn);
  if (api == nullptr) return 1;
  nccl::UniqueId made{};
  const nccl::Result r = api->GetUniqueId(&made);
  if (r != nccl::kSuccess)
    return fail("%s(): ncclGetUniqueId failed: %s (%s)", fn, nccl::result_name(r), api->GetErrorString(r));
  std::memcpy(id, &made, sizeof(made));
  return 0;
}

int32_t slimtensor_cuda_nccl_create(const uint8_t* id, int64_t id_bytes, int32_t rank, int32_t size, int32_t device,
                                    double timeout_s, void** comm) {
  const char* fn = "slimtensor_cuda_nccl_create";
  if (comm == nullptr) return fail("%s(): comm is NULL", fn);
  *comm = nullptr;
  if (id == nullptr || id_bytes != static_cast<int64_t>(sizeof(nccl::UniqueId)))
    return fail("%s(): id must point to the %zu bytes of an NCCL unique id", fn, sizeof(nccl::UniqueId));
  if (size < 1 || rank < 0 || rank >= size) return fail("%s(): rank %d must be in [0, size=%d)", fn, rank, size);
  if (!(timeout_s > 0)) return fail("%s(): timeout_s must be > 0, got %g", fn, timeout_s);
  if (slimtensor_cuda::check_device(fn, device) != 0) return 1;
  const nccl::Api* api = nccl::api(fn);
  if (api == nullptr) return 1;
  nccl::UniqueId uid;
  std::memcpy(&uid, id, sizeof(uid));
  auto* c = new Communicator(api, rank, size, device, timeout_s);
  if (c->init(uid) != 0) {
    c->release();
    return 1;
  }
  *comm = c;
  return 0;
}

int32_t slimtensor_cuda_nccl_register(void* comm, const char* group_name) {
  const char* fn = "slimtensor_cuda_nccl_register";
  if (comm == nullptr || group_name == nullptr) return fail("%s(): comm and group_name must not be NULL", fn);
  namespace c = slimtensor_cuda::collectives;
  st_collective_group table{
      sizeof(st_collective_group), comm, c::group_all_reduce, c::group_wait, c::group_last_error, c::group_release};
  as_comm(comm)->retain();  // the group's reference, dropped by group_release
  as_comm(comm)->set_name(group_name);
  if (slimtensor_register_collective_group(group_name, &table) != 0) {
    const std::string why = slimtensor_last_error();
    as_comm(comm)->release();
    return fail("%s(): %s", fn, why.c_str());
  }
  return 0;
}

int32_t slimtensor_cuda_nccl_all_reduce(void* comm, void* data, int64_t numel, int32_t dtype, int32_t device,
                                        int32_t op) {
  if (comm == nullptr) return fail("slimtensor_cuda_nccl_all_reduce(): comm is NULL");
  return as_comm(comm)->all_reduce(data, numel, dtype, device, op);
}

int32_t slimtensor_cuda_nccl_wait(void* comm, void* data, int32_t device) {
  if (comm == nullptr) return fail("slimtensor_cuda_nccl_wait(): comm is NULL");
  return as_comm(comm)->wait(data, device);
}

void slimtensor_cuda_nccl_release(void* comm) {
  if (comm != nullptr) as_comm(comm)->release();
}

int32_t slimtensor_cuda_nccl_datatype(int32_t dtype) { return nccl::datatype(dtype); }
int32_t slimtensor_cuda_nccl_reduce_op(int32_t op) { return nccl::reduce_op(op); }
int64_t slimtensor_cuda_nccl_live_communicators(void) { return slimtensor_cuda::collectives::g_live.load(); }

}  // extern "C"

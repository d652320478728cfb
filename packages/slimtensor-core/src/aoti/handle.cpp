// src/aoti/handle.cpp: handle allocation, counting, tracing, the debug registry and the thread-local last error.
#include "aoti/handle.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "slimtensor/checked_math.h"
#include "slimtensor/events.h"
#include "slimtensor/memory_stats.h"

namespace slimtensor::aoti {

const bool g_debug_handles = [] {
  const char* v = std::getenv("SLIMTENSOR_DEBUG_HANDLES");
  return v && v[0] && std::strcmp(v, "0") != 0;
}();

namespace {

thread_local char t_last_error[1024] = "";

// Note [Debug handle registry]
// Read once when the library loads. The registry is a leaked heap object so that handles deleted
// by static destructors of other libraries (a model's constants at exit) still find it.

struct Registry {
  std::mutex mutex;
  std::unordered_set<const void*> live;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// Note [Handle blocks]
// Handles are made and deleted at a high rate (every intermediate buffer of a model run). Each thread keeps
// up to kCachedBlocks freed handle blocks and reuses them before asking malloc; a block freed on another
// thread simply joins that thread's cache. The cache is freed when its thread exits.
constexpr int kCachedBlocks = 256;
struct BlockCache;
// The hot path reads this initial-exec pointer (no __tls_get_addr call); the cache object it points to
// is general-dynamic TLS, touched once per thread, and empties itself at thread exit.
thread_local BlockCache* t_cache __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_cache_gone __attribute__((tls_model("initial-exec"))) = false;  // the thread is exiting

struct BlockCache {
  void* head = nullptr;
  int count = 0;
  ~BlockCache() {
    t_cache = nullptr;
    t_cache_gone = true;  // handles made or deleted later in this thread's exit use the heap directly
    while (head) {
      void* next = *static_cast<void**>(head);
      ::operator delete(head);
      head = next;
    }
    count = 0;
  }
};

__attribute__((noinline)) BlockCache* first_cache_use() {
  thread_local BlockCache cache;
  t_cache = &cache;
  return t_cache;
}

inline BlockCache& cache() { return t_cache ? *t_cache : *first_cache_use(); }

void* take_block() {
  if (t_cache_gone) return ::operator new(sizeof(AtenTensorOpaque));
  BlockCache& c = cache();
  if (void* p = c.head) {
    c.head = *static_cast<void**>(p);
    --c.count;
    return p;
  }
  return ::operator new(sizeof(AtenTensorOpaque));
}

void give_block(void* p) noexcept {
  if (t_cache_gone) {
    ::operator delete(p);
    return;
  }
  BlockCache& c = cache();
  if (c.count < kCachedBlocks) {
    *static_cast<void**>(p) = c.head;
    c.head = p;
    ++c.count;
  } else {
    ::operator delete(p);
  }
}

void trace(EventKind kind, AtenTensorHandle h, const char* op) {
  const Tensor& t = h->tensor;
  Event e;
  e.kind = kind;
  e.time_ns = events::now_ns();
  e.id = reinterpret_cast<uint64_t>(h);
  e.op = op;
  if (t.defined()) {
    e.storage_id = t.storage()->id();
    e.bytes = t.nbytes();
    e.device = t.device();
    e.dtype = static_cast<int8_t>(t.dtype());
    e.sizes.assign(t.sizes(), t.sizes() + t.ndim());
    e.strides.assign(t.strides(), t.strides() + t.ndim());
    e.offset = t.storage_offset();
  }
  events::record(std::move(e));
}

}  // namespace

char* last_error_buffer() noexcept { return t_last_error; }
int64_t live_handles() noexcept {
  int64_t n = 0;
  for (int t = 0; t < kMaxDeviceTypes; ++t) n += memory_stats(static_cast<DeviceType>(t)).live_aoti_handles;
  return n;
}

AtenTensorHandle make_handle(Tensor&& tensor, const char* op) {
  DeviceType type = tensor.defined() ? tensor.device().type : kCPU;
  void* block = take_block();
  auto* h = new (block) AtenTensorOpaque{kHandleMagic, type, std::move(tensor)};
  if (g_debug_handles) {
    Registry& r = registry();
    try {
      std::lock_guard<std::mutex> lock(r.mutex);
      r.live.insert(h);
    } catch (...) {
      h->~AtenTensorOpaque();
      give_block(h);
      throw;
    }
  }
  stats::aoti_handle_created(type);
  if (events::tracing_active()) trace(EventKind::HandleCreate, h, op);
  return h;
}

void delete_handle(AtenTensorHandle h) noexcept {
  if (events::tracing_active()) {
    try {
      trace(EventKind::HandleDelete, h, "aoti_torch_delete_tensor_object");
    } catch (...) {
      // Tracing is best effort; the delete itself must happen.
    }
  }
  if (g_debug_handles) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.live.erase(h);
  }
  DeviceType type = h->counted_type;
  h->magic = 0;
  h->~AtenTensorOpaque();
  give_block(h);
  stats::aoti_handle_destroyed(type);
}

void check_handle_slow(AtenTensorHandle h, const char* function, const char* arg) {
  if (__builtin_expect(h == nullptr, 0)) {
    fail(ErrorKind::Value, function, "(): ", arg,
         " is NULL; pass a handle returned by an aoti_torch_* function");
  }
  if (g_debug_handles) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.live.count(h)) {
      fail(ErrorKind::Value, function, "(): ", arg, " = ", static_cast<const void*>(h),
           " is not a live slimtensor handle (already deleted, or made by another library)");
    }
    return;
  }
  if (__builtin_expect(h->magic != kHandleMagic, 0)) {
    fail(ErrorKind::Value, function, "(): ", arg, " = ", static_cast<const void*>(h),
         " is not a live slimtensor handle (already deleted, or made by another library); "
         "run with SLIMTENSOR_DEBUG_HANDLES=1 to track handles");
  }
}

void set_last_error(const char* function, const char* message) noexcept {
  size_t n = std::strlen(function);
  if (std::strncmp(message, function, n) == 0 && message[n] == '(') {
    std::snprintf(t_last_error, sizeof(t_last_error), "%s", message);
  } else {
    std::snprintf(t_last_error, sizeof(t_last_error), "%s(): %s", function, message);
  }
}

IntList shape_arg(int64_t ndim, const int64_t* sizes, const char* function) {
  if (ndim < 0 || ndim > kMaxDims) {
    fail(ErrorKind::Value, function, "(): ndim must be in [0, ", kMaxDims, "] but is ", ndim);
  }
  if (ndim > 0 && !sizes) {
    fail(ErrorKind::Value, function, "(): sizes_ptr is NULL but ndim is ", ndim, "; pass ", ndim, " sizes");
  }
  for (int64_t i = 0; i < ndim; ++i) {
    if (sizes[i] < 0) fail(ErrorKind::Value, function, "(): sizes[", i, "] is ", sizes[i], "; sizes must be >= 0");
  }
  return IntList(sizes, ndim);
}

IntList strides_arg(IntList sizes, const int64_t* strides, int64_t* scratch, const char* function) {
  if (strides) return IntList(strides, sizes.size);
  contiguous_strides(sizes.data, static_cast<int>(sizes.size), scratch);
  return IntList(scratch, sizes.size);
}

ScalarType dtype_arg(int32_t code, const char* function) { return scalar_type_from_code(code, function); }

Device device_arg(int32_t device_type, int32_t device_index, const char* function) {
  if (device_type < 0 || device_type >= kMaxDeviceTypes) {
    fail(ErrorKind::Value, function, "(): device_type ", device_type,
         " is not a device code (0 cpu, 1 cuda, 13 mps, 20 privateuse1, or a registered plugin's code)");
  }
  if (device_type == kCPU && (device_index == -1 || device_index == 0)) return kCPUDevice;
  if (device_index < -1 || device_index > INT16_MAX) {
    fail(ErrorKind::Value, function, "(): device_index ", device_index, " is out of range [-1, ", INT16_MAX, "]");
  }
  if (device_type == kCPU) {
    fail(ErrorKind::Value, function, "(): device_index ", device_index, " for cpu; the cpu has index 0");
  }
  return Device(static_cast<DeviceType>(device_type), static_cast<int16_t>(device_index));
}

}  // namespace slimtensor::aoti

extern "C" {

const char* slimtensor_last_error(void) { return slimtensor::aoti::last_error_buffer(); }
void slimtensor_clear_last_error(void) { slimtensor::aoti::last_error_buffer()[0] = '\0'; }
int64_t slimtensor_aoti_live_handles(void) { return slimtensor::aoti::live_handles(); }
int32_t slimtensor_aoti_debug_handles(void) { return slimtensor::aoti::debug_handles() ? 1 : 0; }

}  // extern "C"

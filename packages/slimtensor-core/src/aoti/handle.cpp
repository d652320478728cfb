// src/aoti/handle.cpp: handle allocation, counting, tracing, the debug registry and the thread-local last error.
#include "aoti/handle.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "slimtensor/base/checked_math.h"
#include "slimtensor/runtime/events.h"
#include "slimtensor/runtime/memory_stats.h"

namespace slimtensor::aoti {

thread_local BlockCache* t_blocks = nullptr;

const bool g_debug_handles = [] {
  const char* v = std::getenv("SLIMTENSOR_DEBUG_HANDLES");
  return v && v[0] && std::strcmp(v, "0") != 0;
}();

namespace {

thread_local char t_last_error[1024] = "";
thread_local bool t_blocks_gone __attribute__((tls_model("initial-exec"))) = false;  // the thread is exiting

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

void trace(EventKind kind, AtenTensorHandle h, const char* op) noexcept {
  events::emit(kind, [&](Event& e) {
    const Tensor& t = h->tensor;
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
  });
}

}  // namespace

char* last_error_buffer() noexcept { return t_last_error; }
int64_t live_handles() noexcept {
  int64_t n = 0;
  for (int t = 0; t < kMaxDeviceTypes; ++t) n += memory_stats(static_cast<DeviceType>(t)).live_aoti_handles;
  return n;
}

BlockCache::~BlockCache() {
  t_blocks = nullptr;
  t_blocks_gone = true;  // handles made or deleted later in this thread's exit use the heap directly
  while (head) {
    void* next = *static_cast<void**>(head);
    ::operator delete(head);
    head = next;
  }
  count = 0;
}

namespace {
BlockCache* this_threads_cache() {
  if (t_blocks_gone) return nullptr;
  thread_local BlockCache cache;
  t_blocks = &cache;
  return t_blocks;
}
}  // namespace

void* take_block_slow() {
  if (BlockCache* c = this_threads_cache(); c && c->head) return take_block();
  return ::operator new(sizeof(AtenTensorOpaque));
}

void give_block_slow(void* block) noexcept {
  if (BlockCache* c = this_threads_cache(); c && c->count < kCachedBlocks) {
    give_block(block);
    return;
  }
  ::operator delete(block);
}

void handle_made_slow(AtenTensorHandle h, const char* op) {
  if (g_debug_handles) {
    Registry& r = registry();
    try {
      std::lock_guard<std::mutex> lock(r.mutex);
      r.live.insert(h);
    } catch (...) {
      const DeviceType type = h->counted_type;
      h->~AtenTensorOpaque();
      give_block(h);
      counters::handle_destroyed(type);
      throw;
    }
  }
  if (events::tracing_active()) trace(EventKind::HandleCreate, h, op);
}

void handle_deleting_slow(AtenTensorHandle h) noexcept {
  if (events::tracing_active()) trace(EventKind::HandleDelete, h, "aoti_torch_delete_tensor_object");
  if (g_debug_handles) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.live.erase(h);
  }
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
  // Core errors already start with the name they were given: "fn(): ..." is kept, "fn: ..." becomes
  // "fn(): ...", anything else gets the prefix.
  size_t n = std::strlen(function);
  const bool named = std::strncmp(message, function, n) == 0;
  if (named && message[n] == '(') {
    std::snprintf(t_last_error, sizeof(t_last_error), "%s", message);
  } else if (named && message[n] == ':') {
    std::snprintf(t_last_error, sizeof(t_last_error), "%s()%s", function, message + n);
  } else {
    std::snprintf(t_last_error, sizeof(t_last_error), "%s(): %s", function, message);
  }
}

void bad_shape_arg(int64_t ndim, const char* function) {
  if (ndim < 0 || ndim > kMaxDims) {
    fail(ErrorKind::Value, function, "(): ndim must be in [0, ", kMaxDims, "] but is ", ndim);
  }
  fail(ErrorKind::Value, function, "(): sizes_ptr is NULL but ndim is ", ndim, "; pass ", ndim, " sizes");
}

Device device_arg_slow(int32_t device_type, int32_t device_index, const char* function) {
  if (device_type < 0 || device_type >= kMaxDeviceTypes) {
    fail(ErrorKind::Value, function, "(): device_type ", device_type,
         " is not a device code (0 cpu, 1 cuda, 13 mps, 20 privateuse1, or a registered plugin's code)");
  }
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

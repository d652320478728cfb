// src/aoti/handle.cpp: handle allocation, counting, tracing, the debug registry and the thread-local last error.
#include "aoti/handle.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "slimtensor/base/checked_math.h"
#include "slimtensor/runtime/events.h"
#include "slimtensor/runtime/memory_stats.h"

namespace slimtensor::aoti {

thread_local SlotCache* t_slots = nullptr;
std::atomic<HandleSlot*> g_chunks[kNumChunks];

const bool g_debug_handles = [] {
  const char* v = std::getenv("SLIMTENSOR_DEBUG_HANDLES");
  return v && v[0] && std::strcmp(v, "0") != 0;
}();

namespace {

thread_local char t_last_error[1024] = "";
thread_local bool t_slots_gone __attribute__((tls_model("initial-exec"))) = false;  // the thread is exiting

// The table's free list and chunk count (Note [Handle table]). A leaked heap object, so that handles
// deleted by static destructors of other libraries (a model's constants at exit) still find it.
struct Table {
  std::mutex mutex;
  std::vector<uint32_t> free;
  uint32_t chunks = 0;
};
Table& table() {
  static Table* t = new Table;
  return *t;
}

// Adds a chunk of free slots (the table's lock held). Throws std::bad_alloc when out of memory or out of
// slots (2^26 handles alive at once).
void grow(Table& t) {
  if (t.chunks == kNumChunks) throw std::bad_alloc();
  auto* chunk = static_cast<HandleSlot*>(::operator new(sizeof(HandleSlot) * kChunkSlots));
  t.free.reserve(size_t{t.chunks + 1} * kChunkSlots);  // room for every slot: pushes never allocate
  const uint32_t base = t.chunks << kChunkBits;
  for (uint32_t i = 0; i < kChunkSlots; ++i) {
    HandleSlot* s = new (chunk + i) HandleSlot;
    s->index = base + i;
  }
  if (base == 0) chunk[0].key.store(~uint64_t{0}, std::memory_order_relaxed);  // slot 0: never a handle
  for (uint32_t i = kChunkSlots; i-- > (base == 0 ? 1u : 0u);) t.free.push_back(base + i);
  g_chunks[t.chunks].store(chunk, std::memory_order_release);
  ++t.chunks;
}

void trace(EventKind kind, AtenTensorHandle h, const char* op) noexcept {
  AtenTensorOpaque* o = live_opaque(h);
  if (!o) return;
  events::emit(kind, [&](Event& e) {
    const Tensor& t = o->tensor;
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

// The cache itself is on the heap: the library's TLS block must stay small, since its initial-exec
// variables put all of it in the static TLS space that dlopen can use (a few hundred bytes spare).
struct SlotCacheOwner {
  SlotCache* cache = nullptr;
  ~SlotCacheOwner() { delete cache; }
};
SlotCache* this_threads_cache() noexcept {
  if (t_slots_gone) return nullptr;
  thread_local SlotCacheOwner owner;
  if (!owner.cache) owner.cache = new (std::nothrow) SlotCache;  // NULL: this thread uses the table directly
  t_slots = owner.cache;
  return t_slots;
}

}  // namespace

char* last_error_buffer() noexcept { return t_last_error; }
int64_t live_handles() noexcept {
  int64_t n = 0;
  for (int t = 0; t < kMaxDeviceTypes; ++t) n += memory_stats(static_cast<DeviceType>(t)).live_aoti_handles;
  return n;
}

SlotCache::~SlotCache() {
  t_slots = nullptr;
  t_slots_gone = true;  // handles made or deleted later in this thread's exit use the table directly
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.free.insert(t.free.end(), free, free + count);  // reserved when the chunks were made: no allocation
  count = 0;
}

HandleSlot* take_slot_slow() {
  SlotCache* c = this_threads_cache();
  if (c && c->count > 0) return take_slot();
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (t.free.empty()) grow(t);
  if (c) {  // refill half the cache, keep one for this call
    while (c->count < kCachedSlots / 2 && t.free.size() > 1) {
      c->free[c->count++] = t.free.back();
      t.free.pop_back();
    }
  }
  const uint32_t index = t.free.back();
  t.free.pop_back();
  return slot_at(index);
}

void give_slot_slow(HandleSlot* slot) noexcept {
  if (slot->gen >= kMaxGen) return;  // retired: every generation of this slot has been used
  SlotCache* c = this_threads_cache();
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (c && c->count == kCachedSlots) {  // hand half the cache back
    t.free.insert(t.free.end(), c->free + kCachedSlots / 2, c->free + kCachedSlots);
    c->count = kCachedSlots / 2;
  }
  if (c && c->count < kCachedSlots) {
    c->free[c->count++] = slot->index;
  } else {
    t.free.push_back(slot->index);  // capacity reserved in grow(): never allocates
  }
}

void handle_made_slow(AtenTensorHandle h, const char* op) {
  if (events::tracing_active()) trace(EventKind::HandleCreate, h, op);
}

void handle_deleting_slow(AtenTensorHandle h) noexcept {
  if (events::tracing_active()) trace(EventKind::HandleDelete, h, "aoti_torch_delete_tensor_object");
}

void bad_handle(AtenTensorHandle h, const char* function, const char* arg) {
  if (h == nullptr) {
    fail(ErrorKind::Value, function, "(): ", arg, " is NULL; pass a handle returned by an aoti_torch_* function");
  }
  fail(ErrorKind::Value, function, "(): ", arg, " = ", static_cast<const void*>(h),
       " is not a live slimtensor handle (already deleted, or made by another library); "
       "pass a handle returned by an aoti_torch_* function and not yet deleted");
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

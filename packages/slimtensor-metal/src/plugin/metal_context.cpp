// metal_context.cpp: device, memory, streams and events of the Metal plugin (Note [Metal context]).
#include "metal_context.h"

#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <cstring>

#include "checked.h"
#include "dtypes.h"
#include "errors.h"
#include "kernels/kernel_source.h"
#include "strided_copy.h"

namespace slimtensor_metal {
namespace {

constexpr uint64_t kDefaultCacheLimit = 1024ull << 20;

uint64_t cache_limit_from_env() {
  const char* v = std::getenv("SLIMTENSOR_MPS_CACHE_LIMIT_MB");
  if (!v || !*v) return kDefaultCacheLimit;
  char* end = nullptr;
  const unsigned long long mb = std::strtoull(v, &end, 10);
  if (!end || *end != '\0' || mb > (1ull << 24)) return kDefaultCacheLimit;  // unparsable: the default
  return static_cast<uint64_t>(mb) << 20;
}

// The calling thread's current stream, per context (Note [Streams] of the ABI: kept by the plugin).
struct CurrentStream {
  const MetalContext* ctx;
  Stream* stream;
};
thread_local std::vector<CurrentStream> t_current;

}  // namespace

MetalContext::MetalContext(const mtlb_api* api, const st_core_table* core, const char* unavailable)
    : api_(api), core_(core), unavailable_(unavailable ? unavailable : ""), cache_(cache_limit_from_env()) {
  if (!api_ && unavailable_.empty()) unavailable_ = "Metal needs macOS on Apple silicon";
}

MetalContext::~MetalContext() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& s : streams_) (void)s->synchronize();
  for (Event* e : events_) {
    api_->release(e->shared_event);
    delete e;
  }
  // Cached buffers are given back; live ones belong to their owners, which outlive no context in
  // practice (the context lives until exit); a test that destroys a context with live buffers releases
  // them here so that the test double can check that every reference came back.
  for (auto& b : cache_.drain([](const CachedBuffer&) { return true; })) {
    note_plugin_bytes(-static_cast<int64_t>(b.length));
    api_->release(b.handle);
  }
  std::vector<void*> live;
  registry_.for_each([&](void* h, const BufferEntry&) { live.push_back(h); });
  for (void* h : live) {
    registry_.remove(h);
    api_->release(h);
  }
  for (auto& p : own_pipelines_) api_->release(p.second.first);
  if (api_) api_->release(own_library_);
  streams_.clear();
  if (api_) api_->release(device_);
  t_current.erase(
      std::remove_if(t_current.begin(), t_current.end(), [this](const CurrentStream& c) { return c.ctx == this; }),
      t_current.end());
}

int MetalContext::init_locked() {
  if (initialised_) return unavailable_.empty() ? 0 : 1;
  initialised_ = true;
  if (!api_) return 1;
  char err[512] = {0};
  if (api_->create_device(&device_, err, sizeof err) != 0 || !device_) {
    device_ = nullptr;
    unavailable_ = std::string("no Metal device: ") + (err[0] ? err : "MTLCreateSystemDefaultDevice returned nil");
    return 1;
  }
  void* queue = nullptr;
  if (api_->new_command_queue(device_, &queue, err, sizeof err) != 0 || !queue) {
    unavailable_ = std::string("Metal device found but [MTLDevice newCommandQueue] failed: ") + err;
    api_->release(device_);
    device_ = nullptr;
    return 1;
  }
  streams_.push_back(std::make_unique<Stream>(api_, queue, 0));
  return 0;
}

const char* MetalContext::unavailable_reason() {
  std::lock_guard<std::mutex> g(mu_);
  init_locked();
  return unavailable_.empty() ? nullptr : unavailable_.c_str();
}

int MetalContext::ensure_available_locked(const char* fn) {
  if (init_locked() == 0) return 0;
  return fail("%s: the MPS device is unavailable: %s", fn, unavailable_.c_str());
}

int MetalContext::device_count(int32_t* count) {
  if (!count) return fail("device_count(): needs a count pointer but got NULL");
  std::lock_guard<std::mutex> g(mu_);
  *count = init_locked() == 0 ? 1 : 0;  // Apple silicon has one GPU: MTLCreateSystemDefaultDevice
  return 0;
}

void MetalContext::note_plugin_bytes(int64_t delta) {
  if (core_ && core_->note_device_memory && delta != 0) core_->note_device_memory(kMpsDeviceType, 0, delta);
}

// ---- streams ---------------------------------------------------------------------------------------------

Stream* MetalContext::current_stream_locked() {
  for (const auto& c : t_current)
    if (c.ctx == this) return c.stream;
  return streams_.empty() ? nullptr : streams_[0].get();
}

Stream* MetalContext::resolve_stream_locked(const char* fn, void* stream) {
  if (stream == ST_STREAM_CURRENT) return current_stream_locked();
  for (auto& s : streams_)
    if (s.get() == stream) return s.get();
  fail("%s: %p is not a stream of the MPS plugin; pass ST_STREAM_CURRENT or a stream from current_stream()", fn,
       stream);
  return nullptr;
}

int MetalContext::current_stream(int32_t index, void** stream) {
  if (!stream) return fail("current_stream(): needs an output pointer but got NULL");
  if (index != 0) return fail("current_stream(): MPS has device index 0 only but got %d", index);
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("current_stream()")) return 1;
  *stream = current_stream_locked();
  return 0;
}

int MetalContext::new_stream(void** stream) {
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("new_stream()")) return 1;
  void* queue = nullptr;
  char err[512] = {0};
  if (api_->new_command_queue(device_, &queue, err, sizeof err) != 0)
    return fail_bridge("new_stream(): [MTLDevice newCommandQueue] failed", err);
  streams_.push_back(std::make_unique<Stream>(api_, queue, static_cast<int32_t>(streams_.size())));
  *stream = streams_.back().get();
  return 0;
}

int MetalContext::set_current_stream(void* stream) {
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("set_current_stream()")) return 1;
  Stream* s = resolve_stream_locked("set_current_stream()", stream);
  if (!s) return 1;
  for (auto& c : t_current)
    if (c.ctx == this) {
      c.stream = s;
      return 0;
    }
  t_current.push_back({this, s});
  return 0;
}

int MetalContext::synchronize_stream(int32_t index, void* stream) {
  if (index != 0) return fail("synchronize_stream(): MPS has device index 0 only but got %d", index);
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("synchronize_stream()")) return 1;
  Stream* s = resolve_stream_locked("synchronize_stream()", stream);
  return s ? s->synchronize() : 1;
}

int MetalContext::synchronize_all(int32_t index) {
  if (index != 0) return fail("synchronize(): MPS has device index 0 only but got %d", index);
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("synchronize()")) return 1;
  int rc = 0;
  for (auto& s : streams_) rc |= s->synchronize();
  return rc;
}

int MetalContext::get_current_device(int32_t* index) {
  if (!index) return fail("get_current_device(): needs an output pointer but got NULL");
  *index = 0;
  return 0;
}

int MetalContext::set_current_device(int32_t index) {
  if (index != 0) return fail("set_current_device(): MPS has device index 0 only but got %d", index);
  return 0;
}

// ---- memory ----------------------------------------------------------------------------------------------

int MetalContext::allocate_locked(uint64_t nbytes, Stream* stream, void** handle) {
  uint64_t length;
  if (!BufferCache::bucket_length(nbytes, &length))
    return fail("allocate(): needs 0 < nbytes < 2^64 - 1 MiB but got %" PRIu64, nbytes);
  const uint64_t max_len = api_->max_buffer_length(device_);
  if (length > max_len)
    return fail("allocate(): %" PRIu64 " bytes exceed this GPU's largest buffer (%" PRIu64
                " bytes, MTLDevice.maxBufferLength); split the tensor",
                nbytes, max_len);
  CachedBuffer b;
  auto ready = [](const CachedBuffer& c) {
    c.stream->poll();
    return c.stream->completed_serial() >= c.ready_serial;
  };
  if (cache_.take(length, stream, ready, &b)) {
    note_plugin_bytes(-static_cast<int64_t>(b.length));
  } else {
    char err[512] = {0};
    void* buf = nullptr;
    if (api_->new_buffer(device_, length, &buf, err, sizeof err) != 0 || !buf) {
      // Out of memory: give the cache back to Metal once and try again.
      for (auto& c : cache_.drain(ready)) {
        reserved_bytes_ -= static_cast<int64_t>(c.length);
        note_plugin_bytes(-static_cast<int64_t>(c.length));
        api_->release(c.handle);
      }
      err[0] = 0;
      if (api_->new_buffer(device_, length, &buf, err, sizeof err) != 0 || !buf)
        return fail("allocate(): [MTLDevice newBufferWithLength:%" PRIu64
                    " options:MTLResourceStorageModeShared] failed even after emptying the cache: %s; free tensors "
                    "or lower the batch size",
                    length, err[0] ? err : "returned nil");
    }
    b.handle = buf;
    b.contents = api_->buffer_contents(buf);
    b.length = length;
    new_buffers_++;
    reserved_bytes_ += static_cast<int64_t>(length);
    peak_reserved_bytes_ = std::max(peak_reserved_bytes_, reserved_bytes_);
  }
  if (!registry_.add(b.handle, b.contents, b.length, nbytes)) {
    api_->release(b.handle);
    reserved_bytes_ -= static_cast<int64_t>(b.length);
    return fail(
        "allocate(): the Metal bridge returned buffer %p whose contents overlap a live buffer; this is a "
        "bug of the bridge: report it",
        b.handle);
  }
  allocated_bytes_ += static_cast<int64_t>(nbytes);
  peak_allocated_bytes_ = std::max(peak_allocated_bytes_, allocated_bytes_);
  *handle = b.handle;
  return 0;
}

int MetalContext::allocate(int32_t index, uint64_t nbytes, void* stream, void** handle) {
  if (!handle) return fail("allocate_v2(): needs an output pointer but got NULL");
  if (index != 0) return fail("allocate_v2(): MPS has device index 0 only but got %d; use device 'mps:0'", index);
  if (nbytes == 0) return fail("allocate_v2(): needs nbytes > 0 but got 0");
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("allocate_v2()")) return 1;
  Stream* s = resolve_stream_locked("allocate_v2()", stream);
  if (!s) return 1;
  return allocate_locked(nbytes, s, handle);
}

void MetalContext::recycle_locked(void* handle, const BufferEntry& e, Stream* stream) {
  allocated_bytes_ -= static_cast<int64_t>(e.requested);
  CachedBuffer b;
  b.handle = handle;
  b.contents = e.contents;
  b.length = e.length;
  b.stream = stream;
  b.ready_serial = stream->has_pending_work() ? stream->last_serial() : stream->completed_serial();
  registry_.remove(handle);
  std::vector<CachedBuffer> evicted;
  cache_.put(b, &evicted);
  note_plugin_bytes(static_cast<int64_t>(b.length));
  for (auto& v : evicted) {
    // Given back to Metal at once: the command buffers that use it retain it until they finish.
    reserved_bytes_ -= static_cast<int64_t>(v.length);
    note_plugin_bytes(-static_cast<int64_t>(v.length));
    api_->release(v.handle);
  }
}

int MetalContext::release_locked(void* handle, Stream* stream) {
  BufferEntry* e = registry_.find(handle);
  if (!e)
    return fail("release(): %p is not a live MPS buffer of this plugin (freed twice, or never allocated)", handle);
  if (--e->refcount > 0) return 0;
  const BufferEntry copy = *e;
  recycle_locked(handle, copy, stream);
  return 0;
}

void MetalContext::free_buffer(int32_t index, void* handle, uint64_t, void* stream) {
  if (!handle) return;
  std::lock_guard<std::mutex> g(mu_);
  if (index != 0 || init_locked() != 0) return;  // nothing of ours can live there; free_v2 must not fail
  Stream* s = resolve_stream_locked("free_v2()", stream);
  if (!s) s = streams_[0].get();
  (void)release_locked(handle, s);
}

int MetalContext::retain(void* handle) {
  std::lock_guard<std::mutex> g(mu_);
  BufferEntry* e = registry_.find(handle);
  if (!e) return fail("retain(): %p is not a live MPS buffer of this plugin", handle);
  e->refcount++;
  return 0;
}

int MetalContext::release(void* handle, void* stream) {
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("release()")) return 1;
  Stream* s = resolve_stream_locked("release()", stream);
  return s ? release_locked(handle, s) : 1;
}

int64_t MetalContext::live_buffers() {
  std::lock_guard<std::mutex> g(mu_);
  return static_cast<int64_t>(registry_.size());
}

int MetalContext::resolve_handle_locked(const char* fn, void* handle, uint64_t offset, uint64_t nbytes, Resolved* out) {
  if (!handle) return fail("%s: needs an MPS buffer handle but got NULL", fn);
  uint64_t length, at = 0;
  uint8_t* contents;
  void* owner = nullptr;
  if (const BufferEntry* e = registry_.find(handle)) {
    length = e->requested;  // what was asked for, not the bucket: a view past it is a bug, caught here
    contents = static_cast<uint8_t*>(e->contents);
  } else if (registry_.resolve_pointer(handle, &owner, &at)) {
    // A host address inside a buffer's shared contents is not a handle: refused before the bridge would send
    // an Objective-C message to it (Note [Metal memory]).
    return fail("%s: %p is an address inside the contents of MPS buffer %p (byte %" PRIu64
                "), not a buffer handle; "
                "name MPS memory by its buffer handle and a byte offset (from_blob(handle, ..., storage_offset=...), "
                "as AOTInductor's MPS models do)",
                fn, handle, owner, at);
  } else if (api_->is_shared_buffer(handle)) {
    // A borrowed MTLBuffer (DLPack import from torch): used, never retained or released by us.
    length = api_->buffer_length(handle);
    contents = static_cast<uint8_t*>(api_->buffer_contents(handle));
    if (!contents) return fail("%s: buffer %p has no host-visible contents", fn, handle);
  } else {
    return fail(
        "%s: %p is neither a live MPS buffer of this plugin nor an MTLBuffer in shared storage mode; "
        "only shared buffers (MTLResourceStorageModeShared) can be used",
        fn, handle);
  }
  uint64_t end;
  if (!add_u64(offset, nbytes, &end) || end > length)
    return fail("%s: bytes [%" PRIu64 ", %" PRIu64 " + %" PRIu64 ") reach past the end of buffer %p (%" PRIu64
                " bytes)",
                fn, offset, offset, nbytes, handle, length);
  out->buffer = handle;
  out->offset = offset;
  out->host = contents + offset;
  out->length = length;
  return 0;
}

int MetalContext::resolve_locked(const char* fn, const st_memory_ref& ref, uint64_t nbytes, Resolved* out) {
  if (ref.device_index != 0) return fail("%s: MPS has device index 0 only but got %d", fn, ref.device_index);
  return resolve_handle_locked(fn, ref.handle, ref.byte_offset, nbytes, out);
}

int MetalContext::copy_from_host(st_memory_ref dst, const void* host, uint64_t nbytes, void* stream) {
  if (nbytes == 0) return 0;
  if (!host) return fail("copy_from_host(): needs a host address but got NULL");
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("copy_from_host()")) return 1;
  Stream* s = resolve_stream_locked("copy_from_host()", stream);
  Resolved d;
  if (!s || resolve_locked("copy_from_host()", dst, nbytes, &d)) return 1;
  // Queued GPU work may still read or write these bytes: finish it first (Note [Metal memory]).
  if (s->has_pending_work() && s->synchronize()) return 1;
  std::memcpy(d.host, host, nbytes);
  return 0;
}

int MetalContext::copy_to_host(void* host, st_memory_ref src, uint64_t nbytes, void* stream) {
  if (nbytes == 0) return 0;
  if (!host) return fail("copy_to_host(): needs a host address but got NULL");
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("copy_to_host()")) return 1;
  Stream* s = resolve_stream_locked("copy_to_host()", stream);
  Resolved r;
  if (!s || resolve_locked("copy_to_host()", src, nbytes, &r)) return 1;
  if (s->has_pending_work() && s->synchronize()) return 1;  // the memcpy comes after the wait, never before
  std::memcpy(host, r.host, nbytes);
  return 0;
}

int MetalContext::encode_byte_copy_locked(Stream* s, const Resolved& src, const Resolved& dst, uint64_t nbytes) {
  char err[512] = {0};
  if (src.offset % 4 == 0 && dst.offset % 4 == 0 && nbytes % 4 == 0) {
    void* cb;
    if (s->command_buffer(&cb)) return 1;
    if (api_->blit_copy(cb, src.buffer, src.offset, dst.buffer, dst.offset, nbytes, err, sizeof err))
      return fail_bridge("copy_on_device(): [MTLBlitCommandEncoder copyFromBuffer:...] failed", err);
    return 0;
  }
  // macOS blits need offsets and sizes in multiples of 4: other byte copies are the copy kernel on uint8.
  int64_t size = static_cast<int64_t>(nbytes), one = 1;
  if (size < 0) return fail("copy_on_device(): %" PRIu64 " bytes exceed the largest copy (2^63 - 1)", nbytes);
  st_strided_copy_v2 d{};
  d.struct_size = sizeof d;
  d.ndim = 1;
  d.sizes = &size;
  d.dst = {dst.buffer, dst.offset, 0, 0};
  d.dst_strides = &one;
  d.dst_dtype = kUInt8;
  d.src_dtype = kUInt8;
  d.src = {src.buffer, src.offset, 0, 0};
  d.src_strides = &one;
  return encode_strided_locked(this, s, d, src, dst);
}

int MetalContext::copy_on_device(st_memory_ref dst, st_memory_ref src, uint64_t nbytes, void* stream) {
  if (nbytes == 0) return 0;
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("copy_on_device()")) return 1;
  Stream* s = resolve_stream_locked("copy_on_device()", stream);
  Resolved d, r;
  if (!s || resolve_locked("copy_on_device()", dst, nbytes, &d) || resolve_locked("copy_on_device()", src, nbytes, &r))
    return 1;
  return encode_byte_copy_locked(s, r, d, nbytes);
}

int MetalContext::fill(st_memory_ref dst, uint64_t nbytes, const void* pattern, uint32_t pattern_size, void* stream) {
  if (!pattern) return fail("fill_v2(): needs a pattern but got NULL");
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8 && pattern_size != 16)
    return fail("fill_v2(): pattern_size must be 1, 2, 4, 8 or 16 but got %u", pattern_size);
  if (nbytes % pattern_size != 0)
    return fail("fill_v2(): nbytes (%" PRIu64 ") must be a multiple of pattern_size (%u)", nbytes, pattern_size);
  if (nbytes == 0) return 0;
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("fill_v2()")) return 1;
  Stream* s = resolve_stream_locked("fill_v2()", stream);
  Resolved d;
  if (!s || resolve_locked("fill_v2()", dst, nbytes, &d)) return 1;
  const uint8_t* p = static_cast<const uint8_t*>(pattern);
  bool one_byte = true;
  for (uint32_t i = 1; i < pattern_size; ++i) one_byte = one_byte && p[i] == p[0];
  char err[512] = {0};
  if (one_byte && d.offset % 4 == 0 && nbytes % 4 == 0) {
    void* cb;
    if (s->command_buffer(&cb)) return 1;
    if (api_->blit_fill(cb, d.buffer, d.offset, nbytes, p[0], err, sizeof err))
      return fail_bridge("fill_v2(): [MTLBlitCommandEncoder fillBuffer:range:value:] failed", err);
    return 0;
  }
  return encode_fill_locked(this, s, d, nbytes, p, pattern_size);
}

int MetalContext::copy_strided(const st_strided_copy_v2* desc, void* stream) {
  if (!desc) return fail("copy_strided_v2(): needs a descriptor but got NULL");
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("copy_strided_v2()")) return 1;
  Stream* s = resolve_stream_locked("copy_strided_v2()", stream);
  if (!s) return 1;
  return strided_copy_locked(this, s, *desc, &host_converts_);
}

int MetalContext::locate_pointer(const void* ptr, int32_t* index) {
  if (!index) return fail("locate_pointer(): needs an output pointer but got NULL");
  std::lock_guard<std::mutex> g(mu_);
  void* h;
  uint64_t off;
  if (registry_.find(const_cast<void*>(ptr)) || registry_.resolve_pointer(ptr, &h, &off)) {
    *index = 0;
    return 0;
  }
  return fail(
      "locate_pointer(): %p is not in a live MPS buffer of this plugin (host memory, a freed buffer, or "
      "a buffer another library allocated)",
      ptr);
}

int MetalContext::empty_cache() {
  std::lock_guard<std::mutex> g(mu_);
  if (init_locked() != 0) return 0;  // nothing cached on a machine without Metal
  cache_.stats().empty_cache_calls++;
  auto ready = [](const CachedBuffer& c) {
    c.stream->poll();
    return c.stream->completed_serial() >= c.ready_serial;
  };
  for (auto& b : cache_.drain(ready)) {
    reserved_bytes_ -= static_cast<int64_t>(b.length);
    note_plugin_bytes(-static_cast<int64_t>(b.length));
    api_->release(b.handle);
  }
  return 0;
}

// ---- events (MTLSharedEvent) -----------------------------------------------------------------------------

int MetalContext::event_create(int32_t index, void** event) {
  if (!event) return fail("event_create(): needs an output pointer but got NULL");
  if (index != 0) return fail("event_create(): MPS has device index 0 only but got %d", index);
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("event_create()")) return 1;
  char err[512] = {0};
  void* se = nullptr;
  if (api_->new_shared_event(device_, &se, err, sizeof err))
    return fail_bridge("event_create(): [MTLDevice newSharedEvent] failed", err);
  auto* e = new (std::nothrow) Event;
  if (!e) {
    api_->release(se);
    return fail("event_create(): out of host memory");
  }
  e->shared_event = se;
  events_.push_back(e);
  *event = e;
  return 0;
}

static Event* find_event(std::vector<Event*>& events, void* event) {
  for (Event* e : events)
    if (e == event) return e;
  return nullptr;
}

void MetalContext::event_destroy(int32_t, void* event) {
  std::lock_guard<std::mutex> g(mu_);
  Event* e = find_event(events_, event);
  if (!e) return;
  // A wait already encoded keeps working: the command buffer retains the shared event it waits on.
  api_->release(e->shared_event);
  events_.erase(std::find(events_.begin(), events_.end(), e));
  delete e;
}

int MetalContext::event_record(int32_t index, void* event, void* stream) {
  if (index != 0) return fail("event_record(): MPS has device index 0 only but got %d", index);
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("event_record()")) return 1;
  Event* e = find_event(events_, event);
  if (!e) return fail("event_record(): %p is not an event of the MPS plugin (destroyed, or never created)", event);
  Stream* s = resolve_stream_locked("event_record()", stream);
  if (!s) return 1;
  void* cb;
  if (s->command_buffer(&cb)) return 1;
  api_->encode_signal_event(cb, e->shared_event, ++e->value);
  e->stream = s;
  e->serial = s->last_serial();
  // Committed now, so that a wait on another queue can never wait for a signal that was not submitted.
  return s->commit();
}

int MetalContext::stream_wait_event(int32_t index, void* stream, void* event) {
  if (index != 0) return fail("stream_wait_event(): MPS has device index 0 only but got %d", index);
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("stream_wait_event()")) return 1;
  Event* e = find_event(events_, event);
  if (!e) return fail("stream_wait_event(): %p is not an event of the MPS plugin", event);
  Stream* s = resolve_stream_locked("stream_wait_event()", stream);
  if (!s) return 1;
  if (e->value == 0) return 0;  // never recorded: nothing to wait for (as CUDA)
  void* cb;
  if (s->command_buffer(&cb)) return 1;
  api_->encode_wait_event(cb, e->shared_event, e->value);
  return 0;
}

int MetalContext::event_synchronize(int32_t index, void* event) {
  if (index != 0) return fail("event_synchronize(): MPS has device index 0 only but got %d", index);
  std::lock_guard<std::mutex> g(mu_);
  if (ensure_available_locked("event_synchronize()")) return 1;
  Event* e = find_event(events_, event);
  if (!e) return fail("event_synchronize(): %p is not an event of the MPS plugin", event);
  if (e->value == 0 || api_->event_signaled_value(e->shared_event) >= e->value) return 0;
  return e->stream->wait_for(e->serial);
}

// ---- statistics ------------------------------------------------------------------------------------------

int MetalContext::allocator_stats(int32_t index, void (*emit)(void*, const char*, int64_t), void* user) {
  if (!emit) return fail("allocator_stats(): needs an emit function but got NULL");
  if (index != 0) return fail("allocator_stats(): MPS has device index 0 only but got %d", index);
  std::lock_guard<std::mutex> g(mu_);
  const CacheStats& c = cache_.stats();
  emit(user, "allocated_bytes", allocated_bytes_);
  emit(user, "peak_allocated_bytes", peak_allocated_bytes_);
  emit(user, "reserved_bytes", reserved_bytes_);
  emit(user, "peak_reserved_bytes", peak_reserved_bytes_);
  emit(user, "live_buffers", static_cast<int64_t>(registry_.size()));
  emit(user, "cached_bytes", c.cached_bytes);
  emit(user, "peak_cached_bytes", c.peak_cached_bytes);
  emit(user, "cached_buffers", c.cached_buffers);
  emit(user, "cache_hits", c.hits);
  emit(user, "cache_misses", c.misses);
  emit(user, "cache_evictions", c.evictions);
  emit(user, "buffers_released", c.releases);
  emit(user, "empty_cache_calls", c.empty_cache_calls);
  emit(user, "cache_limit_bytes", static_cast<int64_t>(cache_.limit()));
  emit(user, "new_buffers", new_buffers_);
  emit(user, "host_converts", host_converts_);
  return 0;
}

// ---- the plugin's own kernels ----------------------------------------------------------------------------

int MetalContext::own_pipeline_locked(const char* name, void** pipeline, uint32_t* max_threads) {
  for (auto& p : own_pipelines_)
    if (p.first == name) {
      *pipeline = p.second.first;
      *max_threads = p.second.second;
      return 0;
    }
  char err[2048] = {0};
  if (!own_library_ && api_->compile_library(device_, kMetalKernelSource, &own_library_, err, sizeof err)) {
    own_library_ = nullptr;
    return fail_bridge("the MPS plugin's copy kernels did not compile ([MTLDevice newLibraryWithSource:])", err);
  }
  void* pso = nullptr;
  uint32_t mt = 0, simd = 0;
  if (api_->new_pipeline(device_, own_library_, name, &pso, &mt, &simd, err, sizeof err))
    return fail_bridge(std::string("the MPS plugin's kernel ") + name + " has no pipeline", err);
  own_pipelines_.push_back({name, {pso, mt}});
  *pipeline = pso;
  *max_threads = mt;
  return 0;
}

}  // namespace slimtensor_metal

// tests/core/cpp/plugin_abi.cpp: plugin ABI 1.1 and 1.0 from a C++ host, without Python: registration through
// slimtensor_register_device_plugin, the refusals, and the core's use of opaque handles with offsets.
//
// Two plugins live in this file. "tokdev" (ABI 1.1) hands out tokens as allocation handles: numbers with
// the high bits set that are looked up in a table and cannot be dereferenced, so any pointer arithmetic the
// core did on a handle (handle + offset passed back as a handle) fails the lookup and the test. Its strided
// copy converts through the core table's convert_strided, and it counts every call. "olddev" is built as
// an ABI 1.0 plugin (1.0-sized table, raw addresses, no streams) and must keep working.
//
// Prints one line per failed check and "plugin_abi: N checks, M failed"; exits non-zero on any failure.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "slimtensor/c/device_plugin.h"
#include "slimtensor/c/shim.h"
#include "slimtensor/copy/clone.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/copy/fill.h"
#include "slimtensor/copy/item.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/runtime/events.h"
#include "slimtensor/runtime/memory_stats.h"
#include "slimtensor/runtime/streams.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;

namespace {

int g_checks = 0, g_failed = 0;
#define CHECK(cond)                                                 \
  do {                                                              \
    ++g_checks;                                                     \
    if (!(cond)) {                                                  \
      ++g_failed;                                                   \
      std::printf("FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    }                                                               \
  } while (0)
#define CHECK_THROWS_WITH(stmt, text)                                                                        \
  do {                                                                                                       \
    ++g_checks;                                                                                              \
    std::string what_;                                                                                       \
    try {                                                                                                    \
      stmt;                                                                                                  \
    } catch (const std::exception& e) {                                                                      \
      what_ = e.what();                                                                                      \
    }                                                                                                        \
    if (what_.find(text) == std::string::npos) {                                                             \
      ++g_failed;                                                                                            \
      std::printf("FAILED %s:%d: %s should throw with '%s' but got '%s'\n", __FILE__, __LINE__, #stmt, text, \
                  what_.c_str());                                                                            \
    }                                                                                                        \
  } while (0)

// ---- tokdev: ABI 1.1 with token handles -------------------------------------------------------------
constexpr int32_t kTokType = 30, kOldType = 31, kTokCount = 2;
constexpr uintptr_t kTokenBits = uintptr_t{0xA5} << 56;  // never a valid user-space address

const st_core_table* g_core = nullptr;
thread_local std::string t_tok_error;
std::mutex g_mu;
struct Block {
  std::vector<unsigned char> bytes;
  int32_t index;
  void* stream;
};
std::map<uintptr_t, Block> g_blocks;  // token -> memory
uintptr_t g_next_token = 1;
int32_t g_current[1] = {0};  // per thread would be right; one host thread here
struct Counts {
  int alloc = 0, free = 0, from_host = 0, to_host = 0, on_device = 0, strided = 0, fill = 0, sync = 0, events = 0,
      waits = 0, non_blocking = 0, current_stream_calls = 0;
  std::vector<void*> free_streams;
} g_n;
int g_stream_a, g_stream_b;  // two streams per process: their addresses are the stream values

int tok_fail(const std::string& m) {
  t_tok_error = m;
  return 1;
}

// The bytes [offset, offset + n) of a token's block, or null (with the error set) for a bad token or range.
unsigned char* resolve(st_memory_ref r, uint64_t n) {
  std::lock_guard<std::mutex> lock(g_mu);
  const uintptr_t token = reinterpret_cast<uintptr_t>(r.handle);
  auto it = g_blocks.find(token);
  if ((token & kTokenBits) != kTokenBits || it == g_blocks.end()) {
    tok_fail("tokdev: " + std::to_string(token) + " is not a live token (did the core add an offset to a handle?)");
    return nullptr;
  }
  if (r.byte_offset > it->second.bytes.size() || n > it->second.bytes.size() - r.byte_offset) {
    tok_fail("tokdev: range [" + std::to_string(r.byte_offset) + ", +" + std::to_string(n) + ") is outside the block");
    return nullptr;
  }
  if (r.device_index != it->second.index) {
    tok_fail("tokdev: the memory is on index " + std::to_string(it->second.index) + ", not " +
             std::to_string(r.device_index));
    return nullptr;
  }
  return it->second.bytes.data() + r.byte_offset;
}

bool valid_stream(void* s) { return s == ST_STREAM_CURRENT || s == &g_stream_a || s == &g_stream_b; }

const char* tok_unavailable(void*) { return nullptr; }
int tok_count(void*, int32_t* n) {
  *n = kTokCount;
  return 0;
}
int tok_sync_device(void*, int32_t) {
  ++g_n.sync;
  return 0;
}
int tok_current_stream(void*, int32_t, void** s) {
  ++g_n.current_stream_calls;
  *s = &g_stream_a;
  return 0;
}
const char* tok_last_error(void*) { return t_tok_error.c_str(); }
int tok_allocate(void*, int32_t index, uint64_t nbytes, void* stream, void** handle) {
  if (nbytes == 0) return tok_fail("tokdev allocate_v2: nbytes must be > 0");
  if (!valid_stream(stream)) return tok_fail("tokdev allocate_v2: unknown stream");
  if (nbytes > (1u << 30)) return tok_fail("tokdev allocate_v2: out of memory");
  std::lock_guard<std::mutex> lock(g_mu);
  const uintptr_t token = kTokenBits | (g_next_token++ << 8);
  g_blocks[token] = Block{std::vector<unsigned char>(nbytes, 0xEE), index, stream};
  *handle = reinterpret_cast<void*>(token);
  ++g_n.alloc;
  return 0;
}
void tok_free(void*, int32_t, void* handle, uint64_t, void* stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_blocks.erase(reinterpret_cast<uintptr_t>(handle)) == 1) ++g_n.free;
  g_n.free_streams.push_back(stream);
}
int tok_from_host(void*, st_memory_ref dst, const void* host, uint64_t n, void* stream, uint32_t flags) {
  if (!valid_stream(stream)) return tok_fail("tokdev copy_from_host: unknown stream");
  unsigned char* p = resolve(dst, n);
  if (!p) return 1;
  std::memcpy(p, host, n);
  ++g_n.from_host;
  if (flags & ST_COPY_NON_BLOCKING) ++g_n.non_blocking;
  return 0;
}
int tok_to_host(void*, void* host, st_memory_ref src, uint64_t n, void* stream, uint32_t flags) {
  if (!valid_stream(stream)) return tok_fail("tokdev copy_to_host: unknown stream");
  unsigned char* p = resolve(src, n);
  if (!p) return 1;
  std::memcpy(host, p, n);
  ++g_n.to_host;
  if (flags & ST_COPY_NON_BLOCKING) ++g_n.non_blocking;
  return 0;
}
int tok_on_device(void*, st_memory_ref dst, st_memory_ref src, uint64_t n, void*) {
  unsigned char* d = resolve(dst, n);
  unsigned char* s = resolve(src, n);
  if (!d || !s) return 1;
  std::memmove(d, s, n);
  ++g_n.on_device;
  return 0;
}
// Extent in bytes of one side of a strided copy (strides >= 0).
uint64_t side_bytes(const st_strided_copy_v2* d, const int64_t* strides, int32_t dtype) {
  int64_t last = 0;
  for (int i = 0; i < d->ndim; ++i) {
    if (d->sizes[i] == 0) return 0;
    last += strides[i] * (d->sizes[i] - 1);
  }
  return static_cast<uint64_t>((last + 1) * g_core->scalar_type_itemsize(dtype));
}
int tok_strided(void*, const st_strided_copy_v2* d, void* stream) {
  if (!valid_stream(stream)) return tok_fail("tokdev copy_strided_v2: unknown stream");
  unsigned char* dst = resolve(d->dst, side_bytes(d, d->dst_strides, d->dst_dtype));
  unsigned char* src = resolve(d->src, side_bytes(d, d->src_strides, d->src_dtype));
  if (!dst || !src) return 1;
  st_strided_copy_v2 host = *d;  // the same copy on host addresses, converted by the core's rules
  host.struct_size = sizeof host;
  host.dst = st_memory_ref{dst, 0, 0, 0};
  host.src = st_memory_ref{src, 0, 0, 0};
  if (g_core->convert_strided(&host) != 0) return tok_fail(std::string("tokdev: ") + g_core->core_last_error());
  ++g_n.strided;
  return 0;
}
int tok_fill(void*, st_memory_ref dst, uint64_t n, const void* pattern, uint32_t size, void* stream) {
  if (!valid_stream(stream)) return tok_fail("tokdev fill_v2: unknown stream");
  if (size == 0 || n % size != 0) return tok_fail("tokdev fill_v2: nbytes is not a multiple of the pattern");
  unsigned char* p = resolve(dst, n);
  if (!p) return 1;
  for (uint64_t i = 0; i < n; i += size) std::memcpy(p + i, pattern, size);
  ++g_n.fill;
  return 0;
}
int tok_sync_stream(void*, int32_t, void* stream) {
  if (!valid_stream(stream)) return tok_fail("tokdev synchronize_stream: unknown stream");
  ++g_n.sync;
  return 0;
}
int tok_get_device(void*, int32_t* index) {
  *index = g_current[0];
  return 0;
}
int tok_set_device(void*, int32_t index) {
  if (index < 0 || index >= kTokCount) return tok_fail("tokdev set_current_device: bad index");
  g_current[0] = index;
  return 0;
}
int tok_event_create(void*, int32_t, void** e) {
  *e = new int(0);
  return 0;
}
void tok_event_destroy(void*, int32_t, void* e) { delete static_cast<int*>(e); }
int tok_event_record(void*, int32_t, void* e, void* s) {
  if (!valid_stream(s)) return tok_fail("tokdev event_record: unknown stream");
  *static_cast<int*>(e) = 1;
  ++g_n.events;
  return 0;
}
int tok_wait(void*, int32_t, void* s, void* e) {
  if (!valid_stream(s) || *static_cast<int*>(e) != 1) return tok_fail("tokdev stream_wait_event: unrecorded event");
  ++g_n.waits;
  return 0;
}
int tok_event_sync(void*, int32_t, void*) { return 0; }
int tok_allocator_stats(void*, int32_t index, void (*emit)(void*, const char*, int64_t), void* user) {
  std::lock_guard<std::mutex> lock(g_mu);
  emit(user, "blocks", static_cast<int64_t>(g_blocks.size()));
  emit(user, "index", index);
  return 0;
}

st_device_table g_tok;
void fill_tok_table(st_device_table& t) {
  std::memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.abi_major = ST_PLUGIN_ABI_MAJOR;
  t.abi_minor = 1;
  t.name = "tokdev";
  t.device_type = kTokType;
  t.dlpack_device_type = 0;
  t.plugin_version = "test";
  t.unavailable_reason = tok_unavailable;
  t.device_count = tok_count;
  t.synchronize = tok_sync_device;
  t.current_stream = tok_current_stream;
  t.last_error = tok_last_error;
  t.memory_flags = 0;  // opaque: handles are not addresses
  t.allocate_v2 = tok_allocate;
  t.free_v2 = tok_free;
  t.copy_from_host = tok_from_host;
  t.copy_to_host = tok_to_host;
  t.copy_on_device = tok_on_device;
  t.copy_strided_v2 = tok_strided;
  t.fill_v2 = tok_fill;
  t.synchronize_stream = tok_sync_stream;
  t.get_current_device = tok_get_device;
  t.set_current_device = tok_set_device;
  t.event_create = tok_event_create;
  t.event_destroy = tok_event_destroy;
  t.event_record = tok_event_record;
  t.stream_wait_event = tok_wait;
  t.event_synchronize = tok_event_sync;
  t.allocator_stats = tok_allocator_stats;
}
int tok_init(const st_core_table* core, const st_device_table** out) {
  if (!core || core->abi_major != ST_PLUGIN_ABI_MAJOR || core->abi_minor < 1 ||
      core->struct_size < ST_CORE_TABLE_SIZE_1_1) {
    return 1;
  }
  g_core = core;
  fill_tok_table(g_tok);
  *out = &g_tok;
  return 0;
}

// ---- olddev: ABI 1.0 (a 1.0-sized table, raw host addresses) ----------------------------------------
struct OldCounts {
  int alloc = 0, free = 0, h2d = 0, d2h = 0, d2d = 0;
} g_old;
int old_count(void*, int32_t* n) {
  *n = 1;
  return 0;
}
int old_alloc(void*, int32_t, uint64_t n, void** out) {
  *out = std::malloc(n);
  ++g_old.alloc;
  return *out ? 0 : 1;
}
void old_free(void*, int32_t, void* p, uint64_t) {
  std::free(p);
  ++g_old.free;
}
int old_h2d(void*, int32_t, void* d, const void* s, uint64_t n) {
  std::memcpy(d, s, n);
  ++g_old.h2d;
  return 0;
}
int old_d2h(void*, int32_t, void* d, const void* s, uint64_t n) {
  std::memcpy(d, s, n);
  ++g_old.d2h;
  return 0;
}
int old_d2d(void*, int32_t, void* d, int32_t, const void* s, uint64_t n) {
  std::memmove(d, s, n);
  ++g_old.d2d;
  return 0;
}
const char* old_last_error(void*) { return "olddev failed"; }
// A 1.0 plugin's table is only ST_DEVICE_TABLE_SIZE_1_0 bytes: anything after it is another object, here
// filled with garbage so that a core reading a 1.1 field of it would crash or fail.
struct OldTableInMemory {
  unsigned char table[ST_DEVICE_TABLE_SIZE_1_0];
  unsigned char garbage[sizeof(st_device_table) - ST_DEVICE_TABLE_SIZE_1_0];
} g_old_mem;
int old_init(const st_core_table*, const st_device_table** out) {
  st_device_table t;
  std::memset(&t, 0, sizeof t);
  t.struct_size = ST_DEVICE_TABLE_SIZE_1_0;
  t.abi_major = 1;
  t.abi_minor = 0;
  t.name = "olddev";
  t.device_type = kOldType;
  t.device_count = old_count;
  t.allocate = old_alloc;
  t.free = old_free;
  t.copy_host_to_device = old_h2d;
  t.copy_device_to_host = old_d2h;
  t.copy_device_to_device = old_d2d;
  t.last_error = old_last_error;
  std::memcpy(g_old_mem.table, &t, ST_DEVICE_TABLE_SIZE_1_0);
  std::memset(g_old_mem.garbage, 0xFF, sizeof g_old_mem.garbage);
  *out = reinterpret_cast<const st_device_table*>(&g_old_mem);
  return 0;
}

// ---- refused tables ---------------------------------------------------------------------------------
st_device_table g_bad[6];
int bad_major(const st_core_table* c, const st_device_table** o) {
  fill_tok_table(g_bad[0]);
  g_bad[0].abi_major = 2;
  g_bad[0].name = "bad_major";
  *o = &g_bad[0];
  (void)c;
  return 0;
}
int bad_minor(const st_core_table* c, const st_device_table** o) {
  fill_tok_table(g_bad[1]);
  g_bad[1].abi_minor = static_cast<uint16_t>(c->abi_minor + 1);
  g_bad[1].name = "bad_minor";
  *o = &g_bad[1];
  return 0;
}
int small_1_1(const st_core_table*, const st_device_table** o) {
  fill_tok_table(g_bad[2]);
  g_bad[2].struct_size = ST_DEVICE_TABLE_SIZE_1_1 - 8;
  g_bad[2].name = "small_1_1";
  g_bad[2].device_type = 40;
  *o = &g_bad[2];
  return 0;
}
int small_1_0(const st_core_table*, const st_device_table** o) {
  fill_tok_table(g_bad[3]);
  g_bad[3].abi_minor = 0;
  g_bad[3].struct_size = ST_DEVICE_TABLE_SIZE_1_0 - 8;
  g_bad[3].name = "small_1_0";
  g_bad[3].device_type = 41;
  *o = &g_bad[3];
  return 0;
}
int missing_1_1(const st_core_table*, const st_device_table** o) {
  fill_tok_table(g_bad[4]);
  g_bad[4].copy_to_host = nullptr;
  g_bad[4].event_record = nullptr;
  g_bad[4].name = "missing_1_1";
  g_bad[4].device_type = 42;
  *o = &g_bad[4];
  return 0;
}
int init_fails(const st_core_table*, const st_device_table**) { return 7; }

bool refused(st_plugin_init_fn init, const char* want) {
  const int rc = slimtensor_register_device_plugin(init, "plugin_abi.cpp");
  const std::string msg = slimtensor_last_error();
  const bool ok = rc != 0 && msg.find(want) != std::string::npos;
  if (!ok) std::printf("  refusal: rc=%d message='%s' (wanted '%s')\n", rc, msg.c_str(), want);
  return ok;
}

void test_registration() {
  CHECK(refused(nullptr, "init function is null"));
  CHECK(refused(init_fails, "st_plugin_init failed (code 7)"));
  CHECK(refused(bad_major, "pip install -U slimtensor-core"));
  CHECK(refused(bad_minor, "upgrade the core: pip install -U slimtensor-core"));
  CHECK(refused(small_1_1, "the plugin's device table has"));
  CHECK(refused(small_1_0, "pip install -U slimtensor-core"));
  CHECK(refused(missing_1_1, "copy_to_host, all five event functions"));
  CHECK(find_device(std::string("bad_major")) == nullptr && find_device(std::string("missing_1_1")) == nullptr);
  // The sizes per minor, as the header defines them.
  CHECK(ST_DEVICE_TABLE_SIZE_1_0 == offsetof(st_device_table, memory_flags));
  CHECK(ST_DEVICE_TABLE_SIZE_1_1 == sizeof(st_device_table));
  CHECK(slimtensor_register_device_plugin(tok_init, "plugin_abi.cpp") == 0);
  CHECK(slimtensor_register_device_plugin(old_init, "plugin_abi.cpp") == 0);
  CHECK(refused(tok_init, "already registered"));
  const DeviceEntry* tok = find_device(DeviceType{kTokType});
  const DeviceEntry* old = find_device(DeviceType{kOldType});
  CHECK(tok && tok->abi_minor == 1 && tok->memory_flags == 0 && tok->source == "plugin_abi.cpp");
  CHECK(old && old->abi_minor == 0 && old->memory_flags == ST_DEVICE_MEMORY_ADDRESSABLE);
}

void test_core_table() {
  // convert: the CPU's exact rules (round to nearest even; NaN stays NaN), and a refusal for float8.
  const float in[4] = {1.0f, 1.00390625f, -2.5f, 65504.0f};  // 1 + 2^-8 rounds to even in bfloat16
  uint16_t bf[4];
  CHECK(g_core->convert(bf, 15, in, 6, 4) == 0);
  CHECK(bf[0] == 0x3F80 && bf[1] == 0x3F80 && bf[2] == 0xC020);
  uint8_t f8[4];
  CHECK(g_core->convert(f8, 23, in, 6, 4) != 0);
  CHECK(std::string(g_core->core_last_error()).find("not supported") != std::string::npos);
  CHECK(g_core->convert(bf, 99, in, 6, 4) != 0);
  // convert_strided: a transpose with conversion, and a refused overlapping destination.
  const int32_t src[6] = {0, 1, 2, 3, 4, 5};  // 2x3
  double dst[6] = {};
  const int64_t sizes[2] = {3, 2}, dst_st[2] = {2, 1}, src_st[2] = {1, 3};
  st_strided_copy_v2 d{};
  d.struct_size = sizeof d;
  d.ndim = 2;
  d.sizes = sizes;
  d.dst = st_memory_ref{dst, 0, 0, 0};
  d.dst_strides = dst_st;
  d.dst_dtype = 7;  // float64
  d.src = st_memory_ref{const_cast<int32_t*>(src), 0, 0, 0};
  d.src_strides = src_st;
  d.src_dtype = 3;  // int32
  CHECK(g_core->convert_strided(&d) == 0);
  CHECK(dst[0] == 0 && dst[1] == 3 && dst[2] == 1 && dst[3] == 4 && dst[4] == 2 && dst[5] == 5);
  const int64_t zero_st[2] = {0, 1};
  d.dst_strides = zero_st;
  CHECK(g_core->convert_strided(&d) != 0);
  CHECK(std::string(g_core->core_last_error()).find("share memory") != std::string::npos);
  d.struct_size = 8;
  CHECK(g_core->convert_strided(&d) != 0);
  // core_symbol: exported C functions only.
  CHECK(g_core->core_symbol("aoti_torch_get_data_ptr") == reinterpret_cast<void*>(&aoti_torch_get_data_ptr));
  CHECK(g_core->core_symbol("slimtensor_last_error") == reinterpret_cast<void*>(&slimtensor_last_error));
  CHECK(g_core->core_symbol("malloc") == nullptr);
  CHECK(g_core->core_symbol("aoti_torch_no_such_shim") == nullptr);
  CHECK(g_core->core_symbol(nullptr) == nullptr);
  // note_device_memory feeds plugin_bytes (live and peak) and traces; trace_device_event traces.
  const MemoryStats before = memory_stats(kTokType);
  const size_t trace = events::start_trace();
  g_core->note_device_memory(kTokType, 0, 1000);
  g_core->note_device_memory(kTokType, 0, -400);
  g_core->trace_device_event(kTokType, 1, "cache_hit", 64, &g_stream_b);
  g_core->note_device_memory(99, 0, 5);  // an invalid type is ignored, never a crash
  const std::vector<Event> ev = events::stop_trace(trace);
  const MemoryStats after = memory_stats(kTokType);
  CHECK(after.plugin_bytes - before.plugin_bytes == 600);
  CHECK(after.plugin_peak_bytes >= before.plugin_bytes + 1000);
  CHECK(ev.size() == 3 && ev[0].kind == EventKind::DeviceEvent && ev[0].bytes == 1000 && ev[0].op == "device_memory");
  CHECK(ev.size() == 3 && ev[2].op == "cache_hit" && ev[2].device.index == 1 &&
        ev[2].stream == reinterpret_cast<uintptr_t>(&g_stream_b));
  g_core->note_device_memory(kTokType, 0, -600);
}

std::vector<float> to_host_values(const Tensor& t) {
  Tensor c = to(t, kCPUDevice, ScalarType::Float32, true);
  Tensor d = contiguous(c);
  const float* p = static_cast<const float*>(d.data_ptr());
  return std::vector<float>(p, p + d.numel());
}

void test_opaque_device() {
  const Device tok0{kTokType, 0};
  const int free_before = g_n.free;
  {
    // Index -1 ("tokdev") is the current device, kept by the plugin.
    streams::set_device(Device{kTokType, 1});
    CHECK(streams::current_device(kTokType) == 1);
    int64_t two_three[2] = {2, 3};
    Tensor on1 = empty(IntList(two_three, 2), ScalarType::Float32, Device{kTokType, -1});
    CHECK(on1.device().index == 1);
    streams::set_device(tok0);
    CHECK(resolve_device(Device{kTokType, -1}, "test").index == 0);

    int64_t sizes[2] = {4, 6};
    Tensor t = empty(IntList(sizes, 2), ScalarType::Float32, tok0);
    CHECK(!t.is_addressable() && t.data_ptr() == nullptr);
    const st_memory_ref r = t.memory_ref();
    CHECK((reinterpret_cast<uintptr_t>(r.handle) & kTokenBits) == kTokenBits && r.byte_offset == 0);
    CHECK(t.storage_impl()->stream() == &g_stream_a);  // allocated on the resolved current stream

    // Upload 0..23, then views with offsets: every call must name (token, byte offset).
    std::vector<float> v(24);
    for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
    Tensor host = from_blob(v.data(), IntList(sizes, 2), IntList(std::vector<int64_t>{6, 1}), 0, ScalarType::Float32,
                            kCPUDevice, nullptr, nullptr, false);
    copy_(t, host);
    Tensor row = select(t, 0, 2);  // offset 12 elements
    CHECK(row.memory_ref().byte_offset == 48 && row.memory_ref().handle == r.handle);
    CHECK(item(select(row, 0, 5)).d == 17.0);
    std::vector<float> got = to_host_values(transpose(t, 0, 1));  // strided read: device strided copy
    CHECK(got.size() == 24 && got[1] == 6.0f && got[23] == 23.0f);
    const int strided_before = g_n.strided;
    Tensor tt = clone(transpose(t, 0, 1), MemoryFormat::Contiguous);  // on device, dtype-preserving
    CHECK(g_n.strided == strided_before + 1);
    Tensor as_double = empty(IntList(sizes, 2), ScalarType::Float64, tok0);
    copy_(as_double, t);  // on-device conversion through convert_strided
    CHECK(item(select(select(as_double, 0, 3), 0, 4)).d == 22.0);

    // Overlap within one storage is decided on offsets: a partial overlap is refused, a disjoint one runs.
    Tensor flat = view(t, IntList(std::vector<int64_t>{24}));
    CHECK_THROWS_WITH(copy_(narrow(flat, 0, 0, 12), narrow(flat, 0, 6, 12)), "partially overlap");
    copy_(narrow(flat, 0, 0, 12), narrow(flat, 0, 12, 12));
    CHECK(item(select(flat, 0, 0)).d == 12.0);
    // Same elements, another dtype (in place): cloned first, never converted in place by the plugin.
    Tensor ints = empty(IntList(std::vector<int64_t>{4}), ScalarType::Int32, tok0);
    fill_(ints, Scalar::from_int(1065353216));  // the bits of 1.0f
    copy_(view_dtype(ints, ScalarType::Float32), ints);
    CHECK(item(select(view_dtype(ints, ScalarType::Float32), 0, 0)).d == 1065353216.0);

    // fill_: the plugin's fill_v2 for dense layouts, copy_ for strided ones.
    const int fills = g_n.fill;
    fill_(t, Scalar::from_double(2.5));
    CHECK(g_n.fill == fills + 1);
    fill_(select(transpose(t, 0, 1), 0, 1), Scalar::from_int(7));  // a column: strided
    std::vector<float> f = to_host_values(t);
    CHECK(f[0] == 2.5f && f[1] == 7.0f && f[7] == 7.0f && f[2] == 2.5f);
    Tensor f8 = empty(IntList(sizes, 2), ScalarType::Float8_e4m3fn, tok0);
    fill_(transpose(f8, 0, 1), Scalar::from_int(0));  // non-contiguous float8 zero-fill is allowed

    // non_blocking reaches the plugin for host <-> device copies.
    const int nb = g_n.non_blocking;
    copy_(t, host, true);
    CHECK(g_n.non_blocking == nb + 1);
    streams::synchronize(tok0);

    // Streams: order_after uses events when the plugin has them; synchronize reaches synchronize_stream.
    const int waits = g_n.waits;
    streams::order_after(tok0, &g_stream_b, &g_stream_a);
    streams::order_after(tok0, &g_stream_a, &g_stream_a);  // same stream: nothing to do
    CHECK(g_n.waits == waits + 1);
    CHECK(streams::current(tok0) == &g_stream_a && streams::current(kCPUDevice) == nullptr);
    int64_t v64 = 0;
    CHECK(!streams::to_dlpack(tok0, &g_stream_a, &v64));  // tokdev defines no DLPack streams

    // The AOTI getter refuses an opaque handle and names the function that gives it.
    AtenTensorHandle h = nullptr;
    int64_t strides[2] = {6, 1};
    CHECK(aoti_torch_empty_strided(2, sizes, strides, 6, kTokType, 0, &h) == AOTI_TORCH_SUCCESS);
    void* ptr = reinterpret_cast<void*>(1);
    CHECK(aoti_torch_get_data_ptr(h, &ptr) != AOTI_TORCH_SUCCESS);
    CHECK(std::string(slimtensor_last_error()).find("slimtensor_aoti_get_memory_ref") != std::string::npos);
    st_memory_ref mr{};
    CHECK(slimtensor_aoti_get_memory_ref(h, &mr) == AOTI_TORCH_SUCCESS && mr.handle != nullptr && mr.device_index == 0);
    CHECK(aoti_torch_delete_tensor_object(h) == AOTI_TORCH_SUCCESS);

    // Borrowed device memory with an offset (what a DLPack import makes).
    void* handle = nullptr;
    CHECK(tok_allocate(nullptr, 0, 64, ST_STREAM_CURRENT, &handle) == 0);
    {
      float four[4] = {1, 2, 3, 4};
      CHECK(tok_from_host(nullptr, st_memory_ref{handle, 16, 0, 0}, four, 16, ST_STREAM_CURRENT, 0) == 0);
      StorageImpl* s = StorageImpl::borrow_device(tok0, handle, 16, 16, nullptr, nullptr, false, "test", "test");
      Tensor b = Tensor::make(Storage::adopt(s), IntList(std::vector<int64_t>{3}), IntList(std::vector<int64_t>{1}), 1,
                              ScalarType::Float32, "test");
      CHECK(b.memory_ref().byte_offset == 20 && b.data_ptr() == nullptr);
      CHECK(item(select(b, 0, 0)).d == 2.0);
    }
    tok_free(nullptr, 0, handle, 64, ST_STREAM_CURRENT);

    // The allocator's statistics, and device memory counted per type.
    int blocks = -1;
    CHECK(allocator_stats(
        tok0,
        [](void* u, const char* k, int64_t v) {
          if (std::string(k) == "blocks") *static_cast<int*>(u) = static_cast<int>(v);
        },
        &blocks));
    CHECK(blocks > 0);
    CHECK(memory_stats(kTokType).live_bytes > 0);
  }
  // Every storage was freed, each on the stream it was allocated on.
  CHECK(memory_stats(kTokType).live_storages == 0 && memory_stats(kTokType).live_bytes == 0);
  CHECK(g_n.free > free_before);
  // (The test's own free of its borrowed block passes ST_STREAM_CURRENT; the core's pass the allocation stream.)
  int on_a = 0, elsewhere = 0;
  for (void* s : g_n.free_streams) {
    if (s == &g_stream_a) {
      ++on_a;
    } else if (s != ST_STREAM_CURRENT) {
      ++elsewhere;
    }
  }
  CHECK(on_a > 0 && elsewhere == 0);
  CHECK(g_blocks.empty());
}

void test_cpu_memory_ref() {
  int64_t sizes[2] = {4, 6};
  Tensor t = empty(IntList(sizes, 2), ScalarType::Float64, kCPUDevice);
  Tensor row = select(t, 0, 2);
  const st_memory_ref r = row.memory_ref();
  CHECK(r.handle == t.data_ptr() && r.byte_offset == 96 && r.device_index == 0);
  CHECK(row.is_addressable() && static_cast<char*>(row.data_ptr()) == static_cast<char*>(t.data_ptr()) + 96);
  AtenTensorHandle h = nullptr;
  int64_t strides[2] = {6, 1};
  CHECK(aoti_torch_empty_strided(2, sizes, strides, 7, 0, 0, &h) == AOTI_TORCH_SUCCESS);
  st_memory_ref m{};
  void* p = nullptr;
  CHECK(slimtensor_aoti_get_memory_ref(h, &m) == AOTI_TORCH_SUCCESS && aoti_torch_get_data_ptr(h, &p) == 0);
  CHECK(m.handle == p && m.byte_offset == 0);
  CHECK(slimtensor_aoti_get_memory_ref(h, nullptr) != AOTI_TORCH_SUCCESS);
  CHECK(slimtensor_aoti_get_memory_ref(nullptr, &m) != AOTI_TORCH_SUCCESS);
  aoti_torch_delete_tensor_object(h);
}

void test_old_plugin() {
  const Device old{kOldType, -1};
  {
    int64_t sizes[2] = {3, 4};
    Tensor t = empty(IntList(sizes, 2), ScalarType::Float32, old);
    CHECK(t.device().index == 0 && t.is_addressable() && t.data_ptr() != nullptr);
    fill_(t, Scalar::from_double(1.5));  // no fill in its table: the pattern is uploaded
    CHECK(g_old.h2d >= 1);
    Tensor col = select(transpose(t, 0, 1), 0, 2);  // strided: staged through the host
    fill_(col, Scalar::from_int(9));
    std::vector<float> v = to_host_values(t);
    CHECK(v[2] == 9.0f && v[6] == 9.0f && v[0] == 1.5f);
    Tensor c = clone(t);
    CHECK(g_old.d2d >= 1);
    CHECK(item(select(select(c, 0, 1), 0, 2)).d == 9.0);
    streams::synchronize(old);  // no synchronize in its table: nothing to wait for
    CHECK(streams::current(old) == nullptr);
    CHECK_THROWS_WITH(streams::set_device(Device{kOldType, 1}), "out of range");
    AtenTensorHandle h = nullptr;
    int64_t strides[2] = {4, 1};
    CHECK(aoti_torch_empty_strided(2, sizes, strides, 6, kOldType, 0, &h) == AOTI_TORCH_SUCCESS);
    void* ptr = nullptr;
    CHECK(aoti_torch_get_data_ptr(h, &ptr) == AOTI_TORCH_SUCCESS && ptr != nullptr);
    aoti_torch_delete_tensor_object(h);
  }
  CHECK(g_old.alloc == g_old.free && memory_stats(kOldType).live_storages == 0);
}

}  // namespace

int main() {
  try {
    test_registration();
    if (g_core) {
      test_core_table();
      test_opaque_device();
      test_old_plugin();
    }
    test_cpu_memory_ref();
  } catch (const std::exception& e) {
    ++g_failed;
    std::printf("FAILED: uncaught exception: %s\n", e.what());
  }
  std::printf("plugin_abi: %d checks, %d failed\n", g_checks, g_failed);
  return g_failed == 0 ? 0 : 1;
}

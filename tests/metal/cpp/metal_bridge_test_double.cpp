// metal_bridge_test_double.cpp: the in-memory TEST DOUBLE of mtlb_api (see the header); compiled only into tests.
#include "metal_bridge_test_double.h"

#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>

#include "metal_as_cpp.h"
// The plugin's real kernel source, compiled here as C++ (the GPU's stand-in).
#include "kernels/metal_kernels.metal"

namespace td {
namespace {

enum Kind { kDevice, kBuffer, kQueue, kCommandBuffer, kEncoder, kLibrary, kPipeline, kEvent };

struct Obj {
  explicit Obj(Kind k) : kind(k) {}
  virtual ~Obj() = default;
  Kind kind;
  int refs = 1;
};
struct Buffer : Obj {
  explicit Buffer(uint64_t n) : Obj(kBuffer), data(n + 64, 0), length(n) {}
  std::vector<uint8_t> data;
  uint64_t length;
  uint8_t* base() { return data.data(); }
};
struct CommandBuffer : Obj {
  CommandBuffer() : Obj(kCommandBuffer) {}
  std::vector<std::function<void()>> commands;
  bool committed = false, done = false;
};
struct Encoder : Obj {
  explicit Encoder(CommandBuffer* c) : Obj(kEncoder), cb(c) {}
  CommandBuffer* cb;
  Args args;
  std::string pipeline;
  bool ended = false;
};
struct Pipeline : Obj {
  Pipeline() : Obj(kPipeline) {}
  std::string name;
};
struct Event : Obj {
  Event() : Obj(kEvent) {}
  uint64_t value = 0;
};

int64_t g_live = 0, g_live_buffers = 0, g_buffers_created = 0, g_cb_run = 0, g_matmuls = 0;
int g_fail_after = 0;
bool g_no_device = false;
uint64_t g_max_len = 1ull << 34;
std::map<std::string, Kernel> g_kernels;
std::deque<CommandBuffer*> g_committed;

template <class T, class... A>
T* make(A&&... a) {
  T* o = new T(std::forward<A>(a)...);
  g_live++;
  if (o->kind == kBuffer) g_live_buffers++;
  return o;
}

void release(void* p) {
  if (!p) return;
  Obj* o = static_cast<Obj*>(p);
  if (--o->refs > 0) return;
  g_live--;
  if (o->kind == kBuffer) g_live_buffers--;
  delete o;
}

void retain(Obj* o) { o->refs++; }

void err(char* e, size_t n, const char* m) { std::snprintf(e, n, "%s", m); }

void run(CommandBuffer* c) {
  if (c->done) return;
  for (auto& f : c->commands) f();
  c->done = true;
  g_cb_run++;
}

int create_device(void** d, char* e, size_t n) {
  if (g_no_device) {
    err(e, n, "test double: no device");
    return 1;
  }
  *d = make<Obj>(kDevice);
  return 0;
}
void device_name(void*, char* out, size_t n) { std::snprintf(out, n, "slimtensor test double (not Metal)"); }
uint64_t max_len(void*) { return g_max_len; }
int new_buffer(void*, uint64_t len, void** b, char* e, size_t n) {
  if (g_fail_after > 0 && --g_fail_after == 0) {
    err(e, n, "test double: newBufferWithLength returned nil");
    return 1;
  }
  *b = make<Buffer>(len);
  g_buffers_created++;
  return 0;
}
void* contents_of(void* b) { return static_cast<Buffer*>(b)->base(); }
uint64_t length_of(void* b) { return static_cast<Buffer*>(b)->length; }
int is_shared(void* o) { return o && static_cast<Obj*>(o)->kind == kBuffer; }
int new_queue(void*, void** q, char*, size_t) {
  *q = make<Obj>(kQueue);
  return 0;
}
int new_cb(void*, void** c, char*, size_t) {
  *c = make<CommandBuffer>();
  return 0;
}
void commit(void* c) {
  auto* cb = static_cast<CommandBuffer*>(c);
  cb->committed = true;
  retain(cb);  // the "GPU" holds it until it ran
  g_committed.push_back(cb);
}
void drain() {
  while (!g_committed.empty()) {
    CommandBuffer* c = g_committed.front();
    g_committed.pop_front();
    run(c);
    release(c);
  }
}
int wait(void* c, char* e, size_t n) {
  auto* cb = static_cast<CommandBuffer*>(c);
  if (!cb->committed) {
    err(e, n, "test double: waited on a command buffer that was never committed (Metal would hang)");
    return 1;
  }
  drain();  // in commit order, as one GPU would
  return 0;
}
int status(void* c) { return static_cast<CommandBuffer*>(c)->done ? MTLB_STATUS_COMPLETED : MTLB_STATUS_PENDING; }
int blit_copy(void* c, void* s, uint64_t so, void* d, uint64_t dof, uint64_t size, char* e, size_t n) {
  if (so % 4 || dof % 4 || size % 4) {
    err(e, n, "test double: blit offsets and size must be multiples of 4 (macOS)");
    return 1;
  }
  auto* src = static_cast<Buffer*>(s);
  auto* dst = static_cast<Buffer*>(d);
  if (so + size > src->length || dof + size > dst->length) {
    err(e, n, "test double: blit out of bounds");
    return 1;
  }
  retain(src);
  retain(dst);
  static_cast<CommandBuffer*>(c)->commands.push_back([=] {
    std::memmove(dst->base() + dof, src->base() + so, size);
    release(src);
    release(dst);
  });
  return 0;
}
int blit_fill(void* c, void* b, uint64_t off, uint64_t size, uint8_t v, char* e, size_t n) {
  auto* buf = static_cast<Buffer*>(b);
  if (off % 4 || size % 4 || off + size > buf->length) {
    err(e, n, "test double: bad fill range");
    return 1;
  }
  retain(buf);
  static_cast<CommandBuffer*>(c)->commands.push_back([=] {
    std::memset(buf->base() + off, v, size);
    release(buf);
  });
  return 0;
}
int compile(void*, const char* src, void** lib, char* e, size_t n) {
  if (std::strstr(src, "#error")) {
    err(e, n, "test double: program_source:1: error: #error in the source");
    return 1;
  }
  *lib = make<Obj>(kLibrary);
  return 0;
}
int new_pipeline(void*, void*, const char* name, void** p, uint32_t* mt, uint32_t* simd, char* e, size_t n) {
  const std::string s = name;
  if (s != "st_strided_copy" && s != "st_fill" && !g_kernels.count(s)) {
    err(e, n, "test double: no function with that name");
    return 1;
  }
  auto* pp = make<Pipeline>();
  pp->name = s;
  *p = pp;
  *mt = 1024;
  *simd = 32;
  return 0;
}
int new_encoder(void* c, void** enc, char*, size_t) {
  *enc = make<Encoder>(static_cast<CommandBuffer*>(c));
  return 0;
}
void set_pipeline(void* enc, void* p) { static_cast<Encoder*>(enc)->pipeline = static_cast<Pipeline*>(p)->name; }
void set_buffer(void* enc, void* b, uint64_t off, uint32_t i) {
  auto* buf = static_cast<Buffer*>(b);
  static_cast<Encoder*>(enc)->args.buffers[i] = buf->base() + off;
  static_cast<Encoder*>(enc)->args.lengths[i] = buf->length - off;
}
void set_bytes(void* enc, const void* p, uint64_t len, uint32_t i) {
  auto& v = static_cast<Encoder*>(enc)->args.bytes[i];
  v.assign(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + len);  // copied now, as Metal does
}
void dispatch(void* enc, const uint64_t grid[3], const uint64_t group[3]) {
  auto* en = static_cast<Encoder*>(enc);
  const Args args = en->args;  // snapshot of the bindings, as encoding does
  const std::string name = en->pipeline;
  const uint64_t total = grid[0] * grid[1] * grid[2];
  (void)group;
  en->cb->commands.push_back([args, name, total] {
    if (name == "st_strided_copy") {
      const auto* p = reinterpret_cast<const StCopyParams*>(args.bytes[2].data());
      for (uint64_t g = 0; g < total; ++g) st_strided_copy(args.buffers[0], args.buffers[1], *p, (uint)g, (uint)total);
    } else if (name == "st_fill") {
      const auto* p = reinterpret_cast<const StFillParams*>(args.bytes[1].data());
      for (uint64_t g = 0; g < total; ++g) st_fill(args.buffers[0], *p, (uint)g, (uint)total);
    } else {
      const Kernel& k = g_kernels.at(name);
      for (uint64_t g = 0; g < total; ++g) k(args, g, total);
    }
  });
}
void end_encoding(void* enc) { static_cast<Encoder*>(enc)->ended = true; }
int new_event(void*, void** ev, char*, size_t) {
  *ev = make<Event>();
  return 0;
}
uint64_t signaled(void* ev) { return static_cast<Event*>(ev)->value; }
void signal(void* c, void* ev, uint64_t v) {
  auto* e = static_cast<Event*>(ev);
  retain(e);
  static_cast<CommandBuffer*>(c)->commands.push_back([=] {
    e->value = v;
    release(e);
  });
}
void wait_event(void* c, void* ev, uint64_t v) {
  auto* e = static_cast<Event*>(ev);
  retain(e);
  static_cast<CommandBuffer*>(c)->commands.push_back([=] {
    if (e->value < v) std::fprintf(stderr, "test double: a wait ran before its signal (Metal would stall)\n");
    release(e);
  });
}
float rd(const mtlb_matrix& m, uint64_t b, uint64_t r, uint64_t c) {
  float f;
  std::memcpy(&f, static_cast<Buffer*>(m.buffer)->base() + m.offset + b * m.matrix_bytes + r * m.row_bytes + c * 4, 4);
  return f;
}
int matmul(void*, void* c, const mtlb_matmul_desc* d, char* e, size_t n) {
  if (d->dtype != 6) {
    err(e, n, "test double: float32 only");
    return 1;
  }
  const mtlb_matmul_desc dd = *d;
  static_cast<CommandBuffer*>(c)->commands.push_back([dd] {
    g_matmuls++;
    for (uint64_t b = 0; b < dd.batch; ++b)
      for (uint64_t i = 0; i < dd.m; ++i)
        for (uint64_t j = 0; j < dd.n; ++j) {
          float acc = 0;
          for (uint64_t k = 0; k < dd.k; ++k) {
            const float a = dd.transpose_a ? rd(dd.a, b, k, i) : rd(dd.a, b, i, k);
            const float w = dd.transpose_b ? rd(dd.b, b, j, k) : rd(dd.b, b, k, j);
            acc += a * w;
          }
          float* out = reinterpret_cast<float*>(static_cast<Buffer*>(dd.c.buffer)->base() + dd.c.offset +
                                                b * dd.c.matrix_bytes + i * dd.c.row_bytes + j * 4);
          *out = static_cast<float>(dd.alpha) * acc + static_cast<float>(dd.beta) * *out;
        }
  });
  return 0;
}

const mtlb_api kApi = {release,   create_device, device_name,  max_len,     new_buffer,   contents_of, length_of,
                       is_shared, new_queue,     new_cb,       commit,      wait,         status,      blit_copy,
                       blit_fill, compile,       new_pipeline, new_encoder, set_pipeline, set_buffer,  set_bytes,
                       dispatch,  end_encoding,  new_event,    signaled,    signal,       wait_event,  matmul};

}  // namespace

const mtlb_api* api() { return &kApi; }
void register_kernel(const std::string& name, Kernel k) { g_kernels[name] = std::move(k); }
int64_t live_objects() { return g_live; }
int64_t live_buffers() { return g_live_buffers; }
int64_t buffers_created() { return g_buffers_created; }
int64_t command_buffers_run() { return g_cb_run; }
void set_fail_new_buffer(int after) { g_fail_after = after; }
void set_no_device(bool v) { g_no_device = v; }
void set_max_buffer_length(uint64_t n) { g_max_len = n; }
void complete_all() { drain(); }
void* foreign_buffer(uint64_t length) { return make<Buffer>(length); }
uint8_t* contents(void* b) { return static_cast<Buffer*>(b)->base(); }
int64_t matmuls_run() { return g_matmuls; }

}  // namespace td

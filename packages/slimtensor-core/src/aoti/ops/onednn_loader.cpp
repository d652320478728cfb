// src/aoti/ops/onednn_loader.cpp: finds and dlopens oneDNN on first use (Note [Lazy oneDNN]), the engine, per-thread
// streams, and the small RAII wrappers of onednn.h.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "aoti/handle.h"
#include "aoti/ops/conv_onednn.h"
#include "aoti/ops/onednn.h"
#include "runtime/shared_library.h"
#include "slimtensor/base/error.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/runtime/threads.h"

#ifndef SLIMTENSOR_DNNL_BUILD_PATH
#  define SLIMTENSOR_DNNL_BUILD_PATH ""
#endif

namespace slimtensor::aoti::onednn {

namespace {
std::atomic<int> g_threads{0};  // 0: follow slimtensor::num_threads()
}  // namespace

void set_threads(int n) { g_threads.store(n < 1 ? 1 : n, std::memory_order_relaxed); }
int threads() {
  const int n = g_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : num_threads();
}

#ifdef SLIMTENSOR_HAVE_DNNL
namespace {

LoadedLibrary<Api> g_dnnl;  // Note [Libraries opened at run time]
std::once_flag g_once;

// The loaded functions and engine; only called where api() has returned them.
const Api& dnnl() { return *g_dnnl.api(); }

void* open_dnnl(std::string* path, std::string* errors) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("SLIMTENSOR_DNNL")) candidates.push_back(env);
  const std::string bundled = core_library_dir();
  candidates.push_back(bundled + "/libdnnl.so.2");
  if (SLIMTENSOR_DNNL_BUILD_PATH[0]) candidates.push_back(SLIMTENSOR_DNNL_BUILD_PATH);
  // The bundled copy's libOpenCL.so.1 (oneDNN's GPU runtime, never called on the CPU engine): loaded by
  // path, so the DT_NEEDED of either copy finds it by soname even where the system has none.
  const std::string opencl = bundled + "/libOpenCL.so.1";
  if (access(opencl.c_str(), R_OK) == 0) dlopen(opencl.c_str(), RTLD_NOW | RTLD_LOCAL);
  return open_first_library(candidates, path, errors);
}

void load() {
  std::string path, errors;
  void* h = open_dnnl(&path, &errors);
  if (!h) {
    g_dnnl.refuse(
        "oneDNN (libdnnl.so.2) could not be loaded; install it with 'apt-get install libdnnl2' or point "
        "SLIMTENSOR_DNNL at libdnnl.so.2. Tried:" +
        errors);
    return;
  }
  Api a{};
  std::string missing;
#  define SLIMTENSOR_DNNL_LOAD(name)                              \
    a.name = reinterpret_cast<decltype(a.name)>(dlsym(h, #name)); \
    if (!a.name) missing += " " #name;
  SLIMTENSOR_DNNL_FUNCTIONS(SLIMTENSOR_DNNL_LOAD)
#  undef SLIMTENSOR_DNNL_LOAD
  a.omp_set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "omp_set_num_threads"));
  a.omp_get_max_threads = reinterpret_cast<int (*)()>(dlsym(h, "omp_get_max_threads"));
  if (!a.omp_set_num_threads || !a.omp_get_max_threads) missing += " omp_set_num_threads/omp_get_max_threads";
  if (!missing.empty()) {
    g_dnnl.refuse(path + " lacks" + missing + "; slimtensor needs oneDNN 2.x built with OpenMP (Debian's libdnnl2)");
    return;
  }
  const dnnl_version_t* v = a.dnnl_version();
  if (!v || v->major != DNNL_VERSION_MAJOR) {
    g_dnnl.refuse(path + " is oneDNN " + (v ? std::to_string(v->major) : std::string("?")) +
                  ".x but slimtensor was built against " + std::to_string(DNNL_VERSION_MAJOR) + ".x");
    return;
  }
  if (a.dnnl_engine_create(&a.engine, dnnl_cpu, 0) != dnnl_success) {
    g_dnnl.refuse(path + ": no oneDNN CPU engine could be created");
    return;
  }
  g_dnnl.publish(a, path);
}

const char* status_name(dnnl_status_t s) {
  switch (s) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "unimplemented";
    case dnnl_iterator_ends: return "iterator ends";
    case dnnl_runtime_error: return "runtime error";
    case dnnl_not_required: return "not required";
    default: return "unknown status";
  }
}

struct ThreadStream {
  dnnl_stream_t s = nullptr;
  ~ThreadStream() {
    if (s) dnnl().dnnl_stream_destroy(s);
  }
};

}  // namespace

const Api* api() {
  if (const Api* a = g_dnnl.api()) return a;
  std::call_once(g_once, load);
  return g_dnnl.api();
}

const char* unavailable_reason() {
  api();
  return g_dnnl.failure().c_str();
}

const char* loaded_path() { return g_dnnl.path(); }

std::string version() {
  const Api* a = api();
  if (!a) return "";
  const dnnl_version_t* v = a->dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

int tie_threads() {
  const int n = threads();
  if (const Api* a = api()) {
    if (a->omp_get_max_threads() != n) a->omp_set_num_threads(n);
  }
  return n;
}

bool sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const char* fn) {
  const Api* api_ = api();
  if (!api_) return false;
  tie_threads();
  check(api_->dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), fn,
        "multiply matrices (dnnl_sgemm)");
  return true;
}

void check(dnnl_status_t status, const char* fn, const char* what) {
  if (status != dnnl_success) {
    fail(status == dnnl_out_of_memory ? ErrorKind::Memory : ErrorKind::Runtime, fn, "(): oneDNN could not ", what, ": ",
         status_name(status), " (status ", static_cast<int>(status), ")");
  }
}

dnnl_stream_t thread_stream(const char* fn) {
  thread_local ThreadStream ts;
  if (!ts.s) check(dnnl().dnnl_stream_create(&ts.s, dnnl().engine, dnnl_stream_default_flags), fn, "create a stream");
  return ts.s;
}

Memory::Memory(const dnnl_memory_desc_t& md, void* data, const char* fn) {
  check(dnnl().dnnl_memory_create(&m_, &md, dnnl().engine, data), fn, "create a memory object");
}
Memory::~Memory() {
  if (m_) dnnl().dnnl_memory_destroy(m_);
}

PrimitiveDesc& PrimitiveDesc::operator=(PrimitiveDesc&& o) noexcept {
  if (this != &o) {
    if (pd) dnnl().dnnl_primitive_desc_destroy(pd);
    pd = o.pd;
    o.pd = nullptr;
  }
  return *this;
}
PrimitiveDesc::~PrimitiveDesc() {
  if (pd) dnnl().dnnl_primitive_desc_destroy(pd);
}
Primitive& Primitive::operator=(Primitive&& o) noexcept {
  if (this != &o) {
    if (p) dnnl().dnnl_primitive_destroy(p);
    p = o.p;
    o.p = nullptr;
  }
  return *this;
}
Primitive::~Primitive() {
  if (p) dnnl().dnnl_primitive_destroy(p);
}

dnnl_primitive_attr_t user_scratchpad_attr(const char* fn) {
  dnnl_primitive_attr_t attr = nullptr;
  check(dnnl().dnnl_primitive_attr_create(&attr), fn, "create a primitive attribute");
  dnnl_status_t s = dnnl().dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (s != dnnl_success) dnnl().dnnl_primitive_attr_destroy(attr);
  check(s, fn, "set the scratchpad mode");
  return attr;
}

AttrGuard::~AttrGuard() {
  if (attr) dnnl().dnnl_primitive_attr_destroy(attr);
}

Step make_step(const PrimitiveDesc& pd, const char* fn, const char* what) {
  Step step;
  check(dnnl().dnnl_primitive_create(&step.prim.p, pd.pd), fn, what);
  if (const dnnl_memory_desc_t* md = dnnl().dnnl_primitive_desc_query_md(pd.pd, dnnl_query_scratchpad_md, 0)) {
    step.scratch_md = *md;
    step.scratch_bytes = dnnl().dnnl_memory_desc_get_size(md);
  }
  return step;
}

Step make_reorder(const dnnl_memory_desc_t& src, const dnnl_memory_desc_t& dst, const char* fn) {
  if (dnnl().dnnl_memory_desc_equal(&src, &dst)) return Step();
  AttrGuard attr{user_scratchpad_attr(fn)};
  dnnl_primitive_desc_t pd = nullptr;
  check(dnnl().dnnl_reorder_primitive_desc_create(&pd, &src, dnnl().engine, &dst, dnnl().engine, attr.attr), fn,
        "create a reorder");
  PrimitiveDesc owned(pd);
  return make_step(owned, fn, "create a reorder");
}

void execute(const Step& step, std::vector<dnnl_exec_arg_t> args, const char* fn) {
  std::unique_ptr<Memory> scratch;
  if (step.scratch_bytes) {
    scratch = std::make_unique<Memory>(step.scratch_md, thread_buffer(7, step.scratch_bytes), fn);
    args.push_back({DNNL_ARG_SCRATCHPAD, scratch->get()});
  }
  dnnl_stream_t stream = thread_stream(fn);
  check(dnnl().dnnl_primitive_execute(step.prim.p, stream, static_cast<int>(args.size()), args.data()), fn,
        "execute a primitive");
  check(dnnl().dnnl_stream_wait(stream), fn, "finish a primitive");
}

void* thread_buffer(int slot, size_t bytes) {
  struct Buffers {
    void* p[8] = {};
    size_t n[8] = {};
    ~Buffers() {
      for (void* q : p) std::free(q);
    }
  };
  thread_local Buffers b;
  if (b.n[slot] < bytes) {
    std::free(b.p[slot]);
    b.p[slot] = nullptr;
    b.n[slot] = 0;
    size_t rounded = (bytes + 63) / 64 * 64;
    void* q = std::aligned_alloc(64, rounded);
    if (!q) fail(ErrorKind::Memory, "oneDNN", "(): could not allocate a ", rounded, "-byte work buffer");
    b.p[slot] = q;
    b.n[slot] = rounded;
  }
  return b.p[slot];
}

dnnl_memory_desc_t query_md(const PrimitiveDesc& pd, dnnl_query_t what, int index) {
  const dnnl_memory_desc_t* md = dnnl().dnnl_primitive_desc_query_md(pd.pd, what, index);
  dnnl_memory_desc_t out{};
  if (md) out = *md;
  return out;
}

std::string implementation(const PrimitiveDesc& pd) {
  const char* name = nullptr;
  if (dnnl().dnnl_primitive_desc_query(pd.pd, dnnl_query_impl_info_str, 0, &name) != dnnl_success || !name) return "";
  return name;
}

size_t md_bytes(const dnnl_memory_desc_t& md) { return dnnl().dnnl_memory_desc_get_size(&md); }
bool md_equal(const dnnl_memory_desc_t& a, const dnnl_memory_desc_t& b) {
  return dnnl().dnnl_memory_desc_equal(&a, &b) != 0;
}

dnnl_memory_desc_t strided_md(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                              dnnl_data_type_t dt, const char* fn) {
  dnnl_memory_desc_t md;
  check(dnnl().dnnl_memory_desc_init_by_strides(&md, static_cast<int>(sizes.size()), sizes.data(), dt, strides.data()),
        fn, "describe a strided tensor");
  return md;
}

dnnl_memory_desc_t tagged_md(const std::vector<int64_t>& sizes, dnnl_data_type_t dt, dnnl_format_tag_t tag,
                             const char* fn) {
  dnnl_memory_desc_t md;
  check(dnnl().dnnl_memory_desc_init_by_tag(&md, static_cast<int>(sizes.size()), sizes.data(), dt, tag), fn,
        "describe a tensor");
  return md;
}

#else  // built without dnnl.h

const Api* api() { return nullptr; }
const char* unavailable_reason() {
  return "slimtensor was built without oneDNN (no dnnl.h on the build machine); install it with "
         "'apt-get install libdnnl-dev' and rebuild slimtensor-core";
}
const char* loaded_path() { return ""; }
std::string version() { return ""; }
int tie_threads() { return threads(); }
bool sgemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float, float*,
           int64_t, const char*) {
  return false;
}

#endif

}  // namespace slimtensor::aoti::onednn

extern "C" {
const char* slimtensor_onednn_info(void) {
  static std::string info;  // written once, under the once flag (the loaded library never changes)
  static std::once_flag once;
  try {
    if (!slimtensor::aoti::onednn::api()) {
      slimtensor::aoti::set_last_error("slimtensor_onednn_info", slimtensor::aoti::onednn::unavailable_reason());
      return "";
    }
    std::call_once(once, [] {
      info = std::string(slimtensor::aoti::onednn::loaded_path()) + " | oneDNN " + slimtensor::aoti::onednn::version();
    });
    return info.c_str();
  } catch (const std::exception& e) {  // Note [No exception crosses the C ABI]
    slimtensor::aoti::set_last_error("slimtensor_onednn_info", e.what());
    return "";
  }
}

int32_t slimtensor_onednn_threads(void) {
#ifdef SLIMTENSOR_HAVE_DNNL
  if (const slimtensor::aoti::onednn::Api* a = slimtensor::aoti::onednn::api()) return a->omp_get_max_threads();
#endif
  return -1;
}

void slimtensor_onednn_set_num_threads(int32_t n) { slimtensor::aoti::onednn::set_threads(n); }

int64_t slimtensor_onednn_convolution_plans(void) {
  return static_cast<int64_t>(slimtensor::aoti::onednn_convolution_plans());
}
}

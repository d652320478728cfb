// src/aoti/ops/onednn.h: oneDNN (Debian's libdnnl 2.6) behind the convolution and RNN fallbacks: loaded on first use,
// its threads tied to slimtensor's.
//
// Note [Lazy oneDNN]
// libslimtensor does not link oneDNN: api() dlopens libdnnl.so.2 (RTLD_LOCAL) the first time a fallback
// needs it, so `import slimtensor` never maps its 40 MB nor starts its OpenMP pool. Where it looks:
// $SLIMTENSOR_DNNL, then the copy the wheel bundles next to libslimtensor (slimtensor/lib, with the
// libOpenCL.so.1 it needs, loaded first by path so its soname is found), then the build machine's.
// The header is the build machine's dnnl.h (apt-get install libdnnl-dev): the function types come from it,
// the functions from the loaded library. Built without that header (SLIMTENSOR_HAVE_DNNL undefined),
// api() always reports oneDNN unavailable and the fallbacks that can use another path do.
//
// Note [oneDNN threads]
// Debian's oneDNN runs on OpenMP (libgomp.so.1, the runtime AOTInductor models link too). Its primitives
// size their work for omp_get_max_threads() of the calling thread, when created and when executed, and
// that is a per-thread setting. So every use first calls tie_threads(), which sets the calling thread's
// OpenMP thread count to threads() (st.set_num_threads and slimtensor.aoti.set_num_threads set it, through
// slimtensor_onednn_set_num_threads), and the primitive caches key on that count.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef SLIMTENSOR_HAVE_DNNL
#  include <oneapi/dnnl/dnnl.h>
#endif

namespace slimtensor::aoti::onednn {

#ifdef SLIMTENSOR_HAVE_DNNL

#  define SLIMTENSOR_DNNL_FUNCTIONS(X)              \
    X(dnnl_engine_create)                           \
    X(dnnl_stream_create)                           \
    X(dnnl_stream_destroy)                          \
    X(dnnl_stream_wait)                             \
    X(dnnl_memory_desc_init_by_strides)             \
    X(dnnl_memory_desc_init_by_tag)                 \
    X(dnnl_memory_desc_equal)                       \
    X(dnnl_memory_desc_get_size)                    \
    X(dnnl_memory_create)                           \
    X(dnnl_memory_destroy)                          \
    X(dnnl_primitive_attr_create)                   \
    X(dnnl_primitive_attr_destroy)                  \
    X(dnnl_primitive_attr_set_scratchpad_mode)      \
    X(dnnl_primitive_desc_create)                   \
    X(dnnl_primitive_desc_destroy)                  \
    X(dnnl_primitive_desc_query_md)                 \
    X(dnnl_primitive_desc_query)                    \
    X(dnnl_primitive_create)                        \
    X(dnnl_primitive_destroy)                       \
    X(dnnl_primitive_execute)                       \
    X(dnnl_reorder_primitive_desc_create)           \
    X(dnnl_dilated_convolution_forward_desc_init)   \
    X(dnnl_dilated_deconvolution_forward_desc_init) \
    X(dnnl_lstm_forward_desc_init)                  \
    X(dnnl_sgemm)                                   \
    X(dnnl_version)

struct Api {
#  define SLIMTENSOR_DNNL_MEMBER(name) decltype(&::name) name;
  SLIMTENSOR_DNNL_FUNCTIONS(SLIMTENSOR_DNNL_MEMBER)
#  undef SLIMTENSOR_DNNL_MEMBER
  // from the libgomp.so.1 oneDNN loaded (Note [oneDNN threads])
  void (*omp_set_num_threads)(int);
  int (*omp_get_max_threads)();
  dnnl_engine_t engine;  // the one CPU engine, made at load
};

// Throws Error(Runtime) naming `fn`, `what` and oneDNN's status unless status is dnnl_success.
void check(dnnl_status_t status, const char* fn, const char* what);

// The calling thread's stream on the engine (made on first use, one per thread: streams are not shared).
dnnl_stream_t thread_stream(const char* fn);

// A dnnl_memory_t over `data` (not owned), destroyed with the object.
class Memory {
 public:
  Memory(const dnnl_memory_desc_t& md, void* data, const char* fn);
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  dnnl_memory_t get() const { return m_; }

 private:
  dnnl_memory_t m_ = nullptr;
};

// Owned primitive descriptors and primitives (destroyed through the loaded library).
struct PrimitiveDesc {
  dnnl_primitive_desc_t pd = nullptr;
  PrimitiveDesc() = default;
  explicit PrimitiveDesc(dnnl_primitive_desc_t p) : pd(p) {}
  PrimitiveDesc(PrimitiveDesc&& o) noexcept : pd(o.pd) { o.pd = nullptr; }
  PrimitiveDesc& operator=(PrimitiveDesc&& o) noexcept;
  ~PrimitiveDesc();
};
struct Primitive {
  dnnl_primitive_t p = nullptr;
  Primitive() = default;
  explicit Primitive(dnnl_primitive_t q) : p(q) {}
  Primitive(Primitive&& o) noexcept : p(o.p) { o.p = nullptr; }
  Primitive& operator=(Primitive&& o) noexcept;
  ~Primitive();
};

// A primitive ready to run: the primitive and the scratchpad it asks for. Every slimtensor primitive is
// made with a user scratchpad (dnnl_scratchpad_mode_user), supplied per execution from a thread-local
// buffer, so one cached primitive may run on several threads at once.
struct Step {
  Primitive prim;
  dnnl_memory_desc_t scratch_md{};
  size_t scratch_bytes = 0;
  explicit operator bool() const { return prim.p != nullptr; }
};

// The attribute for user scratchpads; the caller destroys it (AttrGuard).
dnnl_primitive_attr_t user_scratchpad_attr(const char* fn);
struct AttrGuard {
  dnnl_primitive_attr_t attr;
  ~AttrGuard();
};
// The step for pd (made with user_scratchpad_attr()).
Step make_step(const PrimitiveDesc& pd, const char* fn, const char* what);
// A reorder (layout and/or dtype conversion) from src to dst; an empty Step when the two are equal.
Step make_reorder(const dnnl_memory_desc_t& src, const dnnl_memory_desc_t& dst, const char* fn);
// Runs step with args (plus its scratchpad) on the calling thread's stream and waits for it.
void execute(const Step& step, std::vector<dnnl_exec_arg_t> args, const char* fn);
// A thread-local, 64-byte aligned buffer of at least `bytes` for slot 0..7, reused between calls on the
// thread (slot 7 is the scratchpad's).
void* thread_buffer(int slot, size_t bytes);
// The memory descriptor a primitive descriptor reports for `what` (dnnl_query_src_md, ...), index `index`.
dnnl_memory_desc_t query_md(const PrimitiveDesc& pd, dnnl_query_t what, int index);
// The implementation oneDNN chose for pd ("jit:avx512_core", "ref:any", ...).
std::string implementation(const PrimitiveDesc& pd);
size_t md_bytes(const dnnl_memory_desc_t& md);
bool md_equal(const dnnl_memory_desc_t& a, const dnnl_memory_desc_t& b);

// A memory descriptor from torch-style sizes and strides (in elements).
dnnl_memory_desc_t strided_md(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                              dnnl_data_type_t dt, const char* fn);
dnnl_memory_desc_t tagged_md(const std::vector<int64_t>& sizes, dnnl_data_type_t dt, dnnl_format_tag_t tag,
                             const char* fn);

// A process-wide map from a call's shape (a list of integers: sizes, strides, parameters, dtype, threads) to
// its plan (primitives and reorders), made once per key. A key whose factory returned null stays null (the
// caller's other path takes it from then on). At most max_plans entries; then the map starts over.
template <typename Plan>
class PlanCache {
 public:
  explicit PlanCache(size_t max_plans) : max_(max_plans) {}
  std::shared_ptr<const Plan> get(const std::vector<int64_t>& key,
                                  const std::function<std::shared_ptr<const Plan>()>& make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = plans_.find(key);
      if (it != plans_.end()) return it->second;
    }
    std::shared_ptr<const Plan> plan = make();  // outside the lock: making a plan takes a while
    std::lock_guard<std::mutex> lock(mutex_);
    if (plans_.size() >= max_) plans_.clear();
    plans_.emplace(key, plan);
    return plan;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return plans_.size();
  }

 private:
  struct Hash {
    size_t operator()(const std::vector<int64_t>& k) const {
      uint64_t h = 1469598103934665603ull;  // FNV-1a over the integers
      for (int64_t x : k) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
      return static_cast<size_t>(h);
    }
  };
  size_t max_;
  std::mutex mutex_;
  std::unordered_map<std::vector<int64_t>, std::shared_ptr<const Plan>, Hash> plans_;
};

#else
struct Api;
#endif

// The loaded oneDNN, or nullptr when it cannot be loaded (never throws); unavailable_reason() says why.
const Api* api();
const char* unavailable_reason();
// The path it was loaded from ("" before it is, or when it is unavailable) and its version ("2.6.3").
const char* loaded_path();
std::string version();

// The thread count oneDNN runs with: the last set_threads(n) (slimtensor.aoti.set_num_threads, which
// st.set_num_threads calls), else slimtensor::num_threads().
void set_threads(int n);
int threads();
// Sets the calling thread's OpenMP thread count to threads() (Note [oneDNN threads]) and returns it.
int tie_threads();

// Row-major C = alpha * op(A) @ op(B) + beta * C (BLAS semantics: beta == 0 ignores C) through oneDNN's
// dnnl_sgemm, on threads(); false, having done nothing, when oneDNN is unavailable. Note [GEMM on oneDNN]
// in src/aoti/ops/gemm.cpp says why the float32 GEMMs take it.
bool sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const char* fn);

}  // namespace slimtensor::aoti::onednn

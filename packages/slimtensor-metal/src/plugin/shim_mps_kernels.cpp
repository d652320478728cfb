// shim_mps_kernels.cpp: torch's MPS kernel shims: shader libraries, kernel functions, argument binding,
// dispatch and command blocks (Note [MPS shim objects]).
#include <algorithm>
#include <cinttypes>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "checked.h"
#include "errors.h"
#include "layout.h"
#include "plugin.h"
#include "shim_mps.h"
#include "strided_copy.h"

using namespace slimtensor_metal;

namespace {

constexpr uint32_t kFunctionMagic = 0x4B53504Du;  // "MPSK"

struct ShaderLibrary;

struct KernelFunction {
  uint32_t magic = kFunctionMagic;
  ShaderLibrary* library = nullptr;
  std::string name;
  void* pipeline = nullptr;  // +1, released with the library
  uint32_t max_threads = 0;
  Stream* stream = nullptr;  // where start_encoding opened the encoder
  void* encoder = nullptr;   // borrowed from the stream while encoding
  int block_depth = 0;
  std::string block_error;  // first failure inside run_command_block
};

struct ShaderLibrary {
  MetalContext* ctx = nullptr;
  void* library = nullptr;  // +1
  std::vector<std::unique_ptr<KernelFunction>> functions;
};

// Live libraries, only to tell a live handle from a deleted or foreign one (no state of any model).
std::mutex g_libs_mu;
std::unordered_set<ShaderLibrary*> g_libs;

ShaderLibrary* live_library(AOTIMetalShaderLibraryHandle h) {
  std::lock_guard<std::mutex> g(g_libs_mu);
  auto* l = reinterpret_cast<ShaderLibrary*>(h);
  return g_libs.count(l) ? l : nullptr;
}

KernelFunction* function_or_fail(const char* fn, AOTIMetalKernelFunctionHandle h) {
  auto* f = reinterpret_cast<KernelFunction*>(h);
  if (!f) {
    fail("%s: needs a kernel function but got NULL", fn);
    return nullptr;
  }
  if (f->magic != kFunctionMagic || !live_library(reinterpret_cast<AOTIMetalShaderLibraryHandle>(f->library))) {
    fail("%s: %p is not a live kernel function (from aoti_torch_mps_get_kernel_function of a library not yet deleted)",
         fn, static_cast<void*>(f));
    return nullptr;
  }
  return f;
}

// Records a failure inside a command block so run_command_block reports it (the callback returns void).
int note(KernelFunction* f, int rc) {
  if (rc && f && f->block_depth > 0 && f->block_error.empty()) f->block_error = last_error();
  return rc;
}

// The encoder a kernel function fills, checking it is still the stream's open one.
int encoder_of(const char* fn, KernelFunction* f, void** enc) {
  if (!f->encoder)
    return fail("%s: kernel '%s' is not encoding; call aoti_torch_mps_start_encoding first", fn, f->name.c_str());
  if (f->stream->open_encoder() != f->encoder) {
    f->encoder = nullptr;
    return fail(
        "%s: the encoding of kernel '%s' was ended by other work on the stream (a copy, a matmul or a "
        "synchronize) between start_encoding and here; call aoti_torch_mps_start_encoding again",
        fn, f->name.c_str());
  }
  *enc = f->encoder;
  return 0;
}

int dispatch(const char* fn, KernelFunction* f, const uint64_t* length, size_t n, const uint64_t* group, size_t gn) {
  if (!length || n == 0 || n > 3) return fail("%s: needs 1 to 3 grid dimensions but got %zu", fn, n);
  if (group && gn != n) return fail("%s: needs as many group sizes as grid dimensions (%zu) but got %zu", fn, n, gn);
  uint64_t grid[3] = {1, 1, 1}, tg[3] = {1, 1, 1};
  for (size_t i = 0; i < n; ++i) {
    if (length[i] == 0) return 0;  // nothing to run (Metal rejects empty grids)
    grid[i] = length[i];
  }
  if (group) {
    uint64_t total = 1;
    for (size_t i = 0; i < n; ++i) {
      if (group[i] == 0) return fail("%s: group sizes must be > 0 but group_size[%zu] is 0", fn, i);
      tg[i] = group[i];
      if (!mul_u64(total, group[i], &total)) total = UINT64_MAX;
    }
    if (total > f->max_threads)
      return fail("%s: a threadgroup of %" PRIu64
                  " threads exceeds kernel '%s''s maximum of %u "
                  "(maxTotalThreadsPerThreadgroup)",
                  fn, total, f->name.c_str(), f->max_threads);
  } else {
    tg[0] = std::min<uint64_t>(grid[0], f->max_threads ? f->max_threads : 1);
  }
  MetalContext* c = f->library->ctx;
  std::lock_guard<std::mutex> g(c->mutex());
  void* enc;
  if (encoder_of(fn, f, &enc)) return 1;
  c->api()->dispatch_threads(enc, grid, tg);
  return 0;
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_mps_create_shader_library(const char* source, AOTIMetalShaderLibraryHandle* out) {
  const char* fn = "aoti_torch_mps_create_shader_library()";
  return guarded(fn, [&] {
    if (!source || !out) return fail("%s: needs a source string and an output pointer but got NULL", fn);
    MetalContext* c = mps_context();
    if (!c) return fail("%s: the MPS plugin is not initialised", fn);
    std::lock_guard<std::mutex> g(c->mutex());
    if (c->ensure_available_locked(fn)) return 1;
    auto lib = std::make_unique<ShaderLibrary>();
    lib->ctx = c;
    std::string err(4096, '\0');
    if (c->api()->compile_library(c->device(), source, &lib->library, &err[0], err.size()))
      return fail("%s: the model's Metal source did not compile: %s", fn, err.c_str());
    std::lock_guard<std::mutex> gl(g_libs_mu);
    g_libs.insert(lib.get());
    *out = reinterpret_cast<AOTIMetalShaderLibraryHandle>(lib.release());
    return 0;
  });
}

AOTITorchError aoti_torch_mps_delete_shader_library(AOTIMetalShaderLibraryHandle h) {
  const char* fn = "aoti_torch_mps_delete_shader_library()";
  return guarded(fn, [&] {
    if (!h) return 0;
    ShaderLibrary* lib = live_library(h);
    if (!lib) return fail("%s: %p is not a live shader library (deleted twice?)", fn, static_cast<void*>(h));
    {
      std::lock_guard<std::mutex> gl(g_libs_mu);
      g_libs.erase(lib);
    }
    MetalContext* c = lib->ctx;
    std::lock_guard<std::mutex> g(c->mutex());
    // Only this library's objects (Note [MPS shim objects]); queued work keeps its pipelines (retained by
    // the command buffers that use them).
    for (auto& f : lib->functions) {
      f->magic = 0;
      c->api()->release(f->pipeline);
    }
    c->api()->release(lib->library);
    delete lib;
    return 0;
  });
}

AOTITorchError aoti_torch_mps_get_kernel_function(AOTIMetalShaderLibraryHandle h, const char* name,
                                                  AOTIMetalKernelFunctionHandle* out) {
  const char* fn = "aoti_torch_mps_get_kernel_function()";
  return guarded(fn, [&] {
    if (!name || !out) return fail("%s: needs a kernel name and an output pointer but got NULL", fn);
    ShaderLibrary* lib = live_library(h);
    if (!lib) return fail("%s: %p is not a live shader library", fn, static_cast<void*>(h));
    MetalContext* c = lib->ctx;
    std::lock_guard<std::mutex> g(c->mutex());
    for (auto& f : lib->functions)
      if (f->name == name) {
        *out = reinterpret_cast<AOTIMetalKernelFunctionHandle>(f.get());
        return 0;
      }
    auto f = std::make_unique<KernelFunction>();
    f->library = lib;
    f->name = name;
    uint32_t simd = 0;
    char err[1024] = {0};
    if (c->api()->new_pipeline(c->device(), lib->library, name, &f->pipeline, &f->max_threads, &simd, err, sizeof err))
      return fail("%s: no kernel '%s' in the library (or no pipeline for it): %s", fn, name, err);
    lib->functions.push_back(std::move(f));
    *out = reinterpret_cast<AOTIMetalKernelFunctionHandle>(lib->functions.back().get());
    return 0;
  });
}

AOTITorchError aoti_torch_mps_start_encoding(AOTIMetalKernelFunctionHandle h) {
  const char* fn = "aoti_torch_mps_start_encoding()";
  KernelFunction* f = nullptr;
  const int rc = guarded(fn, [&] {
    f = function_or_fail(fn, h);
    if (!f) return 1;
    MetalContext* c = f->library->ctx;
    std::lock_guard<std::mutex> g(c->mutex());
    Stream* s = c->current_stream_locked();
    void* enc;
    if (s->compute_encoder(&enc)) return 1;
    c->api()->set_pipeline(enc, f->pipeline);
    f->stream = s;
    f->encoder = enc;
    return 0;
  });
  return note(f, rc);
}

AOTITorchError aoti_torch_mps_set_arg_tensor(AOTIMetalKernelFunctionHandle h, unsigned idx, AtenTensorHandle t) {
  const char* fn = "aoti_torch_mps_set_arg_tensor()";
  KernelFunction* f = nullptr;
  const int rc = guarded(fn, [&] {
    f = function_or_fail(fn, h);
    if (!f) return 1;
    MetalContext* c = f->library->ctx;
    std::lock_guard<std::mutex> g(c->mutex());
    void* enc;
    if (encoder_of(fn, f, &enc)) return 1;
    TensorInfo ti;
    const std::string what = std::string(fn) + ": argument " + std::to_string(idx) + " of kernel '" + f->name + "'";
    if (read_tensor_locked(c, what.c_str(), t, &ti)) return 1;
    uint64_t extent;
    if (!extent_bytes(what.c_str(), static_cast<int32_t>(ti.ndim), ti.sizes, ti.strides, ti.itemsize, &extent))
      return 1;
    Resolved r;
    if (c->resolve_handle_locked(what.c_str(), ti.buffer, ti.offset, extent, &r)) return 1;
    if (ti.offset % static_cast<uint64_t>(ti.itemsize) != 0)
      return fail("%s: byte offset %" PRIu64 " is not a multiple of the element size %" PRId64
                  " (Metal binds device buffers at offsets aligned to the element type); make the tensor contiguous",
                  what.c_str(), ti.offset, ti.itemsize);
    // Bound in place: the kernel reads and writes the tensor's own memory (a view aliases its base).
    c->api()->set_buffer(enc, r.buffer, r.offset, idx);
    return 0;
  });
  return note(f, rc);
}

AOTITorchError aoti_torch_mps_set_arg_int(AOTIMetalKernelFunctionHandle h, unsigned idx, int64_t val) {
  const char* fn = "aoti_torch_mps_set_arg_int()";
  KernelFunction* f = nullptr;
  const int rc = guarded(fn, [&] {
    f = function_or_fail(fn, h);
    if (!f) return 1;
    MetalContext* c = f->library->ctx;
    std::lock_guard<std::mutex> g(c->mutex());
    void* enc;
    if (encoder_of(fn, f, &enc)) return 1;
    c->api()->set_bytes(enc, &val, sizeof val, idx);  // setBytes copies the 8 bytes at encoding time
    return 0;
  });
  return note(f, rc);
}

AOTITorchError aoti_torch_mps_dispatch_single(AOTIMetalKernelFunctionHandle h, uint64_t length) {
  const char* fn = "aoti_torch_mps_dispatch_single()";
  KernelFunction* f = nullptr;
  const int rc = guarded(fn, [&] {
    f = function_or_fail(fn, h);
    return f ? dispatch(fn, f, &length, 1, nullptr, 0) : 1;
  });
  return note(f, rc);
}

AOTITorchError aoti_torch_mps_dispatch_single_with_group_size(AOTIMetalKernelFunctionHandle h, uint64_t length,
                                                              uint64_t group_size) {
  const char* fn = "aoti_torch_mps_dispatch_single_with_group_size()";
  KernelFunction* f = nullptr;
  const int rc = guarded(fn, [&] {
    f = function_or_fail(fn, h);
    if (!f) return 1;
    // torch: a group size of 0 means "the default" (as wide as the kernel allows)
    return group_size == 0 ? dispatch(fn, f, &length, 1, nullptr, 0) : dispatch(fn, f, &length, 1, &group_size, 1);
  });
  return note(f, rc);
}

AOTITorchError aoti_torch_mps_dispatch_array(AOTIMetalKernelFunctionHandle h, const uint64_t* length, size_t n) {
  const char* fn = "aoti_torch_mps_dispatch_array()";
  KernelFunction* f = nullptr;
  const int rc = guarded(fn, [&] {
    f = function_or_fail(fn, h);
    return f ? dispatch(fn, f, length, n, nullptr, 0) : 1;
  });
  return note(f, rc);
}

AOTITorchError aoti_torch_mps_dispatch_array_with_group_size(AOTIMetalKernelFunctionHandle h, const uint64_t* length,
                                                             size_t n, const uint64_t* group, size_t gn) {
  const char* fn = "aoti_torch_mps_dispatch_array_with_group_size()";
  KernelFunction* f = nullptr;
  const int rc = guarded(fn, [&] {
    f = function_or_fail(fn, h);
    if (!f) return 1;
    if (!group) return fail("%s: needs group sizes but got NULL; use aoti_torch_mps_dispatch_array", fn);
    return dispatch(fn, f, length, n, group, gn);
  });
  return note(f, rc);
}

void aoti_torch_mps_shared_callback(AOTIMetalKernelFunctionHandle h, void* user_data) {
  auto* f = reinterpret_cast<KernelFunction*>(h);
  auto* fnobj = static_cast<std::function<void(AOTIMetalKernelFunctionHandle)>*>(user_data);
  if (!fnobj) {
    fail("aoti_torch_mps_shared_callback(): needs the std::function trampoline in user_data but got NULL");
    note(f && f->magic == kFunctionMagic ? f : nullptr, 1);
    return;
  }
  try {
    (*fnobj)(h);
  } catch (const std::exception& e) {
    fail("aoti_torch_mps_shared_callback(): the model's encoding callback threw: %s", e.what());
    note(f && f->magic == kFunctionMagic ? f : nullptr, 1);
  } catch (...) {
    fail("aoti_torch_mps_shared_callback(): the model's encoding callback threw");
    note(f && f->magic == kFunctionMagic ? f : nullptr, 1);
  }
}

AOTITorchError aoti_torch_mps_run_command_block(AOTIMetalKernelFunctionHandle h,
                                                aoti_torch_mps_command_block_callback_t callback, void* user_data) {
  const char* fn = "aoti_torch_mps_run_command_block()";
  KernelFunction* f = function_or_fail(fn, h);
  if (!f) return 1;
  if (!callback) return fail("%s: needs a callback but got NULL", fn);
  if (f->block_depth++ == 0) f->block_error.clear();
  // The lock is not held: the callback calls the other shims, which take it themselves.
  int rc = 0;
  try {
    callback(h, user_data);
  } catch (const std::exception& e) {
    rc = fail("%s: the encoding callback of kernel '%s' threw: %s", fn, f->name.c_str(), e.what());
  } catch (...) {
    rc = fail("%s: the encoding callback of kernel '%s' threw", fn, f->name.c_str());
  }
  const bool outer = --f->block_depth == 0;
  if (rc == 0 && outer && !f->block_error.empty()) {
    rc = fail("%s: kernel '%s': %s", fn, f->name.c_str(), f->block_error.c_str());
    f->block_error.clear();
  }
  return rc;
}

}  // extern "C"

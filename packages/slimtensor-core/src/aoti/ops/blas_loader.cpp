// src/aoti/ops/blas_loader.cpp: finds and dlopens scipy-openblas32 on first use (Note [Lazy BLAS]) and keeps its thread
// count.
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "aoti/ops/blas.h"
#include "slimtensor/base/error.h"

#ifndef SLIMTENSOR_OPENBLAS_BUILD_PATH
#  define SLIMTENSOR_OPENBLAS_BUILD_PATH ""
#endif

namespace slimtensor::aoti::blas {
namespace {

std::atomic<const Api*> g_api{nullptr};
std::atomic<int> g_threads{0};  // requested; 0 = OpenBLAS's default
std::mutex g_mutex;
Api g_storage;
std::string g_path, g_failure;

std::string self_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&set_threads), &info) && info.dli_fname) {
    std::string p = info.dli_fname;
    auto slash = p.rfind('/');
    if (slash != std::string::npos) return p.substr(0, slash);
  }
  return ".";
}

bool amd_with_avx512() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_is("amd") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

void* open_blas(std::string* path, std::string* errors) {
  std::string candidates[3];
  int n = 0;
  if (const char* env = std::getenv("SLIMTENSOR_OPENBLAS")) candidates[n++] = env;
  // <site-packages>/slimtensor/lib/libslimtensor.so -> <site-packages>/scipy_openblas32/lib/
  candidates[n++] = self_dir() + "/../../scipy_openblas32/lib/libscipy_openblas.so";
  if (SLIMTENSOR_OPENBLAS_BUILD_PATH[0]) candidates[n++] = SLIMTENSOR_OPENBLAS_BUILD_PATH;
  bool set_core = amd_with_avx512() && !std::getenv("OPENBLAS_CORETYPE");
  if (set_core) setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  void* h = nullptr;
  for (int i = 0; i < n && !h; ++i) {
    h = dlopen(candidates[i].c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      *path = candidates[i];
    } else {
      const char* e = dlerror();
      *errors += "\n  " + candidates[i] + ": " + (e ? e : "?");
    }
  }
  if (set_core) unsetenv("OPENBLAS_CORETYPE");
  return h;
}

}  // namespace

const Api& api(const char* function) {
  if (const Api* a = g_api.load(std::memory_order_acquire)) return *a;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (const Api* a = g_api.load(std::memory_order_acquire)) return *a;
  if (g_failure.empty()) {
    std::string errors;
    void* h = open_blas(&g_path, &errors);
    if (!h) {
      g_failure =
          "the BLAS (scipy-openblas32) could not be loaded; install it with 'pip install scipy-openblas32' "
          "or point SLIMTENSOR_OPENBLAS at libscipy_openblas.so. Tried:" +
          errors;
    } else {
      Api a{};
      a.sgemm = reinterpret_cast<decltype(a.sgemm)>(dlsym(h, "scipy_cblas_sgemm"));
      a.dgemm = reinterpret_cast<decltype(a.dgemm)>(dlsym(h, "scipy_cblas_dgemm"));
      a.set_num_threads = reinterpret_cast<decltype(a.set_num_threads)>(dlsym(h, "scipy_openblas_set_num_threads"));
      a.get_num_threads = reinterpret_cast<decltype(a.get_num_threads)>(dlsym(h, "scipy_openblas_get_num_threads"));
      a.get_config = reinterpret_cast<decltype(a.get_config)>(dlsym(h, "scipy_openblas_get_config"));
      if (!a.sgemm || !a.dgemm || !a.set_num_threads || !a.get_num_threads) {
        g_failure = g_path + " is not scipy-openblas32 (no scipy_cblas_sgemm/dgemm); reinstall scipy-openblas32";
      } else {
        g_storage = a;
        if (int t = g_threads.load()) g_storage.set_num_threads(t);
        g_api.store(&g_storage, std::memory_order_release);
        return g_storage;
      }
    }
  }
  fail(ErrorKind::Runtime, function, "(): ", g_failure);
}

void set_threads(int n) {
  if (n < 1) n = 1;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_threads.store(n);
  if (const Api* a = g_api.load(std::memory_order_acquire)) a->set_num_threads(n);
}

int threads() {
  if (const Api* a = g_api.load(std::memory_order_acquire)) return a->get_num_threads();
  int t = g_threads.load();
  if (t > 0) return t;
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

const char* loaded_path() { return g_api.load() ? g_path.c_str() : ""; }

}  // namespace slimtensor::aoti::blas

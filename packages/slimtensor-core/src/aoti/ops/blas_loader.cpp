// src/aoti/ops/blas_loader.cpp: finds and dlopens scipy-openblas32 on first use (Note [Lazy BLAS]) and keeps its thread
// count.
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "aoti/ops/blas.h"
#include "runtime/shared_library.h"
#include "slimtensor/base/error.h"

#ifndef SLIMTENSOR_OPENBLAS_BUILD_PATH
#  define SLIMTENSOR_OPENBLAS_BUILD_PATH ""
#endif

namespace slimtensor::aoti::blas {
namespace {

LoadedLibrary<Api> g_blas;      // Note [Libraries opened at run time]
std::atomic<int> g_threads{0};  // requested; 0 = OpenBLAS's default
std::mutex g_mutex;             // serialises the load and set_threads (a count set during the load is not lost)

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
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("SLIMTENSOR_OPENBLAS")) candidates.push_back(env);
  // <site-packages>/slimtensor/lib/libslimtensor.so -> <site-packages>/scipy_openblas32/lib/
  candidates.push_back(core_library_dir() + "/../../scipy_openblas32/lib/libscipy_openblas.so");
  if (SLIMTENSOR_OPENBLAS_BUILD_PATH[0]) candidates.push_back(SLIMTENSOR_OPENBLAS_BUILD_PATH);
  bool set_core = amd_with_avx512() && !std::getenv("OPENBLAS_CORETYPE");
  if (set_core) setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  void* h = open_first_library(candidates, path, errors);
  if (set_core) unsetenv("OPENBLAS_CORETYPE");
  return h;
}

}  // namespace

const Api& api(const char* function) {
  if (const Api* a = g_blas.api()) return *a;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (const Api* a = g_blas.api()) return *a;
  if (g_blas.failure().empty()) {
    std::string path, errors;
    void* h = open_blas(&path, &errors);
    if (!h) {
      g_blas.refuse(
          "the BLAS (scipy-openblas32) could not be loaded; install it with 'pip install scipy-openblas32' "
          "or point SLIMTENSOR_OPENBLAS at libscipy_openblas.so. Tried:" +
          errors);
    } else {
      Api a{};
      a.sgemm = reinterpret_cast<decltype(a.sgemm)>(dlsym(h, "scipy_cblas_sgemm"));
      a.dgemm = reinterpret_cast<decltype(a.dgemm)>(dlsym(h, "scipy_cblas_dgemm"));
      a.set_num_threads = reinterpret_cast<decltype(a.set_num_threads)>(dlsym(h, "scipy_openblas_set_num_threads"));
      a.get_num_threads = reinterpret_cast<decltype(a.get_num_threads)>(dlsym(h, "scipy_openblas_get_num_threads"));
      a.get_config = reinterpret_cast<decltype(a.get_config)>(dlsym(h, "scipy_openblas_get_config"));
      if (!a.sgemm || !a.dgemm || !a.set_num_threads || !a.get_num_threads) {
        g_blas.refuse(path + " is not scipy-openblas32 (no scipy_cblas_sgemm/dgemm); reinstall scipy-openblas32");
      } else {
        if (int t = g_threads.load()) a.set_num_threads(t);
        return g_blas.publish(a, path);
      }
    }
  }
  fail(ErrorKind::Runtime, function, "(): ", g_blas.failure());
}

void set_threads(int n) {
  if (n < 1) n = 1;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_threads.store(n);
  if (const Api* a = g_blas.api()) a->set_num_threads(n);
}

int threads() {
  if (const Api* a = g_blas.api()) return a->get_num_threads();
  int t = g_threads.load();
  if (t > 0) return t;
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

const char* loaded_path() { return g_blas.path(); }

}  // namespace slimtensor::aoti::blas

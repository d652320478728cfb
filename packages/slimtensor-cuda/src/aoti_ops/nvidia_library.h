// nvidia_library.h: opening NVIDIA's math libraries (cuBLASLt, cuDNN) at run time.
//
// Note [NVIDIA libraries at run time]
// The op fallbacks call cuBLASLt and cuDNN, but the plugin never links them: their wheels are hundreds of MB,
// most models need neither, and this build machine has none of their headers. Each library is opened the
// first time an op needs it (dlopen, RTLD_LOCAL) and the few functions we call are declared locally
// (cublaslt_api.h, cudnn_api.h) and looked up with dlsym. Where it is searched:
//   - SLIMTENSOR_CUDA_LIBRARY_DIRS, when set (':'-separated folders): only there, so a deployment can pin
//     the copy it ships (and a test can make a library missing);
//   - otherwise the wheels' folders beside this plugin (site-packages/nvidia/{cu13,cublas,cudnn}/lib, found
//     from the plugin library's own path: where pip puts nvidia-cublas and nvidia-cudnn-cu13 next to
//     slimtensor-cuda), then the loader's default search (LD_LIBRARY_PATH, the system's CUDA, a copy torch
//     already loaded).
// When none has it, the op fails with the pip package to install; models that do not call the op never
// notice. A library that opens but lacks a function we call is reported with its path and the function.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

#include "device/error.h"
#include "device/runtime.h"

namespace slimtensor_cuda::aoti_ops {

struct NvidiaLibrary {
  const char* what;         // "cuBLASLt"
  const char* soname;       // "libcublasLt.so.13"
  const char* pip_package;  // "nvidia-cublas"
  const char* subdirs;      // wheel folders under site-packages/nvidia/, ':'-separated: "cu13/lib:cublas/lib"
  // Libraries the main one opens by name itself (cuDNN 9's sub-libraries), ':'-separated: opened first from the
  // folder the main one is found in, so its own dlopen finds them loaded (by soname) without LD_LIBRARY_PATH.
  const char* companions;
};

// The dlopen handle of `lib` (opened once per process), or null with the plugin's last error set to a
// message that names `op`, the library and the pip package.
void* open_nvidia_library(const char* op, const NvidiaLibrary& lib);

// Note [One function table per library]
// The functions we call from a library are one struct of function pointers (its `Api`, declared in
// <library>_api.h) and one array of their names in the same order. NvidiaApi<Api> owns both halves of the
// lazy load: the first get() opens the library and resolves every name into the struct under a mutex; a
// failure sets the last error and is tried again on the next call (the library may have been installed
// since); after the first success get() returns the same struct. Written once here, used by every library.
class FunctionTable {
 public:
  // `slots` receives `count` pointers, the i-th looked up by `names[i]`.
  FunctionTable(const NvidiaLibrary& lib, const char* const* names, size_t count, void** slots)
      : lib_(lib), names_(names), count_(count), slots_(slots) {}
  // True once every name is resolved; false with the last error naming `op` (library missing, or a function).
  bool resolve(const char* op);

 private:
  const NvidiaLibrary lib_;
  const char* const* names_;
  const size_t count_;
  void** const slots_;
  std::mutex mutex_;
  bool resolved_ = false;
};

template <typename Api>
class NvidiaApi {
 public:
  template <size_t N>
  NvidiaApi(const NvidiaLibrary& lib, const char* const (&names)[N])
      : table_(lib, names, N, reinterpret_cast<void**>(&api_)) {
    static_assert(sizeof(Api) == N * sizeof(void*), "one name per Api member, in order");
  }
  NvidiaApi(const NvidiaApi&) = delete;
  NvidiaApi& operator=(const NvidiaApi&) = delete;

  // The library's functions, opened and resolved once; null with the plugin's last error naming `op`, the
  // library and its pip package.
  const Api* get(const char* op) { return table_.resolve(op) ? &api_ : nullptr; }

 private:
  Api api_{};
  FunctionTable table_;
};

// One library context per device (a cuBLASLt or cuDNN handle), made on first use and kept for the process
// (never destroyed: at exit the driver may be gone before us).
template <typename Handle>
class DeviceHandles {
 public:
  // *out = the handle of `device`, made the first time by create(Handle*), which returns 0, or non-zero with
  // the last error set (then nothing is kept and the next call tries again).
  template <typename Create>
  int get(const char* op, int device, Create&& create, Handle* out) {
    if (device < 0 || device >= kMaxDevices) return fail("%s(): device index %d is out of range", op, device);
    std::lock_guard<std::mutex> lock(mutex_);
    if (handles_[device] == nullptr) {
      Handle made = nullptr;
      if (create(&made) != 0) return 1;
      handles_[device] = made;
    }
    *out = handles_[device];
    return 0;
  }

 private:
  std::mutex mutex_;
  Handle handles_[kMaxDevices] = {};
};

// Where each folder of the search came from, for messages and `slimtensor_cuda` diagnostics.
std::string nvidia_search_path(const NvidiaLibrary& lib);

}  // namespace slimtensor_cuda::aoti_ops

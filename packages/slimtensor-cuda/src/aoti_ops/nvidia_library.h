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

#include <string>

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
// Every symbol of `names` (null-terminated) looked up in `handle` into `out`; false with the error set when
// one is missing.
bool load_symbols(const char* op, const NvidiaLibrary& lib, void* handle, const char* const* names, void** out);

// Where each folder of the search came from, for messages and `slimtensor_cuda` diagnostics.
std::string nvidia_search_path(const NvidiaLibrary& lib);

}  // namespace slimtensor_cuda::aoti_ops

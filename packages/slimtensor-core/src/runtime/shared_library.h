// src/runtime/shared_library.h: the libraries the core opens at run time (oneDNN, scipy-openblas32): where
// libslimtensor itself lies, opening the first of several candidate paths, and what one load leaves behind.
//
// Note [Libraries opened at run time]
// libslimtensor links none of its optional libraries (Note [Lazy BLAS], Note [Lazy oneDNN]): each is dlopened
// (RTLD_NOW | RTLD_LOCAL) the first time a fallback needs it, trying candidate paths in order, some of them
// relative to libslimtensor's own folder (the wheel bundles oneDNN there; scipy-openblas32 is a sibling
// package). A library is loaded once per process: its loader runs serialised (a mutex or a once_flag, the
// loader's choice) and leaves a LoadedLibrary<Api>: either the resolved functions and the path, published
// with release order so that callers read them without a lock, or the reason it failed, which stays (no
// retry: the candidates do not change while the process runs).
#pragma once

#include <atomic>
#include <string>
#include <utility>
#include <vector>

namespace slimtensor {

// The path of libslimtensor itself (dladdr of a function in it); "" when the loader cannot say.
std::string core_library_path();
// The folder holding libslimtensor; "." when the loader cannot say.
std::string core_library_dir();

// dlopens the first of `candidates` that loads (RTLD_NOW | RTLD_LOCAL) and writes its path to *path; null
// when none does, after appending each candidate's loader message to *errors as "\n  <path>: <message>".
void* open_first_library(const std::vector<std::string>& candidates, std::string* path, std::string* errors);

template <typename Api>
class LoadedLibrary {
 public:
  // The functions once published, else null; safe from any thread.
  const Api* api() const { return api_.load(std::memory_order_acquire); }
  // Publishes `functions`, loaded from `path`: api() returns them from now on. Called once, by the loader.
  const Api& publish(const Api& functions, std::string path) {
    storage_ = functions;
    path_ = std::move(path);
    api_.store(&storage_, std::memory_order_release);
    return storage_;
  }
  // Records why the load failed (api() stays null). Called once, by the loader.
  void refuse(std::string reason) { failure_ = std::move(reason); }
  // "" unless the load failed; read only after the loader ran (under its mutex or once_flag).
  const std::string& failure() const { return failure_; }
  // The path the library was loaded from; "" until it is.
  const char* path() const { return api() ? path_.c_str() : ""; }

 private:
  std::atomic<const Api*> api_{nullptr};
  Api storage_{};
  std::string path_, failure_;
};

}  // namespace slimtensor

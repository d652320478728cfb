// src/runtime/shared_library.cpp: Note [Libraries opened at run time].
#include "runtime/shared_library.h"

#include <dlfcn.h>

namespace slimtensor {

std::string core_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&core_library_path), &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

std::string core_library_dir() {
  const std::string path = core_library_path();
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

void* open_first_library(const std::vector<std::string>& candidates, std::string* path, std::string* errors) {
  for (const std::string& candidate : candidates) {
    if (void* h = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *path = candidate;
      return h;
    }
    const char* e = dlerror();
    *errors += "\n  " + candidate + ": " + (e ? e : "?");
  }
  return nullptr;
}

}  // namespace slimtensor

// nvidia_library.cpp: Note [NVIDIA libraries at run time].
#include "aoti_ops/nvidia_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <vector>

#include "device/error.h"

namespace slimtensor_cuda::aoti_ops {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// site-packages of this plugin: the folder above the one holding the library this code is in.
std::string plugin_site_packages() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&plugin_site_packages), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  for (int up = 0; up < 2; ++up) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return "";
    path.erase(slash);
  }
  return path;
}

std::vector<std::string> search_dirs(const NvidiaLibrary& lib) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("SLIMTENSOR_CUDA_LIBRARY_DIRS")) return split(env);
  const std::string site = plugin_site_packages();
  if (!site.empty())
    for (const std::string& sub : split(lib.subdirs)) dirs.push_back(site + "/nvidia/" + sub);
  return dirs;
}

struct Opened {
  void* handle = nullptr;
  std::string error;
};
std::mutex g_mutex;
std::map<std::string, Opened>* g_opened = new std::map<std::string, Opened>;  // never freed: process lifetime

}  // namespace

static bool pinned() { return std::getenv("SLIMTENSOR_CUDA_LIBRARY_DIRS") != nullptr; }

std::string nvidia_search_path(const NvidiaLibrary& lib) {
  std::string s;
  for (const std::string& d : search_dirs(lib)) s += (s.empty() ? "" : ":") + d;
  if (pinned()) return (s.empty() ? std::string("nowhere") : s) + " (SLIMTENSOR_CUDA_LIBRARY_DIRS)";
  return s.empty() ? "the loader's default path" : s + ", then the loader's default path";
}

void* open_nvidia_library(const char* op, const NvidiaLibrary& lib) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_opened->find(lib.soname);
  if (it == g_opened->end()) {
    Opened o;
    std::string errors;
    for (const std::string& d : search_dirs(lib)) {
      const std::string path = d + "/" + lib.soname;
      if (access(path.c_str(), F_OK) != 0) continue;
      for (const std::string& c : split(lib.companions ? lib.companions : ""))
        dlopen((d + "/" + c).c_str(), RTLD_NOW | RTLD_LOCAL);  // best effort: kept open for the process
      o.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (o.handle != nullptr) break;
    }
    if (o.handle == nullptr && !pinned()) o.handle = dlopen(lib.soname, RTLD_NOW | RTLD_LOCAL);
    if (o.handle == nullptr) {
      const char* why = dlerror();
      o.error = std::string(lib.soname) + " was not found (searched " + nvidia_search_path(lib) +
                "; last loader message: " + (why ? why : "none") + ")";
    }
    it = g_opened->emplace(lib.soname, o).first;
  }
  if (it->second.handle == nullptr) {
    fail(
        "%s(): needs %s, which is not installed: %s. Install it with 'pip install %s' (or put %s on "
        "LD_LIBRARY_PATH / SLIMTENSOR_CUDA_LIBRARY_DIRS); models that do not call this op run without it",
        op, lib.what, it->second.error.c_str(), lib.pip_package, lib.soname);
    return nullptr;
  }
  return it->second.handle;
}

bool FunctionTable::resolve(const char* op) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (resolved_) return true;
  void* handle = open_nvidia_library(op, lib_);
  if (handle == nullptr) return false;
  for (size_t i = 0; i < count_; ++i) {
    slots_[i] = dlsym(handle, names_[i]);
    if (slots_[i] == nullptr) {
      fail("%s(): %s (%s) has no function %s; it is too old or not NVIDIA's: pip install -U %s", op, lib_.what,
           lib_.soname, names_[i], lib_.pip_package);
      return false;
    }
  }
  resolved_ = true;
  return true;
}

}  // namespace slimtensor_cuda::aoti_ops

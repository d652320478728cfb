// tests/aoti/cpp/check_throws.cpp: aoti_torch_check throws std::runtime_error (as libtorch's does); other shims return
// codes.
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "slimtensor/c/shim.h"

int main() {
  aoti_torch_check(true, "f", "file.cpp", 1, "never");
  try {
    aoti_torch_check(false, "my_func", "my_file.cpp", 42, "x must be positive");
    std::puts("no exception");
    return 1;
  } catch (const std::runtime_error& e) {
    if (!std::strstr(e.what(), "x must be positive") || !std::strstr(e.what(), "my_file.cpp:42")) {
      std::printf("bad message: %s\n", e.what());
      return 1;
    }
  }
  AtenTensorHandle h = nullptr;
  if (aoti_torch_empty_strided(-1, nullptr, nullptr, 6, 0, 0, &h) == 0) return 1;
  std::printf("ok: %s\n", slimtensor_last_error());
  return 0;
}

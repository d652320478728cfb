// slimtensor/bench/harness/aoti_shim_bench.cpp: times AOTI shim calls of any library that exports them (libslimtensor,
// libtorch_cpu).
//
// Build: g++ -O2 -std=c++17 $(python -c "import slimtensor.bench as b, os;
// print(os.path.dirname(b.__file__))")/harness/aoti_shim_bench.cpp -ldl -o /tmp/aoti_shim_bench Run:
// /tmp/aoti_shim_bench path/to/libslimtensor.so.0      (or .../torch/lib/libtorch_cpu.so) Prints "name min_ns
// median_ns" per call, over 7 repeats of 1e6 calls each (through dlsym pointers).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

using H = void*;
using Err = int32_t;

template <typename F>
F sym(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    std::fprintf(stderr, "missing %s\n", name);
    std::exit(2);
  }
  return reinterpret_cast<F>(p);
}

template <typename Body>
void bench(const char* name, Body body) {
  constexpr int kIters = 1000000, kRepeats = 7;
  std::vector<double> ns;
  for (int r = 0; r < kRepeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kIters; ++i) body();
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kIters);
  }
  std::sort(ns.begin(), ns.end());
  std::printf("%-44s %8.1f %8.1f\n", name, ns.front(), ns[ns.size() / 2]);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  auto empty_strided = sym<Err (*)(int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t, H*)>(
      lib, "aoti_torch_empty_strided");
  auto del = sym<Err (*)(H)>(lib, "aoti_torch_delete_tensor_object");
  auto blob2 = sym<Err (*)(void*, int64_t, const int64_t*, const int64_t*, int64_t, int32_t, int32_t, int32_t, H*,
                           int32_t, const uint8_t*, int64_t)>(lib, "aoti_torch_create_tensor_from_blob_v2");
  auto reinterp =
      sym<Err (*)(H, int64_t, const int64_t*, const int64_t*, int64_t, H*)>(lib, "aoti_torch__reinterpret_tensor");
  auto new_handle = sym<Err (*)(H, H*)>(lib, "aoti_torch_new_tensor_handle");
  auto item_f32 = sym<Err (*)(H, float*)>(lib, "aoti_torch_item_float32");
  auto copy = sym<Err (*)(H, H, int32_t)>(lib, "aoti_torch_copy_");
  auto get_data_ptr = sym<Err (*)(H, void**)>(lib, "aoti_torch_get_data_ptr");
  auto get_sizes = sym<Err (*)(H, int64_t**)>(lib, "aoti_torch_get_sizes");
  auto get_strides = sym<Err (*)(H, int64_t**)>(lib, "aoti_torch_get_strides");
  auto get_dim = sym<Err (*)(H, int64_t*)>(lib, "aoti_torch_get_dim");
  auto get_dtype = sym<Err (*)(H, int32_t*)>(lib, "aoti_torch_get_dtype");
  auto get_offset = sym<Err (*)(H, int64_t*)>(lib, "aoti_torch_get_storage_offset");
  auto scalar_f32 = sym<Err (*)(float, H*)>(lib, "aoti_torch_scalar_to_tensor_float32");

  const int64_t sizes[2] = {2, 3}, strides[2] = {3, 1};
  float data[6] = {1, 2, 3, 4, 5, 6};
  H a = nullptr, b = nullptr, s = nullptr;
  empty_strided(2, sizes, strides, 6, 0, 0, &a);
  empty_strided(2, sizes, strides, 6, 0, 0, &b);
  scalar_f32(1.5f, &s);
  volatile float sink_f = 0;
  void* sink_p = nullptr;
  int64_t* sink_i = nullptr;
  int64_t sink_n = 0;
  int32_t sink_d = 0;

  bench("empty_strided(2x3 f32)+delete", [&] {
    H h;
    empty_strided(2, sizes, strides, 6, 0, 0, &h);
    del(h);
  });
  bench("create_tensor_from_blob_v2+delete", [&] {
    H h;
    blob2(data, 2, sizes, strides, 0, 6, 0, 0, &h, 0, nullptr, 0);
    del(h);
  });
  bench("_reinterpret_tensor+delete", [&] {
    H h;
    reinterp(a, 2, sizes, strides, 0, &h);
    del(h);
  });
  bench("new_tensor_handle+delete", [&] {
    H h;
    new_handle(a, &h);
    del(h);
  });
  bench("item_float32", [&] {
    float f;
    item_f32(s, &f);
    sink_f = f;
  });
  bench("copy_ 24 bytes", [&] { copy(b, a, 0); });
  bench("get_data_ptr", [&] { get_data_ptr(a, &sink_p); });
  bench("get_sizes", [&] { get_sizes(a, &sink_i); });
  bench("get_strides", [&] { get_strides(a, &sink_i); });
  bench("get_dim", [&] { get_dim(a, &sink_n); });
  bench("get_dtype", [&] { get_dtype(a, &sink_d); });
  bench("get_storage_offset", [&] { get_offset(a, &sink_n); });
  del(a);
  del(b);
  del(s);
  (void)sink_f;
  return 0;
}

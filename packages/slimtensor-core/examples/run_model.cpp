// examples/run_model.cpp: runs an AOTInductor model .so (link_libtorch=False) with libslimtensor alone, no libtorch.
//
//   run_model MODEL.so SIZE... [--input FILE.f32] [--weights FILE.blob] [--device cuda --cuda-plugin DIR]
//
// Makes one float32 input of the given sizes (ones, or the raw little-endian floats of FILE.f32), runs the
// model and prints every output: "output I: dtype D sizes [..] strides [..]" and its values, one per line.
// This program links libslimtensor, so the shims are in its global scope and the model binds to them when
// it is dlopen'ed. (From Python, slimtensor.aoti binds models without a global scope; see docs/aoti.md.)
// With --device cuda (a model compiled for CUDA) it loads the CUDA plugin at run time from DIR (the
// installed slimtensor_cuda package folder, which holds libslimtensor_cuda.so and libslimtensor_cuda_aoti.so):
// registers its device table with the core, and puts its AOTI shim library in the global scope, where the
// model finds the CUDA shims and the CUDA runtime. This program itself has no CUDA dependency.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "slimtensor/c/device_plugin.h"
#include "slimtensor/c/shim.h"

using Container = void*;
using CreateFn = int32_t (*)(Container*, size_t, const char*, const char*);
using DeleteFn = int32_t (*)(Container);
using RunFn = int32_t (*)(Container, AtenTensorHandle*, size_t, AtenTensorHandle*, size_t, void*, void*);
using CountFn = int32_t (*)(Container, size_t*);
using BlobFn = int32_t (*)(Container, const uint8_t*);
using LastErrorFn = int32_t (*)(const char**);

static int die(const char* what, const char* detail) {
  std::fprintf(stderr, "run_model: %s: %s\n", what, detail ? detail : "");
  return 1;
}

// The CUDA plugin, without Python: its device table into the core, its shim library global (see the top).
static int load_cuda_plugin(const std::string& dir) {
  void* plugin = dlopen((dir + "/libslimtensor_cuda.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!plugin) return die("loading the CUDA plugin (--cuda-plugin DIR)", dlerror());
  auto init = reinterpret_cast<st_plugin_init_fn>(dlsym(plugin, "st_plugin_init"));
  if (!init) return die("the CUDA plugin has no st_plugin_init", dir.c_str());
  if (slimtensor_register_device_plugin(init, "libslimtensor_cuda") != 0)
    return die("registering the CUDA plugin", slimtensor_last_error());
  if (!dlopen((dir + "/libslimtensor_cuda_aoti.so").c_str(), RTLD_NOW | RTLD_GLOBAL))
    return die("loading the CUDA AOTI shims", dlerror());
  return 0;
}

// Copies a tensor of any device to a new contiguous CPU tensor (the caller deletes it), or NULL.
static AtenTensorHandle to_host(AtenTensorHandle h) {
  int64_t ndim = 0, *sz = nullptr;
  int32_t dtype = -1;
  aoti_torch_get_dim(h, &ndim);
  aoti_torch_get_sizes(h, &sz);
  aoti_torch_get_dtype(h, &dtype);
  std::vector<int64_t> strides(static_cast<size_t>(ndim), 1);
  for (int64_t d = ndim - 2; d >= 0; --d) strides[d] = strides[d + 1] * sz[d + 1];
  AtenTensorHandle out = nullptr;
  if (aoti_torch_empty_strided(ndim, sz, strides.data(), dtype, aoti_torch_device_type_cpu(), 0, &out) != 0)
    return nullptr;
  if (aoti_torch_copy_(out, h, 0) != 0) {
    aoti_torch_delete_tensor_object(out);
    return nullptr;
  }
  return out;
}

int main(int argc, char** argv) {
  if (argc < 3)
    return die("usage",
               "run_model MODEL.so SIZE... [--input FILE.f32] [--weights FILE.blob] [--device cuda --cuda-plugin DIR]");
  std::vector<int64_t> sizes;
  std::string input_file, weights_file, device = "cpu", cuda_plugin;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      device = argv[++i];
    } else if (!std::strcmp(argv[i], "--cuda-plugin") && i + 1 < argc) {
      cuda_plugin = argv[++i];
    } else if (!std::strcmp(argv[i], "--input") && i + 1 < argc) {
      input_file = argv[++i];
    } else if (!std::strcmp(argv[i], "--weights") && i + 1 < argc) {
      weights_file = argv[++i];
    } else {
      sizes.push_back(std::atoll(argv[i]));
    }
  }
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  std::vector<float> data(static_cast<size_t>(numel), 1.0f);
  if (!input_file.empty()) {
    std::ifstream f(input_file, std::ios::binary);
    if (!f.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(numel * sizeof(float)))) {
      return die("cannot read the input file", input_file.c_str());
    }
  }

  // Vectorized kernels call SLEEF (Sleef_*) without a DT_NEEDED entry: make it global first if it is installed
  // (Debian: apt-get install libsleef3). Models without vector math do not need it.
  dlopen("libsleef.so.3", RTLD_NOW | RTLD_GLOBAL);
  const bool cuda = device.rfind("cuda", 0) == 0;
  if (cuda && load_cuda_plugin(cuda_plugin)) return 1;
  void* so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!so) return die("dlopen", dlerror());
  auto create = reinterpret_cast<CreateFn>(dlsym(so, "AOTInductorModelContainerCreateWithDevice"));
  auto destroy = reinterpret_cast<DeleteFn>(dlsym(so, "AOTInductorModelContainerDelete"));
  auto run = reinterpret_cast<RunFn>(dlsym(so, "AOTInductorModelContainerRun"));
  auto num_outputs = reinterpret_cast<CountFn>(dlsym(so, "AOTInductorModelContainerGetNumOutputs"));
  auto update_blob = reinterpret_cast<BlobFn>(dlsym(so, "AOTInductorModelUpdateConstantsFromBlob"));
  auto last_error = reinterpret_cast<LastErrorFn>(dlsym(so, "AOTInductorGetLastError"));
  if (!create || !destroy || !run || !num_outputs) return die("not an AOTInductor model", argv[1]);

  Container c = nullptr;
  if (create(&c, 1, device.c_str(), nullptr) != 0) return die("create", slimtensor_last_error());
  std::vector<uint8_t> blob;
  if (!weights_file.empty()) {
    std::ifstream f(weights_file, std::ios::binary);
    blob.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (!update_blob || update_blob(c, blob.data()) != 0) return die("weights", weights_file.c_str());
  }
  size_t n_out = 0;
  num_outputs(c, &n_out);

  // One borrowed input over `data` (data must outlive it); Run steals the handle.
  AtenTensorHandle input = nullptr;
  if (aoti_torch_create_tensor_from_blob_v2(data.data(), static_cast<int64_t>(sizes.size()), sizes.data(), nullptr, 0,
                                            aoti_torch_dtype_float32(), aoti_torch_device_type_cpu(), 0, &input,
                                            aoti_torch_layout_strided(), nullptr, 0) != 0) {
    return die("input", slimtensor_last_error());
  }
  if (cuda) {  // the same values on the GPU: the model's input must live where the model runs
    AtenTensorHandle host = input, on_device = nullptr;
    int64_t* sz = nullptr;
    int64_t* st = nullptr;
    aoti_torch_get_sizes(host, &sz);
    aoti_torch_get_strides(host, &st);
    if (aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sz, st, aoti_torch_dtype_float32(),
                                 aoti_torch_device_type_cuda(), 0, &on_device) != 0 ||
        aoti_torch_copy_(on_device, host, 0) != 0)
      return die("input to cuda", slimtensor_last_error());
    aoti_torch_delete_tensor_object(host);
    input = on_device;
  }
  std::vector<AtenTensorHandle> outputs(n_out, nullptr);
  if (run(c, &input, 1, outputs.data(), n_out, nullptr, nullptr) != 0) {
    const char* msg = nullptr;
    if (last_error) last_error(&msg);
    if (input) aoti_torch_delete_tensor_object(input);  // not consumed: it failed before the input check
    return die("run", msg);
  }
  for (size_t i = 0; i < n_out; ++i) {
    AtenTensorHandle h = outputs[i];
    int32_t device_type = 0;
    aoti_torch_get_device_type(h, &device_type);
    if (device_type != aoti_torch_device_type_cpu()) {  // printed from a host copy (contiguous strides)
      AtenTensorHandle host = to_host(h);
      if (!host) return die("output to host", slimtensor_last_error());
      aoti_torch_delete_tensor_object(h);
      h = host;
    }
    int64_t ndim = 0, n = 0, *sz = nullptr, *st = nullptr;
    int32_t dtype = -1;
    void* p = nullptr;
    aoti_torch_get_dim(h, &ndim);
    aoti_torch_get_numel(h, &n);
    aoti_torch_get_sizes(h, &sz);
    aoti_torch_get_strides(h, &st);
    aoti_torch_get_dtype(h, &dtype);
    aoti_torch_get_data_ptr(h, &p);
    std::printf("output %zu: dtype %d sizes [", i, dtype);
    for (int64_t d = 0; d < ndim; ++d) std::printf(d ? ", %lld" : "%lld", static_cast<long long>(sz[d]));
    std::printf("] strides [");
    for (int64_t d = 0; d < ndim; ++d) std::printf(d ? ", %lld" : "%lld", static_cast<long long>(st[d]));
    std::printf("]\n");
    if (dtype == aoti_torch_dtype_float32()) {
      // walk the strided layout in row-major order
      std::vector<int64_t> idx(static_cast<size_t>(ndim), 0);
      for (int64_t k = 0; k < n; ++k) {
        int64_t off = 0;
        for (int64_t d = 0; d < ndim; ++d) off += idx[d] * st[d];
        std::printf("%.9g\n", static_cast<double>(static_cast<float*>(p)[off]));
        for (int64_t d = ndim - 1; d >= 0; --d) {
          if (++idx[d] < sz[d]) break;
          idx[d] = 0;
        }
      }
    }
    aoti_torch_delete_tensor_object(h);
  }
  destroy(c);
  std::printf("live handles after delete: %lld\n", static_cast<long long>(slimtensor_aoti_live_handles()));
  return 0;
}

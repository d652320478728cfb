// test_metal_real_core.cpp: the Metal plugin registered with the real libslimtensor (run by
// tests/metal/test_metal_plugin.py). Two modes, one process each (a device type registers once per process):
//   unavailable  the plugin as it ships on Linux (no bridge): MPS registers, unavailable with the reason;
//   double       the plugin over the bridge's in-memory TEST DOUBLE (not Metal): the real core allocates,
//                copies and frees through it, and the MPS shims read the core's tensors through the real
//                core_symbol table (aoti_torch_get_* and slimtensor_aoti_get_memory_ref), CPU handles included.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "metal_bridge_test_double.h"
#include "plugin/dtypes.h"
#include "plugin/errors.h"
#include "plugin/metal_context.h"
#include "plugin/plugin.h"
#include "plugin/shim_mps.h"
#include "plugin/tensor_access.h"
#include "slimtensor/c/device_plugin.h"
#include "slimtensor/c/shim.h"

using namespace slimtensor_metal;

static int g_failed = 0, g_checks = 0;
#define CHECK(c)                                                                                        \
  do {                                                                                                  \
    ++g_checks;                                                                                         \
    if (!(c)) {                                                                                         \
      std::printf("  FAILED %s:%d: %s (plugin: %s | core: %s)\n", __FILE__, __LINE__, #c, last_error(), \
                  slimtensor_last_error());                                                             \
      g_failed++;                                                                                       \
      return;                                                                                           \
    }                                                                                                   \
  } while (0)
#define HAS(msg, sub) (std::strstr((msg), (sub)) != nullptr)

static const st_core_table* g_core = nullptr;  // the real core's table, as the core handed it to us
static const char* kNoMetal = "Metal needs macOS on Apple silicon";

static int init_unavailable(const st_core_table* core, const st_device_table** out) {
  g_core = core;
  return plugin_init(core, out, nullptr, kNoMetal);  // exactly what st_plugin_init does without the bridge
}
static int init_double(const st_core_table* core, const st_device_table** out) {
  g_core = core;
  return plugin_init(core, out, td::api(), nullptr);
}

static AtenTensorHandle empty(std::vector<int64_t> sizes, int32_t device_type) {
  AtenTensorHandle h = nullptr;
  if (aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), nullptr, kFloat32, device_type, 0,
                               &h) != AOTI_TORCH_SUCCESS)
    return nullptr;
  return h;
}
static AtenTensorHandle cpu_from(const std::vector<float>& v, std::vector<int64_t> sizes) {
  AtenTensorHandle h = empty(sizes, aoti_torch_device_type_cpu());
  void* p = nullptr;
  if (!h || aoti_torch_get_data_ptr(h, &p) != AOTI_TORCH_SUCCESS) return nullptr;
  std::memcpy(p, v.data(), v.size() * 4);
  return h;
}
static std::vector<float> to_cpu(AtenTensorHandle t, size_t n, std::vector<int64_t> sizes) {
  AtenTensorHandle h = empty(sizes, aoti_torch_device_type_cpu());
  std::vector<float> out;
  void* p = nullptr;
  if (h && aoti_torch_copy_(h, t, 0) == AOTI_TORCH_SUCCESS && aoti_torch_get_data_ptr(h, &p) == AOTI_TORCH_SUCCESS)
    out.assign(static_cast<float*>(p), static_cast<float*>(p) + n);
  if (h) aoti_torch_delete_tensor_object(h);
  return out;
}

static void test_unavailable() {
  CHECK(slimtensor_register_device_plugin(init_unavailable, "slimtensor_metal (no bridge)") == 0);
  CHECK(g_core && g_core->abi_major == 1 && g_core->abi_minor >= 1);
  AtenTensorHandle h = nullptr;
  const int64_t sizes[] = {4};
  CHECK(aoti_torch_empty_strided(1, sizes, nullptr, kFloat32, kMpsDeviceType, 0, &h) != AOTI_TORCH_SUCCESS);
  CHECK(h == nullptr);
  CHECK(HAS(slimtensor_last_error(), kNoMetal));
  void* buf = nullptr;
  CHECK(aoti_torch_mps_malloc(&buf, 16) != AOTI_TORCH_SUCCESS && buf == nullptr);
  CHECK(HAS(last_error(), kNoMetal));
  // The shims still read the core's tensors through core_symbol: a CPU tensor is refused by device, no crash.
  AtenTensorHandle a = empty({2, 2}, aoti_torch_device_type_cpu());
  CHECK(a != nullptr);
  CHECK(aoti_torch_mps_mm_out(a, a, a) != AOTI_TORCH_SUCCESS);
  CHECK(HAS(last_error(), kNoMetal));  // the device check comes first
  CHECK(aoti_torch_delete_tensor_object(a) == AOTI_TORCH_SUCCESS);
  CHECK(slimtensor_aoti_live_handles() == 0);
}

static void test_core_symbol_table() {
  // The accessors come from the real core's core_symbol, every one of them.
  TensorAccess a = tensor_access_from_core(g_core);
  CHECK(a.get_dtype && a.get_device_type && a.get_device_index && a.get_dim && a.get_sizes && a.get_strides);
  CHECK(a.memory_ref && a.last_error);
  CHECK(g_core->core_symbol("slimtensor_no_such_function") == nullptr);
  // A CPU handle through them: memory_ref is {base address, byte offset}, as c/shim.h says.
  AtenTensorHandle cpu = cpu_from({0, 1, 2, 3, 4, 5}, {6});
  CHECK(cpu != nullptr);
  AtenTensorHandle view = nullptr;
  const int64_t vs[] = {3}, vst[] = {1};
  CHECK(aoti_torch__reinterpret_tensor(cpu, 1, vs, vst, 2, &view) == AOTI_TORCH_SUCCESS);
  void* p = nullptr;
  st_memory_ref r{};
  CHECK(aoti_torch_get_data_ptr(view, &p) == AOTI_TORCH_SUCCESS && a.memory_ref(view, &r) == AOTI_TORCH_SUCCESS);
  CHECK(static_cast<char*>(r.handle) + r.byte_offset == p && r.byte_offset == 8 && r.device_index == 0);
  int32_t dev = -1;
  int64_t dim = -1;
  CHECK(a.get_device_type(view, &dev) == 0 && dev == aoti_torch_device_type_cpu());
  CHECK(a.get_dim(view, &dim) == 0 && dim == 1);
  // The core's own error comes back through last_error: a NULL result pointer is refused.
  CHECK(a.memory_ref(view, nullptr) != AOTI_TORCH_SUCCESS && HAS(a.last_error(), "slimtensor_aoti_get_memory_ref"));
  // The MPS shims refuse the CPU tensor by name, through the same accessors.
  AtenTensorHandle m = empty({1, 1}, kMpsDeviceType);
  CHECK(m != nullptr);
  CHECK(aoti_torch_mps_mm_out(m, view, view) != AOTI_TORCH_SUCCESS);
  CHECK(HAS(last_error(), "expected a tensor on 'mps'"));
  CHECK(aoti_torch_delete_tensor_object(m) == 0 && aoti_torch_delete_tensor_object(view) == 0 &&
        aoti_torch_delete_tensor_object(cpu) == 0);
}

static void test_real_core_allocates_through_the_plugin() {
  MetalContext* ctx = mps_context();
  CHECK(ctx != nullptr);
  const int64_t before = ctx->live_buffers();
  // A [2,3] @ [3,2] on mps: the core allocates (allocate_v2), uploads (copy_from_host), the shim reads the
  // handles through slimtensor_aoti_get_memory_ref, and the result comes back through copy_to_host.
  AtenTensorHandle a_cpu = cpu_from({1, 2, 3, 4, 5, 6}, {2, 3}), b_cpu = cpu_from({1, 0, 0, 1, 1, 1}, {3, 2});
  AtenTensorHandle a = empty({2, 3}, kMpsDeviceType), b = empty({3, 2}, kMpsDeviceType),
                   o = empty({2, 2}, kMpsDeviceType);
  CHECK(a_cpu && b_cpu && a && b && o);
  CHECK(ctx->live_buffers() == before + 3);
  void* p = nullptr;
  CHECK(aoti_torch_get_data_ptr(a, &p) != AOTI_TORCH_SUCCESS);  // opaque MPS memory: no address
  CHECK(HAS(slimtensor_last_error(), "slimtensor_aoti_get_memory_ref"));
  CHECK(aoti_torch_copy_(a, a_cpu, 0) == 0 && aoti_torch_copy_(b, b_cpu, 0) == 0);
  const int64_t mm_before = td::matmuls_run();
  CHECK(aoti_torch_mps_mm_out(o, a, b) == AOTI_TORCH_SUCCESS);
  std::vector<float> got = to_cpu(o, 4, {2, 2});  // waits for the queued multiplication
  CHECK(td::matmuls_run() == mm_before + 1);
  CHECK(got == std::vector<float>({4, 5, 10, 11}));
  // A view at an element offset (aoti_torch__reinterpret_tensor): its memory_ref carries the byte offset, and
  // the shim binds it in place. Row 1 of a as a [1,3] matrix: [4,5,6] @ b = [10, 11].
  AtenTensorHandle row = nullptr, o1 = empty({1, 2}, kMpsDeviceType);
  const int64_t rs[] = {1, 3}, rst[] = {3, 1};
  CHECK(aoti_torch__reinterpret_tensor(a, 2, rs, rst, 3, &row) == AOTI_TORCH_SUCCESS && o1);
  st_memory_ref r{};
  CHECK(slimtensor_aoti_get_memory_ref(row, &r) == 0 && r.byte_offset == 12);
  CHECK(aoti_torch_mps_mm_out(o1, row, b) == AOTI_TORCH_SUCCESS);
  CHECK(to_cpu(o1, 2, {1, 2}) == std::vector<float>({10, 11}));
  for (AtenTensorHandle h : {a_cpu, b_cpu, a, b, o, row, o1}) CHECK(aoti_torch_delete_tensor_object(h) == 0);
  CHECK(ctx->live_buffers() == before);  // the core freed every storage through free_v2
}

static void test_from_blob_as_aoti_models_do() {
  // torch's AOTI model (load_constants, USE_MPS) allocates one blob with aoti_torch_mps_malloc, copies each
  // constant to its offset with aoti_torch_mps_memcpy, and makes the constant with from_blob(blob, ...,
  // storage_offset = the constant's offset in elements): the buffer handle itself, never an interior pointer.
  MetalContext* ctx = mps_context();
  void* blob = nullptr;
  CHECK(aoti_torch_mps_malloc(&blob, 64) == AOTI_TORCH_SUCCESS && blob);
  const float consts[] = {1, 2, 3, 4, 5, 6};
  CHECK(aoti_torch_mps_memcpy(blob, 16, 0, sizeof consts, reinterpret_cast<uint8_t*>(const_cast<float*>(consts))) ==
        AOTI_TORCH_SUCCESS);
  const int64_t sizes[] = {2, 3}, strides[] = {3, 1};
  AtenTensorHandle w = nullptr;
  CHECK(aoti_torch_create_tensor_from_blob_v2(blob, 2, sizes, strides, 4, kFloat32, kMpsDeviceType, 0, &w, 0, nullptr,
                                              0) == AOTI_TORCH_SUCCESS);
  st_memory_ref r{};
  CHECK(slimtensor_aoti_get_memory_ref(w, &r) == 0 && r.handle == blob && r.byte_offset == 16);
  CHECK(to_cpu(w, 6, {2, 3}) == std::vector<float>({1, 2, 3, 4, 5, 6}));
  AtenTensorHandle b = empty({3, 2}, kMpsDeviceType), b_cpu = cpu_from({1, 0, 0, 1, 1, 1}, {3, 2}),
                   o = empty({2, 2}, kMpsDeviceType);
  CHECK(b && b_cpu && o && aoti_torch_copy_(b, b_cpu, 0) == 0);
  CHECK(aoti_torch_mps_mm_out(o, w, b) == AOTI_TORCH_SUCCESS);
  CHECK(to_cpu(o, 4, {2, 2}) == std::vector<float>({4, 5, 10, 11}));
  // A host address inside the blob's contents is not a handle: the core cannot tell (it never looks at an
  // opaque handle), the plugin refuses it by name at first use, in a copy and in a shim, and nothing crashes.
  AtenTensorHandle bad = nullptr;
  CHECK(aoti_torch_create_tensor_from_blob_v2(td::contents(blob) + 16, 2, sizes, strides, 0, kFloat32, kMpsDeviceType,
                                              0, &bad, 0, nullptr, 0) == AOTI_TORCH_SUCCESS);
  CHECK(to_cpu(bad, 6, {2, 3}).empty());
  CHECK(HAS(slimtensor_last_error(), "not a buffer handle"));
  CHECK(aoti_torch_mps_mm_out(o, bad, b) != AOTI_TORCH_SUCCESS && HAS(last_error(), "not a buffer handle"));
  for (AtenTensorHandle h : {w, b, b_cpu, o, bad}) CHECK(aoti_torch_delete_tensor_object(h) == 0);
  CHECK(aoti_torch_mps_free(blob) == AOTI_TORCH_SUCCESS);
  CHECK(ctx->live_buffers() == 0);
  CHECK(slimtensor_aoti_live_handles() == 0);
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // every line out before a crash would cut it off
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode == "unavailable") {
    test_unavailable();
  } else if (mode == "double") {
    if (slimtensor_register_device_plugin(init_double, "slimtensor_metal (test double)") != 0) {
      std::printf("FAILED registration: %s\n", slimtensor_last_error());
      return 1;
    }
    test_core_symbol_table();
    test_real_core_allocates_through_the_plugin();
    test_from_blob_as_aoti_models_do();
    if (MetalContext* c = mps_context()) {
      (void)c->synchronize_all(0);
      (void)c->empty_cache();
    }
    // The process's context stays (tables live until exit); its device, queues and events are the only
    // test-double objects left, and no buffer.
    if (td::live_buffers() != 0) {
      std::printf("  FAILED: %lld test-double buffers still alive\n", (long long)td::live_buffers());
      g_failed++;
    }
  } else {
    std::printf("usage: %s unavailable|double\n", argv[0]);
    return 2;
  }
  std::printf("%s %s: %d checks, %d failed\n", g_failed ? "FAIL" : "PASS", mode.c_str(), g_checks, g_failed);
  return g_failed ? 1 : 0;
}

// tests/fuzz/dlpack_fuzzer.cpp: libFuzzer target on the DLPack importer, slimtensor_aoti_handle_from_dlpack
// (issue 14). The input fills a DLManagedTensor field by field: data (NULL, the harness's buffer, or an
// odd address inside it), device, ndim (any int32), dtype code/bits/lanes, shape and strides (NULL or
// hostile values) and byte_offset. The importer must fail cleanly or make a handle, and the contract is
// checked: the deleter runs exactly once (at once on failure, when the handle's storage goes on success),
// the handle describes what was given, and nothing leaks. Accepted views are never read (the importer
// only borrows the pointer), so a view the harness's buffer cannot hold is fine as long as it is refused
// or merely described.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "slimtensor/c/shim.h"

extern "C" AOTITorchError slimtensor_aoti_handle_from_dlpack(void* managed, AtenTensorHandle* ret);

namespace {

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

int g_deleted = 0;
void deleter(DLManagedTensor* self) {
  if (self->manager_ctx != &g_deleted) std::abort();
  ++g_deleted;
}

[[noreturn]] void contract(const char* what) {
  std::fprintf(stderr, "contract broken: %s (last error: %s)\n", what, slimtensor_last_error());
  std::abort();
}

struct Reader {
  const uint8_t* p;
  size_t n;
  uint8_t u8() { return n ? (--n, *p++) : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v = (v << 8) | u8();
    return v;
  }
  int64_t i64() {
    switch (u8() % 6) {
      case 0: return static_cast<int64_t>(u64());
      case 1: return -static_cast<int64_t>(u8());
      default: return u8() % 7;
    }
  }
};

alignas(64) unsigned char buffer[1 << 12];

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int64_t baseline = slimtensor_aoti_live_handles();
  Reader r{data, size};
  int64_t shape[70], strides[70];
  DLManagedTensor m{};
  const uint8_t where = r.u8();
  m.dl_tensor.data = where % 4 == 0 ? nullptr : buffer + (where % 4 == 3 ? r.u8() % 8 : 0);
  const uint8_t dev = r.u8();
  m.dl_tensor.device = {dev < 200 ? 1 : static_cast<int32_t>(r.i64()), dev < 220 ? 0 : static_cast<int32_t>(r.i64())};
  const uint8_t nd = r.u8();
  m.dl_tensor.ndim = nd < 240 ? nd % 5 : static_cast<int32_t>(r.i64());
  const uint8_t dt = r.u8();
  static const DLDataType common[] = {{2, 32, 1}, {2, 64, 1}, {0, 64, 1}, {1, 8, 1}, {6, 8, 1},
                                      {4, 16, 1}, {5, 64, 1}, {2, 16, 1}, {0, 8, 1}, {1, 16, 1}};
  m.dl_tensor.dtype = dt < 200 ? common[dt % 10] : DLDataType{r.u8(), r.u8(), static_cast<uint16_t>(r.u8())};
  const int fill = m.dl_tensor.ndim > 0 && m.dl_tensor.ndim <= 70 ? m.dl_tensor.ndim : 0;
  for (int d = 0; d < fill; ++d) shape[d] = r.i64();
  for (int d = 0; d < fill; ++d) strides[d] = r.i64();
  const uint8_t ptrs = r.u8();
  m.dl_tensor.shape = (ptrs & 3) == 3 ? nullptr : shape;
  m.dl_tensor.strides = (ptrs & 4) ? nullptr : strides;
  m.dl_tensor.byte_offset = (ptrs & 8) ? r.u64() : r.u8() % 16;
  m.manager_ctx = &g_deleted;
  m.deleter = (ptrs & 16) && (ptrs & 32) ? nullptr : deleter;
  g_deleted = 0;
  AtenTensorHandle h = nullptr;
  const AOTITorchError rc = slimtensor_aoti_handle_from_dlpack(&m, (ptrs & 64) && (ptrs & 128) ? nullptr : &h);
  if (rc != 0 && rc != 1) contract("error code not 0 or 1");
  if (rc != 0) {
    if (h) contract("a handle was returned on failure");
    if (m.deleter && g_deleted != 1) contract("the deleter did not run exactly once on failure");
  } else {
    if (!h) contract("success without a handle");
    if (g_deleted != 0) contract("the deleter ran while the handle lives");
    int64_t ndim = -1, numel = -1, bytes = -1;
    if (aoti_torch_get_dim(h, &ndim) || ndim != m.dl_tensor.ndim) contract("ndim differs from the DLTensor's");
    if (aoti_torch_get_numel(h, &numel) || numel < 0) contract("numel");
    if (aoti_torch_get_storage_size(h, &bytes) || bytes < 0) contract("storage size");
    void* p = nullptr;
    if (aoti_torch_get_data_ptr(h, &p)) contract("data_ptr");
    if (numel > 0 && !m.dl_tensor.data) contract("a NULL data pointer was accepted for elements");
    if (numel > 0 &&
        reinterpret_cast<uintptr_t>(p) != reinterpret_cast<uintptr_t>(m.dl_tensor.data) + m.dl_tensor.byte_offset)
      contract("data_ptr is not data + byte_offset");
    if (aoti_torch_delete_tensor_object(h) != 0) contract("delete failed");
    if (m.deleter && g_deleted != 1) contract("the deleter did not run exactly once after delete");
  }
  if (slimtensor_aoti_live_handles() != baseline) contract("live handles did not return to the baseline");
  return 0;
}

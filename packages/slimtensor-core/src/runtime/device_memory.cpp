// runtime/device_memory.cpp: Notes [Pinned memory] and [record_stream in the core], and from_blob's pointer check.
#include "slimtensor/runtime/device_memory.h"

#include <string>
#include <vector>

#include "layout/layout.h"
#include "runtime/device_calls.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/runtime/streams.h"

namespace slimtensor::device_memory {
namespace {

// The deleter's context of a pinned storage: who pinned it and how much (host_free takes the size).
struct PinnedBlock {
  const DeviceEntry* entry;
  uint64_t nbytes;
};

void release_pinned(void* data, void* context) {
  auto* block = static_cast<PinnedBlock*>(context);
  if (data) device_calls::host_free(*block->entry, data, block->nbytes);
  delete block;
}

bool usable_plugin(const DeviceEntry& e) noexcept { return e.table != nullptr && e.unavailable_reason.empty(); }

const PinnedBlock* pinned_block_of(const Tensor& t) noexcept {
  const StorageImpl* s = t.storage_impl();
  if (s == nullptr || s->borrow_deleter() != release_pinned) return nullptr;
  return static_cast<const PinnedBlock*>(s->borrow_context());
}

}  // namespace

const DeviceEntry& pinning_device(DeviceType type, const char* function) {
  if (type != kCPU) {
    const DeviceEntry& e = usable_device(Device{type, 0}, function);
    ST_CHECK(e.table != nullptr && device_calls::can_pin(e), Runtime, function, ": device '", e.name,
             "' cannot pin host memory (its plugin has no host_allocate/host_free); name a device that can, or "
             "leave the device out to use the first one that can");
    return e;
  }
  std::string why;
  for (const DeviceEntry* e : registered_devices()) {
    if (!e->table) continue;
    if (usable_plugin(*e) && device_calls::can_pin(*e)) return *e;
    why += std::string(why.empty() ? "" : "; ") + e->name +
           (e->unavailable_reason.empty() ? std::string(" has no host_allocate")
                                          : " is unavailable: " + e->unavailable_reason);
  }
  fail(ErrorKind::Runtime, function,
       ": pinned memory needs an available device plugin that pins host memory, "
       "and there is none (",
       why.empty() ? std::string("no device plugin is registered") : why,
       "); install one (pip install slimtensor-cuda on a machine with an NVIDIA GPU), or use pin_memory=False");
}

Tensor empty_pinned(IntList sizes, IntList strides, ScalarType dtype, const DeviceEntry& pinning,
                    const char* function) {
  return Tensor::make_for_extent(sizes, strides, 0, dtype, function, "empty_pinned", [&](int64_t extent) {
    // Zero bytes pin nothing; the storage still says it is pinned (its deleter is ours).
    void* ptr = extent > 0 ? device_calls::host_allocate(pinning, static_cast<uint64_t>(extent), function) : nullptr;
    auto* block = new (std::nothrow) PinnedBlock{&pinning, static_cast<uint64_t>(extent)};
    if (block == nullptr) {
      if (ptr) device_calls::host_free(pinning, ptr, static_cast<uint64_t>(extent));
      throw Error(ErrorKind::Memory, std::string(function) + ": out of memory allocating a pinned block's header");
    }
    try {
      return Storage::adopt(
          StorageImpl::borrow(kCPUDevice, ptr, extent, release_pinned, block, false, "pinned", function));
    } catch (...) {
      release_pinned(ptr, block);  // borrow throws only before the storage exists
      throw;
    }
  });
}

Tensor pin_memory(const Tensor& t, const DeviceEntry& pinning, const char* function) {
  ST_CHECK(t.device().is_cpu(), Value, function, ": the tensor is on ", device_string(t.device()),
           "; only CPU tensors can be pinned (pinned memory is host memory)");
  if (is_pinned(t, pinning.type, function)) return t;
  const int n = t.ndim();
  std::vector<int64_t> strides(static_cast<size_t>(n));
  if (is_non_overlapping_and_dense(t.sizes(), t.strides(), n)) {
    strides.assign(t.strides(), t.strides() + n);
  } else {
    infer_dense_strides(t.sizes(), t.strides(), n, strides.data());
  }
  Tensor out = empty_pinned(IntList(t.sizes(), n), strides, t.dtype(), pinning, function);
  copy_(out, t);
  return out;
}

bool is_pinned(const Tensor& t, DeviceType type, const char* function) {
  if (!t.device().is_cpu()) return false;
  if (const PinnedBlock* b = pinned_block_of(t)) return type == kCPU || b->entry->type == type;
  const void* p = t.data_ptr();
  if (p == nullptr) return false;
  if (type != kCPU) {
    const DeviceEntry* e = find_device(type);
    bool pinned = false;
    return e && usable_plugin(*e) && device_calls::host_is_pinned(*e, p, &pinned, function) && pinned;
  }
  for (const DeviceEntry* e : registered_devices()) {
    bool pinned = false;
    if (usable_plugin(*e) && device_calls::host_is_pinned(*e, p, &pinned, function) && pinned) return true;
  }
  return false;
}

void record_stream(const Tensor& t, void* stream, const char* function) {
  const Device d = t.device();
  ST_CHECK(!d.is_cpu(), Value, function,
           ": the tensor is on the CPU, which has no streams; record_stream is for "
           "tensors of a plugin device (cuda, ...)");
  const StorageImpl* s = t.storage_impl();
  if (!s->is_owning() || s->data() == nullptr) return;  // not the allocator's memory (Note [record_stream in the core])
  const DeviceEntry& e = usable_device(d, function);
  if (!device_calls::record_stream(e, d.index, s->data(), stream, function)) {
    device_calls::synchronize_stream(e, d.index, stream, function);
  }
}

Device check_device_pointer(Device device, const void* ptr, const char* function) {
  if (device.is_cpu()) return device;
  // NULL locates nowhere; from_blob refuses it for a view with elements ("data is NULL"), on index 0 as
  // the device name says, not as a device index -1.
  if (ptr == nullptr) return Device{device.type, device.index < 0 ? int16_t{0} : device.index};
  const DeviceEntry& e = usable_device(Device{device.type, device.index < 0 ? int16_t{0} : device.index}, function);
  if (!device_calls::can_locate(e)) return device;  // the plugin cannot tell: the caller is trusted
  int32_t index = -1;
  const char* why = "";
  ST_CHECK(device_calls::locate_pointer(e, ptr, &index, &why), Value, function, ": ", ptr, " is not memory of ",
           device_string(device), " (", why, "); pass the device the memory is on (device='cpu' for host memory)");
  ST_CHECK(device.index < 0 || device.index == index, Value, function, ": ", ptr, " is memory of ", e.name, ":", index,
           ", not ", device_string(device), "; pass device='", e.name, ":", index, "'");
  return Device{device.type, static_cast<int16_t>(index)};
}

}  // namespace slimtensor::device_memory

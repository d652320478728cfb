// src/aoti/dlpack_bridge.cpp: AOTI handles <-> legacy DLPack (DLManagedTensor), the bridge slimtensor.aoti and C hosts use.
//
// Note [DLPack bridge]
// slimtensor_aoti_handle_from_dlpack takes ownership of a DLManagedTensor and returns a handle over its
// memory (a borrowed storage whose deleter calls the DLManagedTensor's deleter once the last tensor,
// view or handle is gone). slimtensor_aoti_handle_to_dlpack steals a handle and returns a
// DLManagedTensor over its tensor; the tensor (and so its storage) lives until the consumer calls the
// deleter. So memory flows between the model and any DLPack producer or consumer (slimtensor's Python
// tensors, numpy, torch) without copies and without either side knowing the other's types.
#include <cstdint>
#include <cstdlib>
#include <new>

#include "aoti/handle.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/tensor/factories.h"

namespace {

// The DLPack 0.8/1.x legacy structures (dlpack.h), declared from the specification.
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

enum : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };

using namespace slimtensor;

ScalarType dtype_from_dl(DLDataType t, const char* fn) {
  if (t.lanes != 1) fail(ErrorKind::Type, fn, "(): vector dtypes (lanes = ", t.lanes, ") are not supported");
  switch (t.code) {
    case kDLInt:
      switch (t.bits) { case 8: return ScalarType::Int8; case 16: return ScalarType::Int16; case 32: return ScalarType::Int32; case 64: return ScalarType::Int64; }
      break;
    case kDLUInt:
      switch (t.bits) { case 8: return ScalarType::UInt8; case 16: return ScalarType::UInt16; case 32: return ScalarType::UInt32; case 64: return ScalarType::UInt64; }
      break;
    case kDLFloat:
      switch (t.bits) { case 16: return ScalarType::Float16; case 32: return ScalarType::Float32; case 64: return ScalarType::Float64; }
      break;
    case kDLBfloat:
      if (t.bits == 16) return ScalarType::BFloat16;
      break;
    case kDLComplex:
      if (t.bits == 64) return ScalarType::Complex64;
      if (t.bits == 128) return ScalarType::Complex128;
      break;
    case kDLBool:
      if (t.bits == 8) return ScalarType::Bool;
      break;
  }
  fail(ErrorKind::Type, fn, "(): DLPack dtype (code ", int(t.code), ", bits ", int(t.bits), ") has no slimtensor dtype");
}

DLDataType dtype_to_dl(ScalarType s, const char* fn) {
  const ScalarTypeInfo& i = info(s);
  uint8_t bits = static_cast<uint8_t>(i.itemsize * 8);
  if (s == ScalarType::Bool) return {kDLBool, 8, 1};
  if (s == ScalarType::BFloat16) return {kDLBfloat, 16, 1};
  if (i.is_complex && s != ScalarType::Complex32) return {kDLComplex, bits, 1};
  if (i.is_floating && (s == ScalarType::Float16 || s == ScalarType::Float32 || s == ScalarType::Float64)) return {kDLFloat, bits, 1};
  if (!i.is_floating && !i.is_complex && i.is_tensor_dtype && bits <= 64) return {i.is_signed ? kDLInt : kDLUInt, bits, 1};
  fail(ErrorKind::Type, fn, "(): dtype ", name(s), " has no DLPack code");
}

Device device_from_dl(DLDevice d, const char* fn) {
  if (d.device_type == 1) return kCPUDevice;
  for (const DeviceEntry* e : registered_devices()) {
    if (e->dlpack_device_type == d.device_type) return Device(e->type, static_cast<int16_t>(d.device_id));
  }
  fail(ErrorKind::Value, fn, "(): DLPack device type ", d.device_type, " is not a registered slimtensor device");
}

void release_managed(void* /*data*/, void* context) {
  auto* m = static_cast<DLManagedTensor*>(context);
  if (m->deleter) m->deleter(m);
}

struct Export {
  DLManagedTensor managed;
  AtenTensorHandle handle;
};

void delete_export(DLManagedTensor* self) {
  auto* e = reinterpret_cast<Export*>(self);
  aoti::delete_handle(e->handle);
  delete e;
}

}  // namespace

extern "C" {

// Always takes ownership of `managed` (a DLManagedTensor*): on failure its deleter has been called.
SLIMTENSOR_C_API AOTITorchError slimtensor_aoti_handle_from_dlpack(void* managed, AtenTensorHandle* ret) {
  const char* fn = "slimtensor_aoti_handle_from_dlpack";
  bool handed = false;  // the storage owns the deleter call from here on
  AOTITorchError rc = aoti::guarded(fn, [&] {
    auto* m = static_cast<DLManagedTensor*>(managed);
    if (!m) fail(ErrorKind::Value, fn, "(): managed is NULL");
    aoti::out_arg(ret, fn, "ret");
    const DLTensor& t = m->dl_tensor;
    ScalarType st = dtype_from_dl(t.dtype, fn);
    Device device = device_from_dl(t.device, fn);
    const aoti::LayoutArgs layout(t.ndim, t.shape, t.strides, fn);
    int64_t item = itemsize(st);
    char* base = static_cast<char*>(t.data);
    int64_t offset = 0;
    if (!base && t.byte_offset != 0) {
      fail(ErrorKind::Value, fn, "(): data is NULL but byte_offset is ", t.byte_offset, "; a NULL data pointer needs 0");
    }
    if (t.byte_offset % static_cast<uint64_t>(item) == 0) {
      offset = static_cast<int64_t>(t.byte_offset / static_cast<uint64_t>(item));
    } else {  // byte arithmetic on the address: a hostile byte_offset must not wrap the pointer
      uintptr_t at = 0;
      if (t.byte_offset > static_cast<uint64_t>(INT64_MAX) ||
          __builtin_add_overflow(reinterpret_cast<uintptr_t>(base), t.byte_offset, &at)) {
        fail(ErrorKind::Value, fn, "(): byte_offset ", t.byte_offset, " is out of range for data ",
             static_cast<const void*>(base));
      }
      base = reinterpret_cast<char*>(at);
    }
    // from_blob checks everything before its storage takes the deleter (or throws, and the deleter is ours).
    Tensor tensor =
        from_blob(base, layout.sizes, layout.strides, offset, st, device, &release_managed, m, false, "dlpack", fn);
    handed = true;
    *ret = aoti::make_handle(std::move(tensor), fn);
  });
  auto* m = static_cast<DLManagedTensor*>(managed);
  if (rc != AOTI_TORCH_SUCCESS && !handed && m && m->deleter) m->deleter(m);
  return rc;
}

// Calls a DLManagedTensor's deleter (for a host that could not hand it to a consumer).
SLIMTENSOR_C_API void slimtensor_aoti_dlpack_delete(void* managed) {
  auto* m = static_cast<DLManagedTensor*>(managed);
  if (m && m->deleter) m->deleter(m);
}

// Steals `handle`; returns a DLManagedTensor* (NULL on failure, and the handle is then still the caller's).
SLIMTENSOR_C_API void* slimtensor_aoti_handle_to_dlpack(AtenTensorHandle handle) {
  const char* fn = "slimtensor_aoti_handle_to_dlpack";
  Export* out = nullptr;
  AOTITorchError rc = aoti::guarded(fn, [&] {
    const Tensor& t = aoti::tensor_arg(handle, fn, "handle");
    DLDataType dt = dtype_to_dl(t.dtype(), fn);
    int32_t dl_device = 1;
    if (!t.device().is_cpu()) {
      const DeviceEntry* e = find_device(t.device().type);
      if (!e) fail(ErrorKind::Value, fn, "(): the tensor's device is not registered");
      dl_device = e->dlpack_device_type;
    }
    out = new Export;
    out->handle = handle;
    DLTensor& d = out->managed.dl_tensor;
    d.data = t.storage_impl()->data();
    d.device = {dl_device, t.device().index};
    d.ndim = t.ndim();
    d.dtype = dt;
    d.shape = const_cast<int64_t*>(t.sizes());
    d.strides = const_cast<int64_t*>(t.strides());
    d.byte_offset = static_cast<uint64_t>(t.storage_offset() * t.itemsize());
    out->managed.manager_ctx = handle;
    out->managed.deleter = &delete_export;
  });
  return rc == AOTI_TORCH_SUCCESS ? &out->managed : nullptr;
}

}  // extern "C"

// tensor_access.cpp: reading AtenTensorHandles through the core's exported functions (Note [Tensor access]).
#include "tensor_access.h"

#include <cstring>

#include "dtypes.h"
#include "errors.h"
#include "metal_context.h"

namespace slimtensor_metal {
namespace {
TensorAccess g_access;
bool g_access_set = false;

template <class F>
void bind(const st_core_table* core, const char* name, F** slot) {
  void* p = core->core_symbol(name);
  std::memcpy(slot, &p, sizeof p);  // POSIX: function pointers round-trip through void*
}
const char* core_message(const TensorAccess& a) {
  const char* m = a.last_error ? a.last_error() : nullptr;
  return m && *m ? m : "the core gave no message";
}
}  // namespace

TensorAccess tensor_access_from_core(const st_core_table* core) {
  TensorAccess a;
  if (!core || core->abi_minor < 1 || core->struct_size < ST_CORE_TABLE_SIZE_1_1 || !core->core_symbol) return a;
  bind(core, "aoti_torch_get_dtype", &a.get_dtype);
  bind(core, "aoti_torch_get_device_type", &a.get_device_type);
  bind(core, "aoti_torch_get_device_index", &a.get_device_index);
  bind(core, "aoti_torch_get_dim", &a.get_dim);
  bind(core, "aoti_torch_get_sizes", &a.get_sizes);
  bind(core, "aoti_torch_get_strides", &a.get_strides);
  bind(core, "slimtensor_aoti_get_memory_ref", &a.memory_ref);
  bind(core, "slimtensor_last_error", &a.last_error);
  return a;
}

TensorAccess set_tensor_access(const TensorAccess& a) {
  TensorAccess old = g_access;
  g_access = a;
  g_access_set = true;
  return old;
}

const TensorAccess& tensor_access() { return g_access; }

int read_tensor_locked(MetalContext* ctx, const char* what, AtenTensorHandle t, TensorInfo* out) {
  if (!t) return fail("%s: needs a tensor but got a NULL handle", what);
  if (!g_access_set && ctx->core()) set_tensor_access(tensor_access_from_core(ctx->core()));
  const TensorAccess& a = g_access;
  const char* missing = !a.get_dtype          ? "aoti_torch_get_dtype"
                        : !a.get_device_type  ? "aoti_torch_get_device_type"
                        : !a.get_device_index ? "aoti_torch_get_device_index"
                        : !a.get_dim          ? "aoti_torch_get_dim"
                        : !a.get_sizes        ? "aoti_torch_get_sizes"
                        : !a.get_strides      ? "aoti_torch_get_strides"
                        : !a.memory_ref       ? "slimtensor_aoti_get_memory_ref"
                                              : nullptr;
  if (missing)
    return fail(
        "%s: the core does not export %s through core_symbol (device-plugin ABI 1.1); upgrade the core: "
        "pip install -U slimtensor-core",
        what, missing);
  int64_t* sizes = nullptr;
  int64_t* strides = nullptr;
  if (a.get_dtype(t, &out->dtype) || a.get_device_type(t, &out->device_type) ||
      a.get_device_index(t, &out->device_index) || a.get_dim(t, &out->ndim) || a.get_sizes(t, &sizes) ||
      a.get_strides(t, &strides))
    return fail("%s: the core could not read this tensor (a deleted or foreign handle?): %s", what, core_message(a));
  out->sizes = sizes;
  out->strides = strides;
  if (out->device_type != kMpsDeviceType)
    return fail("%s: expected a tensor on 'mps' (device type %d) but it is on device type %d; move it with .to('mps')",
                what, kMpsDeviceType, out->device_type);
  if (out->device_index != 0)
    return fail("%s: MPS has device index 0 only but the tensor is on mps:%d", what, out->device_index);
  out->itemsize = dtype_itemsize(out->dtype);
  if (out->itemsize == 0) return fail("%s: dtype code %d has no Metal representation", what, out->dtype);
  st_memory_ref r{};
  if (a.memory_ref(t, &r))
    return fail("%s: slimtensor_aoti_get_memory_ref could not read this tensor's buffer and offset: %s", what,
                core_message(a));
  out->buffer = r.handle;
  out->offset = r.byte_offset;
  return 0;
}

}  // namespace slimtensor_metal

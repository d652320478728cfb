// aoti/dlpack_bridge.cpp: AOTI handles <-> DLPack managed tensors for C hosts, through the one codec
// (Note [DLPack bridge] in slimtensor/c/aoti_host.h, Note [DLPack codec] in src/dlpack/codec.h).
#include <type_traits>
#include <utility>

#include "aoti/handle.h"
#include "dlpack/codec.h"
#include "slimtensor/c/aoti_host.h"

namespace {

using namespace slimtensor;
using dlpack::DLManagedTensor;
using dlpack::DLManagedTensorVersioned;

// Note [Foreign deleter types]
// A host's deleter was compiled against its own declaration of the DLPack structs (dlpack.h's, or its own:
// a C ABI carries layouts, not C++ types), so its C++ type names another struct than our namespaced one and
// clang's -fsanitize=function (the fuzz builds) calls every such call a type mismatch. The layouts are the
// specification's, which is the contract here: that one check is off for this call.
#if defined(__clang__)
#  define ST_FOREIGN_CALLBACK __attribute__((no_sanitize("function")))
#else
#  define ST_FOREIGN_CALLBACK
#endif

template <class Managed>
ST_FOREIGN_CALLBACK void call_deleter(Managed* m) noexcept {
  if (m && m->deleter) m->deleter(m);
}

// The storage deleter: the producer's deleter, called by whoever drops the last reference. C producers
// need nothing more (a Python producer's own deleter takes the GIL, as DLPack requires of it).
template <class Managed>
void release_managed(void* /*data*/, void* context) {
  call_deleter(static_cast<Managed*>(context));
}

template <class Managed>
AOTITorchError handle_from(void* managed, AtenTensorHandle* ret, const char* fn) {
  auto* m = static_cast<Managed*>(managed);
  bool handed = false;  // the storage owns the deleter call from here on
  const AOTITorchError rc = aoti::guarded(fn, [&] {
    if (!m) fail(ErrorKind::Value, fn, "(): managed is NULL; pass the DLManagedTensor to take");
    aoti::out_arg(ret, fn, "ret");
    bool read_only = false;  // a legacy tensor: the host vouches that it is writable
    if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
      dlpack::check_version(*m, fn);
      read_only = (m->flags & dlpack::kDLPackFlagBitmaskReadOnly) != 0;
    }
    Tensor tensor = dlpack::decode(m->dl_tensor, read_only, &release_managed<Managed>, m, "dlpack", fn);
    handed = true;
    *ret = aoti::make_handle(std::move(tensor), fn);
  });
  if (rc != AOTI_TORCH_SUCCESS && !handed) call_deleter(m);
  return rc;
}

template <class Managed>
void* handle_to(AtenTensorHandle handle, const char* fn) {
  Managed* out = nullptr;
  const AOTITorchError rc = aoti::guarded(fn, [&] {
    const Tensor& t = aoti::tensor_arg(handle, fn, "handle");
    if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
      out = dlpack::encode_versioned(t, 0, fn);
    } else {
      ST_CHECK(!t.is_read_only(), Buffer, fn,
               "(): the tensor is read-only and a legacy DLManagedTensor cannot "
               "say so; use slimtensor_aoti_handle_to_dlpack_versioned");
      out = dlpack::encode_legacy(t, fn);
    }
    aoti::delete_handle(handle);  // the managed tensor holds the reference now
  });
  return rc == AOTI_TORCH_SUCCESS ? out : nullptr;
}

}  // namespace

extern "C" {

SLIMTENSOR_C_API AOTITorchError slimtensor_aoti_handle_from_dlpack(void* managed, AtenTensorHandle* ret) {
  return handle_from<DLManagedTensor>(managed, ret, "slimtensor_aoti_handle_from_dlpack");
}

SLIMTENSOR_C_API AOTITorchError slimtensor_aoti_handle_from_dlpack_versioned(void* managed, AtenTensorHandle* ret) {
  return handle_from<DLManagedTensorVersioned>(managed, ret, "slimtensor_aoti_handle_from_dlpack_versioned");
}

SLIMTENSOR_C_API void* slimtensor_aoti_handle_to_dlpack(AtenTensorHandle handle) {
  return handle_to<DLManagedTensor>(handle, "slimtensor_aoti_handle_to_dlpack");
}

SLIMTENSOR_C_API void* slimtensor_aoti_handle_to_dlpack_versioned(AtenTensorHandle handle) {
  return handle_to<DLManagedTensorVersioned>(handle, "slimtensor_aoti_handle_to_dlpack_versioned");
}

SLIMTENSOR_C_API void slimtensor_aoti_dlpack_delete(void* managed) {
  call_deleter(static_cast<DLManagedTensor*>(managed));
}

SLIMTENSOR_C_API void slimtensor_aoti_dlpack_versioned_delete(void* managed) {
  call_deleter(static_cast<DLManagedTensorVersioned*>(managed));
}

}  // extern "C"

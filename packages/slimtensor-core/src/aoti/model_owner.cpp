// src/aoti/model_owner.cpp: the model owner of Note [Model owner]: constant storages, adopted outputs, deferred
// container delete.
#include "aoti/model_owner.h"

#include <atomic>
#include <mutex>
#include <unordered_set>

#include "aoti/handle.h"

namespace slimtensor::aoti {

struct ModelOwner {
  std::atomic<int64_t> refs{1};
  slimtensor_model_release_fn release = nullptr;
  void* container = nullptr;
  std::mutex mutex;
  // Ids, not addresses: a temporary made while the owner was entered may be freed, and its header reused
  // by an unrelated storage; ids are never reused.
  std::unordered_set<uint64_t> constants;
};

namespace {
// Initial-exec: from_blob reads it on every call (a plain %fs-relative load).
thread_local ModelOwner* t_owner __attribute__((tls_model("initial-exec"))) = nullptr;

void unref(ModelOwner* o) noexcept {
  if (o->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    if (o->release && o->container) {
      if (o->release(o->container) != 0) {
        // Nothing to report to: the last user is gone. Keep the message for whoever asks.
        set_last_error("slimtensor_aoti_owner_release", "the model container's delete function failed");
      }
    }
    delete o;
  }
}

void pinned_storage_gone(void* /*data*/, void* context) { unref(static_cast<ModelOwner*>(context)); }
}  // namespace

ModelOwner* current_owner() noexcept { return t_owner; }

void owner_record(ModelOwner* owner, StorageImpl* storage) {
  std::lock_guard<std::mutex> lock(owner->mutex);
  owner->constants.insert(storage->id());
}

}  // namespace slimtensor::aoti

using namespace slimtensor;
using namespace slimtensor::aoti;

extern "C" {

void* slimtensor_aoti_owner_new(slimtensor_model_release_fn release, void* container) {
  try {
    auto* o = new ModelOwner;
    o->release = release;
    o->container = container;
    return o;
  } catch (...) {
    set_last_error("slimtensor_aoti_owner_new", "out of memory");
    return nullptr;
  }
}

void slimtensor_aoti_owner_set_container(void* owner, void* container) {
  if (owner) static_cast<ModelOwner*>(owner)->container = container;
}

void slimtensor_aoti_owner_enter(void* owner) { t_owner = static_cast<ModelOwner*>(owner); }

void slimtensor_aoti_owner_release(void* owner) {
  if (owner) unref(static_cast<ModelOwner*>(owner));
}

int64_t slimtensor_aoti_owner_refs(void* owner) { return owner ? static_cast<ModelOwner*>(owner)->refs.load() : 0; }

int32_t slimtensor_aoti_owner_adopt_output(void* owner, AtenTensorHandle output) {
  const char* fn = "slimtensor_aoti_owner_adopt_output";
  int32_t adopted = 0;
  AOTITorchError rc = guarded(fn, [&] {
    auto* o = static_cast<ModelOwner*>(owner);
    if (!o) fail(ErrorKind::Value, fn, "(): owner is NULL");
    const Tensor& t = tensor_arg(output, fn, "output", false);
    if (!t.defined()) return;
    {
      std::lock_guard<std::mutex> lock(o->mutex);
      if (!o->constants.count(t.storage_impl()->id())) return;
    }
    StorageImpl* s = t.storage_impl();
    o->refs.fetch_add(1, std::memory_order_relaxed);
    StorageImpl* pinned;
    try {
      // Handle and offset, not an address: the constant may live in opaque device memory.
      pinned = StorageImpl::borrow_device(s->device(), s->data(), s->handle_offset(), s->nbytes(), &pinned_storage_gone,
                                          o, s->is_read_only());
    } catch (...) {
      o->refs.fetch_sub(1, std::memory_order_relaxed);
      throw;
    }
    check_handle(output, fn, "output")->tensor =
        Tensor::make(Storage::adopt(pinned), IntList(t.sizes(), t.ndim()), IntList(t.strides(), t.ndim()),
                     t.storage_offset(), t.dtype(), "model output (aliases a constant)");
    adopted = 1;
  });
  return rc == AOTI_TORCH_SUCCESS ? adopted : -1;
}

}  // extern "C"

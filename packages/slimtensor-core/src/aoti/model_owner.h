// src/aoti/model_owner.h: which borrowed storages belong to a loaded model's constants, and what keeps the model alive.
//
// Note [Model owner]
// A model's constants are borrowed tensors over memory the model's container frees when it is deleted.
// While a host creates the container (or loads its weights) it "enters" an owner on that thread: every
// create_tensor_from_blob(_v2) storage made then is recorded as the model's. After a run, the host asks
// adopt_output() for each output: an output whose storage is one of the model's is re-made over a new
// borrowed storage on the same bytes whose deleter releases one reference on the owner. The owner starts
// with one reference for the open model; when the last reference goes (the host closed the model and no
// output over its memory is left) the owner calls the container's delete function. So outputs that
// alias constants stay valid after close(), and the container is deleted exactly once, as soon as it can.
#pragma once

#include <cstdint>

#include "slimtensor/c/shim.h"
#include "slimtensor/tensor/storage.h"

namespace slimtensor::aoti {

struct ModelOwner;

// The owner entered on this thread, or null.
ModelOwner* current_owner() noexcept;
// Records a storage made while `owner` was entered (by its id, which is never reused).
void owner_record(ModelOwner* owner, StorageImpl* storage);

}  // namespace slimtensor::aoti

extern "C" {
typedef int32_t (*slimtensor_model_release_fn)(void* container);
// A new owner with one reference; `release(container)` runs when the last reference goes.
SLIMTENSOR_C_API void* slimtensor_aoti_owner_new(slimtensor_model_release_fn release, void* container);
// Sets the container the owner deletes (once it exists).
SLIMTENSOR_C_API void slimtensor_aoti_owner_set_container(void* owner, void* container);
// Sets (or, with NULL, clears) the owner entered on this thread.
SLIMTENSOR_C_API void slimtensor_aoti_owner_enter(void* owner);
// Drops one reference (the host's, at close()).
SLIMTENSOR_C_API void slimtensor_aoti_owner_release(void* owner);
// If `output`'s storage is one of the owner's, re-makes it over an owner-pinning storage; returns 1 if
// it did, 0 if the output does not alias the model's memory, -1 on error (slimtensor_last_error()).
SLIMTENSOR_C_API int32_t slimtensor_aoti_owner_adopt_output(void* owner, AtenTensorHandle output);
// References held on the owner now (1 for the open model + one per adopted output storage alive).
SLIMTENSOR_C_API int64_t slimtensor_aoti_owner_refs(void* owner);
}

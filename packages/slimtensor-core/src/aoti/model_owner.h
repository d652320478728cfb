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

#include "slimtensor/c/aoti_host.h"
#include "slimtensor/tensor/storage.h"

namespace slimtensor::aoti {

struct ModelOwner;

// The owner entered on this thread, or null.
ModelOwner* current_owner() noexcept;
// Records a storage made while `owner` was entered (by its id, which is never reused).
void owner_record(ModelOwner* owner, StorageImpl* storage);

}  // namespace slimtensor::aoti

// The C functions of the owner are declared in slimtensor/c/aoti_host.h.

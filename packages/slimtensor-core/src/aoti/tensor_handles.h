// aoti/tensor_handles.h: tensors <-> AOTI handles for C++ callers in other libraries (the Python module).
//
// The handle internals (src/aoti/handle.h) are inline and hidden in libslimtensor; these exported
// functions are how slimtensor._C makes the input handles of a model run and takes its outputs back,
// without a DLPack round trip (Note [AOTI calls from Python] in src/python/aoti_bridge.cpp).
#pragma once

#include "slimtensor/base/export.h"
#include "slimtensor/c/shim.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor::aoti {

// A new handle holding another reference to t (same storage, sizes, strides, offset; any device), counted
// and traced as made by `op`. Throws Error(Value) for an undefined tensor.
SLIMTENSOR_API AtenTensorHandle new_tensor_handle(const Tensor& t, const char* op);
// The tensor of a live handle, which is deleted: the reference moves to the result (steals the handle).
// Throws Error(Value) naming `function` when h is not a live handle (and then h is untouched).
SLIMTENSOR_API Tensor steal_tensor_handle(AtenTensorHandle h, const char* function);

}  // namespace slimtensor::aoti

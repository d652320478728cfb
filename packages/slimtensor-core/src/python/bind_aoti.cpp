// src/python/bind_aoti.cpp: the Python side of AOTI handles: slimtensor._C._aoti (tensor <-> handle, nothing else).
//
// The model runner (python/slimtensor/aoti) calls the shims and the model through ctypes, which releases
// the GIL for every call. This module only moves tensors across the handle boundary:
//   handle_from_tensor(t) -> int   a new handle (one owning reference) to t;
//   tensor_from_handle(h) -> Tensor   takes the handle's reference and deletes the handle (steals h).
#include <nanobind/nanobind.h>

#include <cstdint>

#include "aoti/handle.h"
#include "slimtensor/tensor.h"

namespace nb = nanobind;

void bind_aoti(nb::module_& m) {
  using slimtensor::Tensor;
  nb::module_ a = m.def_submodule("_aoti", "AOTI handles (used by slimtensor.aoti)");
  a.def(
      "handle_from_tensor",
      [](const Tensor& t) {
        return reinterpret_cast<uintptr_t>(slimtensor::aoti::make_handle(Tensor(t), "slimtensor.aoti input"));
      },
      nb::arg("tensor"), "A new AOTI handle holding one reference to the tensor (the caller must release it).");
  a.def(
      "tensor_from_handle",
      [](uintptr_t h) {
        auto* handle = reinterpret_cast<AtenTensorHandle>(h);
        slimtensor::aoti::check_handle(handle, "tensor_from_handle", "handle");
        Tensor t = handle->tensor;
        slimtensor::aoti::delete_handle(handle);
        if (!t.defined()) throw nb::value_error("tensor_from_handle(): the handle holds an undefined tensor");
        return t;
      },
      nb::arg("handle"), "Takes the handle's tensor and deletes the handle.");
}

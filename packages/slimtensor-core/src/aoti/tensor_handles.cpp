// aoti/tensor_handles.cpp: tensors <-> AOTI handles for C++ callers in other libraries.
#include "aoti/tensor_handles.h"

#include <utility>

#include "aoti/handle.h"

namespace slimtensor::aoti {

AtenTensorHandle new_tensor_handle(const Tensor& t, const char* op) {
  ST_CHECK(t.defined(), Value, call_name(op), ": the tensor is undefined");
  return emplace_handle(op, [&] { return Tensor(t); });
}

Tensor steal_tensor_handle(AtenTensorHandle h, const char* function) {
  AtenTensorOpaque* o = check_handle(h, function, "handle");
  Tensor t = std::move(o->tensor);
  delete_handle(h);
  return t;
}

}  // namespace slimtensor::aoti

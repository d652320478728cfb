// src/aoti/ops/op_args.h: argument checks shared by the CPU op fallbacks (cpu device, dtype, rank, optional handles)
// and the handing out of their results.
#pragma once

#include <cstddef>
#include <utility>

#include "aoti/handle.h"

namespace slimtensor::aoti {

// The tensor behind an op argument, checked live, defined and on the CPU.
inline const Tensor& cpu_arg(AtenTensorHandle h, const char* fn, const char* arg) {
  const Tensor& t = tensor_arg(h, fn, arg);
  if (!t.device().is_cpu()) {
    fail(ErrorKind::Value, fn, "(): ", arg, " is on ", device_string(t.device()),
         " but this fallback runs on the cpu; move the tensor to the cpu");
  }
  return t;
}

inline void check_ndim(const Tensor& t, int ndim, const char* fn, const char* arg) {
  if (t.ndim() != ndim) fail(ErrorKind::Value, fn, "(): ", arg, " must be ", ndim, "-D but is ", t.ndim(), "-D");
}

inline void check_same_dtype(const Tensor& a, const Tensor& b, const char* fn, const char* an, const char* bn) {
  if (a.dtype() != b.dtype()) {
    fail(ErrorKind::Type, fn, "(): ", an, " is ", name(a.dtype()), " but ", bn, " is ", name(b.dtype()),
         "; both must have the same dtype");
  }
}

// Hands an op's results out as new handles, all or none: rets[i] receives the handle of *results[i] once
// every handle is made; when one cannot be made, those already made are deleted and the error propagates,
// so a failed op leaks no handle and writes no output pointer.
template <size_t N>
void return_handles(const char* fn, Tensor* const (&results)[N], AtenTensorHandle* const (&rets)[N]) {
  AtenTensorHandle made[N] = {};
  size_t n = 0;
  try {
    for (; n < N; ++n) made[n] = make_handle(std::move(*results[n]), fn);
  } catch (...) {
    for (size_t i = 0; i < n; ++i) delete_handle(made[i]);
    throw;
  }
  for (size_t i = 0; i < N; ++i) *rets[i] = made[i];
}

}  // namespace slimtensor::aoti

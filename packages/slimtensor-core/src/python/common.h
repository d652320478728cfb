// common.h: shared pieces of the nanobind module: argument conversion and the registration functions.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <cstring>

#include "slimtensor/copy/copy.h"
#include "slimtensor/copy/scalar.h"
#include "slimtensor/tensor/device.h"
#include "slimtensor/tensor/scalar_type.h"
#include "slimtensor/tensor/tensor.h"

namespace nb = nanobind;

namespace slimtensor::python {

// The Python dtype object for a code (a new reference), created once at import.
nb::object dtype_object(ScalarType t);
// dtype=... arguments: a slimtensor dtype, a name ("float32"), a numpy dtype or type; None gives `fallback`.
ScalarType to_dtype(nb::handle obj, ScalarType fallback, const char* function);
// device=... arguments: a Device, a string, None (the CPU).
Device to_device(nb::handle obj, const char* function);
// Sizes given as a tuple/list, or as varargs (a tuple of ints); fills `out`, returns the count.
int64_t to_int_list(nb::handle obj, int64_t* out, int64_t capacity, const char* function);
// An int argument (or anything with __index__, not bool); TypeError/ValueError naming `function` otherwise.
int64_t to_int64(nb::handle obj, const char* function, const char* what);
// A Python number (bool, int, float, complex) as a Scalar; raises TypeError otherwise.
Scalar to_scalar(nb::handle obj, const char* function);
nb::object scalar_to_python(const Scalar& s, ScalarType t);

// The short name of obj's type ("ndarray" for numpy.ndarray), without allocating: names a borrowed
// storage's owner in traces.
inline const char* type_short_name(nb::handle obj) {
  const char* full = Py_TYPE(obj.ptr())->tp_name;
  const char* dot = std::strrchr(full, '.');
  return dot ? dot + 1 : full;
}

// False once the interpreter is finalizing: deleters then leak what Python owns instead of touching it.
bool python_alive();
// Borrowed memory kept alive by a Python object: the deleter takes the GIL and survives shutdown.
void release_python_owner(void* data, void* context);
// Borrowed memory from a Py_buffer (heap-allocated, released with the GIL held).
void release_python_buffer(void* data, void* context);

// A tensor over the memory of a buffer-protocol exporter (numpy arrays, bytearray, memoryview, array.array),
// without copying; `dtype_override` (None or a dtype) reinterprets items of the same size.
Tensor from_buffer(nb::handle obj, nb::handle dtype_override);

void bind_types(nb::module_& m);
void bind_tensor(nb::module_& m);
void bind_factories(nb::module_& m);
void bind_dlpack(nb::module_& m, nb::class_<Tensor>& cls);
void bind_aoti(nb::module_& m);
void bind_collectives(nb::module_& m);
void bind_device_memory(nb::module_& m, nb::class_<Tensor>& cls);
void bind_indexing(nb::class_<Tensor>& cls);
void bind_buffer(nb::module_& m);
// The type slots that give Tensor the buffer protocol.
extern PyType_Slot tensor_buffer_slots[];

}  // namespace slimtensor::python

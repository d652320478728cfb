// buffer.cpp: the Python buffer protocol both ways: Tensor exports it (numpy, memoryview) and
// _from_buffer imports any exporter (numpy arrays, bytearray, array.array) without copying.
#include <nanobind/stl/string.h>

#include <cstring>
#include <string>

#include "common.h"
#include "slimtensor/base/error.h"
#include "slimtensor/tensor/factories.h"

namespace slimtensor::python {
namespace {

const char* format_of(ScalarType t) {
  switch (t) {
    case ScalarType::UInt8: return "B";
    case ScalarType::Int8: return "b";
    case ScalarType::Int16: return "h";
    case ScalarType::Int32: return "i";
    case ScalarType::Int64: return "q";
    case ScalarType::UInt16: return "H";
    case ScalarType::UInt32: return "I";
    case ScalarType::UInt64: return "Q";
    case ScalarType::Float16: return "e";
    case ScalarType::Float32: return "f";
    case ScalarType::Float64: return "d";
    case ScalarType::Complex64: return "Zf";
    case ScalarType::Complex128: return "Zd";
    case ScalarType::Bool: return "?";
    default: return nullptr;  // bfloat16, complex32, float8: no struct-module format exists
  }
}

// Parses a struct-module format of one native or little-endian element; returns false if unknown.
bool dtype_of_format(const char* f, int64_t itemsize, ScalarType* out) {
  if (!f) f = "B";
  if (*f == '@' || *f == '=' || *f == '<') ++f;
  std::string s(f);
  auto integer = [&](bool is_signed) {
    switch (itemsize) {
      case 1: *out = is_signed ? ScalarType::Int8 : ScalarType::UInt8; return true;
      case 2: *out = is_signed ? ScalarType::Int16 : ScalarType::UInt16; return true;
      case 4: *out = is_signed ? ScalarType::Int32 : ScalarType::UInt32; return true;
      case 8: *out = is_signed ? ScalarType::Int64 : ScalarType::UInt64; return true;
      default: return false;
    }
  };
  if (s == "b" || s == "h" || s == "i" || s == "l" || s == "q" || s == "n") return integer(true);
  if (s == "B" || s == "H" || s == "I" || s == "L" || s == "Q" || s == "N") return integer(false);
  if (s == "?") {
    *out = ScalarType::Bool;
    return itemsize == 1;
  }
  if (s == "e") {
    *out = ScalarType::Float16;
    return itemsize == 2;
  }
  if (s == "f") {
    *out = ScalarType::Float32;
    return itemsize == 4;
  }
  if (s == "d") {
    *out = ScalarType::Float64;
    return itemsize == 8;
  }
  if (s == "Zf") {
    *out = ScalarType::Complex64;
    return itemsize == 8;
  }
  if (s == "Zd") {
    *out = ScalarType::Complex128;
    return itemsize == 16;
  }
  return false;
}

struct ExportedShape {
  Py_ssize_t shape[64];
  Py_ssize_t strides[64];
};

int tensor_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  const Tensor* t = nb::inst_ptr<Tensor>(self);
  const char* format = format_of(t->dtype());
  if (!t->device().is_cpu()) {
    PyErr_Format(PyExc_BufferError,
                 "buffer protocol: the tensor is on %s; only CPU tensors export buffers (call .cpu() first)",
                 device_string(t->device()).c_str());
    return -1;
  }
  if (!format) {
    PyErr_Format(PyExc_BufferError,
                 "buffer protocol: %s has no buffer format; use t.numpy() (bfloat16 and float8 go "
                 "through ml_dtypes) or t.view(slimtensor.uint16)",
                 name(t->dtype()));
    return -1;
  }
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && t->is_read_only()) {
    PyErr_SetString(PyExc_BufferError, "buffer protocol: the tensor is read-only but a writable buffer was requested");
    return -1;
  }
  auto* shape = new ExportedShape;
  for (int d = 0; d < t->ndim(); ++d) {
    shape->shape[d] = t->sizes()[d];
    // Only a dim of size <= 1 can have a stride whose byte count overflows (the view fits its storage),
    // and its stride is never used: export 0 rather than a wrapped (undefined) product.
    int64_t bytes = 0;
    shape->strides[d] = __builtin_mul_overflow(t->strides()[d], t->itemsize(), &bytes) ? 0 : bytes;
  }
  view->buf = t->data_ptr();
  view->obj = self;
  Py_INCREF(self);  // the exporter (and with it the storage) lives as long as the buffer
  view->len = t->nbytes();
  view->readonly = t->is_read_only() ? 1 : 0;
  view->itemsize = t->itemsize();
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(format) : nullptr;
  view->ndim = t->ndim();
  view->shape = shape->shape;
  view->strides = shape->strides;
  view->suboffsets = nullptr;
  view->internal = shape;
  if (!view->buf) view->buf = shape;  // size-0 tensors: a valid non-null pointer, never dereferenced
  if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !t->is_contiguous()) {
    delete shape;
    Py_DECREF(self);
    view->obj = nullptr;
    PyErr_SetString(PyExc_BufferError,
                    "buffer protocol: the tensor is not contiguous and the consumer did not ask "
                    "for strides; call .contiguous() first");
    return -1;
  }
  return 0;
}

void tensor_releasebuffer(PyObject*, Py_buffer* view) { delete static_cast<ExportedShape*>(view->internal); }

}  // namespace

Tensor from_buffer(nb::handle obj, nb::handle dtype_override) {
  auto* view = new Py_buffer;
  bool read_only = false;
  if (PyObject_GetBuffer(obj.ptr(), view, PyBUF_RECORDS) != 0) {
    PyErr_Clear();
    if (PyObject_GetBuffer(obj.ptr(), view, PyBUF_RECORDS_RO) != 0) {
      delete view;
      throw nb::python_error();
    }
    read_only = true;
  }
  read_only = read_only || view->readonly;
  // From here on the Py_buffer is released by the storage, or here on error.
  auto fail_with = [&](PyObject* type, const std::string& message) {
    PyBuffer_Release(view);
    delete view;
    if (type == PyExc_TypeError) throw nb::type_error(message.c_str());
    throw nb::value_error(message.c_str());
  };
  ScalarType dtype;
  if (!dtype_override.is_none()) {
    dtype = to_dtype(dtype_override, ScalarType::UInt8, "from_numpy()");
    if (itemsize(dtype) != view->itemsize)
      fail_with(PyExc_TypeError, "from_numpy(): the buffer's items have " + std::to_string(view->itemsize) +
                                     " bytes but " + name(dtype) + " needs " + std::to_string(itemsize(dtype)));
  } else if (!dtype_of_format(view->format, view->itemsize, &dtype)) {
    fail_with(PyExc_TypeError, std::string("from_numpy(): unsupported element format '") +
                                   (view->format ? view->format : "B") + "' of " + std::to_string(view->itemsize) +
                                   " bytes; supported: bool, (u)int8..64, float16/32/64, complex64/128, and "
                                   "bfloat16/float8 arrays of ml_dtypes");
  }
  const int n = view->ndim;
  if (n > kMaxDims)
    fail_with(PyExc_ValueError,
              "from_numpy(): at most " + std::to_string(kMaxDims) + " dims are supported but got " + std::to_string(n));
  int64_t sizes[kMaxDims], strides[kMaxDims];
  for (int d = 0; d < n; ++d) {
    sizes[d] = view->shape[d];
    const Py_ssize_t bytes = view->strides ? view->strides[d] : 0;
    if (bytes < 0)
      fail_with(PyExc_ValueError, "from_numpy(): stride[" + std::to_string(d) + "] is negative (" +
                                      std::to_string(bytes) +
                                      " bytes, e.g. from a[::-1]); slimtensor has no negative strides: pass a copy, "
                                      "np.ascontiguousarray(a)");
    if (bytes % view->itemsize != 0)
      fail_with(PyExc_ValueError, "from_numpy(): stride[" + std::to_string(d) + "] is " + std::to_string(bytes) +
                                      " bytes, not a multiple of the itemsize " + std::to_string(view->itemsize) +
                                      "; slimtensor strides count elements: pass a copy, np.ascontiguousarray(a)");
    strides[d] = bytes / view->itemsize;
  }
  if (!view->strides) contiguous_strides(sizes, n, strides);
  try {
    checked_numel(IntList(sizes, n), "from_numpy()");
    storage_bytes_needed(IntList(sizes, n), IntList(strides, n), 0, itemsize(dtype), "from_numpy()");
  } catch (const Error& e) {
    fail_with(PyExc_ValueError, e.what());
  }
  return from_blob(view->buf, IntList(sizes, n), IntList(strides, n), 0, dtype, kCPUDevice, release_python_buffer, view,
                   read_only, type_short_name(obj), "from_buffer");
}

PyType_Slot tensor_buffer_slots[] = {
    {Py_bf_getbuffer, reinterpret_cast<void*>(tensor_getbuffer)},
    {Py_bf_releasebuffer, reinterpret_cast<void*>(tensor_releasebuffer)},
    {0, nullptr},
};

void bind_buffer(nb::module_& m) {
  m.def("_from_buffer", &from_buffer, nb::arg("obj"), nb::arg("dtype") = nb::none(),
        "A tensor over the memory of any buffer-protocol exporter, without copying.");
}

}  // namespace slimtensor::python

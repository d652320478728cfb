// indexing.cpp: t[...] and t[...] = value with basic indexing (ints, slices, None, Ellipsis): views only.
#include <nanobind/stl/string.h>

#include <algorithm>
#include <string>

#include "common.h"
#include "layout/layout.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/copy/fill.h"

namespace slimtensor::python {
namespace {

[[noreturn]] void reject(PyObject* item) {
  const std::string type = nb::cast<std::string>(nb::str(nb::handle(item).type().attr("__name__")));
  throw nb::type_error(("__getitem__(): index of type " + type +
                        " is not supported; slimtensor supports basic "
                        "indexing (ints, slices with step >= 1, None, ...), which always returns a view. For "
                        "gathers, go through numpy: st.asarray(t.numpy()[index])")
                           .c_str());
}

bool is_int_index(PyObject* item) { return PyLong_Check(item) || (PyIndex_Check(item) && !PyBool_Check(item)); }

Tensor index(const Tensor& self, nb::handle key) {
  PyObject* k = key.ptr();
  PyObject* single[1] = {k};
  PyObject** items = single;
  Py_ssize_t count = 1;
  if (PyTuple_Check(k)) {
    items = &PyTuple_GET_ITEM(k, 0);
    count = PyTuple_GET_SIZE(k);
  }
  // Dims the key consumes: ints and slices; an Ellipsis stands for the rest.
  int64_t consumed = 0;
  bool ellipsis = false;
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* item = items[i];
    if (item == Py_Ellipsis) {
      ST_CHECK(!ellipsis, Index, "__getitem__(): an index can only have a single ellipsis ('...')");
      ellipsis = true;
    } else if (item != Py_None) {
      if (PyBool_Check(item)) reject(item);
      if (PySlice_Check(item) || is_int_index(item)) {
        ++consumed;
      } else {
        reject(item);
      }
    }
  }
  ST_CHECK(consumed <= self.ndim(), Index, "__getitem__(): too many indices for tensor of dimension ", self.ndim(),
           " (got ", consumed, ")");
  // Apply every item to one set of dims and an offset, then make a single view (Note [Hot paths]).
  int64_t sizes[64], strides[64];
  int n = self.ndim();
  std::copy(self.sizes(), self.sizes() + n, sizes);
  std::copy(self.strides(), self.strides() + n, strides);
  int64_t offset = self.storage_offset();
  int64_t dim = 0;
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* item = items[i];
    if (item == Py_Ellipsis) {
      dim += self.ndim() - consumed;
    } else if (item == Py_None) {
      ST_CHECK(n < 64, Index, "__getitem__(): at most 64 dims are supported");
      // PyTorch's unsqueeze stride: size * stride of the dim that follows, 1 at the end.
      const int64_t stride = dim < n ? sizes[dim] * strides[dim] : 1;
      std::copy_backward(sizes + dim, sizes + n, sizes + n + 1);
      std::copy_backward(strides + dim, strides + n, strides + n + 1);
      sizes[dim] = 1;
      strides[dim] = stride;
      ++n;
      ++dim;
    } else if (PySlice_Check(item)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(item, &start, &stop, &step) < 0) throw nb::python_error();
      ST_CHECK(step > 0, Value, "__getitem__(): slice step must be positive but got ", static_cast<int64_t>(step),
               "; negative steps would need negative strides, which slimtensor rejects (make a copy with "
               "st.asarray(t.numpy()[::-1]) instead)");
      // PySlice_AdjustIndices clamps to the dim exactly as Python sequences do.
      const Py_ssize_t length = PySlice_AdjustIndices(static_cast<Py_ssize_t>(sizes[dim]), &start, &stop, step);
      offset = offset_at(offset, start, strides[dim]);
      sizes[dim] = length;
      ST_CHECK(!__builtin_mul_overflow(strides[dim], step, &strides[dim]), Value,
               "__getitem__(): stride * step overflows int64");
      ++dim;
    } else {
      const long long v = PyLong_AsLongLong(item);
      if (v == -1 && PyErr_Occurred()) throw nb::python_error();
      const int64_t size = sizes[dim];
      ST_CHECK(v >= -size && v < size, Index, "__getitem__(): index ", v, " is out of bounds for dimension ", dim,
               " with size ", size);
      offset += (v < 0 ? v + size : v) * strides[dim];
      std::copy(sizes + dim + 1, sizes + n, sizes + dim);
      std::copy(strides + dim + 1, strides + n, strides + dim);
      --n;
    }
  }
  return Tensor::make(self.storage(), IntList(sizes, n), IntList(strides, n), offset, self.dtype(), "index");
}

}  // namespace

void bind_indexing(nb::class_<Tensor>& cls) {
  cls.def(
      "__getitem__", [](const Tensor& t, nb::handle key) { return index(t, key); }, nb::arg("key").none(),
      nb::sig("def __getitem__(self, key: IndexKey, /) -> Tensor"));
  cls.def(
      "__setitem__",
      [](const Tensor& t, nb::handle key, nb::handle value) {
        const Tensor target = index(t, key);
        if (Tensor* src; nb::try_cast<Tensor*>(value, src) && src) {
          copy_(target, *src);
          return;
        }
        PyObject* v = value.ptr();
        if (PyBool_Check(v) || PyLong_Check(v) || PyFloat_Check(v) || PyComplex_Check(v)) {
          fill_(target, to_scalar(value, "__setitem__()"));
          return;
        }
        // Anything array-like: convert (a copy) and copy in, broadcasting.
        nb::object converted = nb::module_::import_("slimtensor").attr("asarray")(value);
        copy_(target, nb::cast<const Tensor&>(converted));
      },
      nb::arg("key").none(), nb::arg("value").none(),
      nb::sig("def __setitem__(self, key: IndexKey, value: Tensor | bool | int | float | complex | typing.Any, /) "
              "-> None"));
}

}  // namespace slimtensor::python

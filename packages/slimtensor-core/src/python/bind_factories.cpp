// bind_factories.cpp: empty, empty_strided, zeros, ones, full, empty_like, from_blob.
#include <nanobind/stl/string.h>

#include "common.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/fill.h"
#include "slimtensor/tensor/factories.h"

namespace slimtensor::python {
namespace {

constexpr ScalarType kDefaultFloat = ScalarType::Float32;

struct Shape {
  int64_t v[kMaxDims];
  int64_t n;
};

Shape shape_arg(nb::handle obj, const char* function) {
  Shape s;
  s.n = to_int_list(obj, s.v, kMaxDims, function);
  return s;
}

Tensor filled(nb::args size, const Scalar& value, nb::handle dtype, nb::handle device, const char* function) {
  const Shape s = shape_arg(size, function);
  const ScalarType t = to_dtype(dtype, kDefaultFloat, function);
  Tensor out = empty(IntList(s.v, s.n), t, to_device(device, function), function);
  if (out.nbytes() >= (1 << 16)) {
    nb::gil_scoped_release release;
    fill_(out, value);
  } else {
    fill_(out, value);
  }
  return out;
}

// torch's dtype for full() without dtype: from the fill value's Python type.
ScalarType inferred_dtype(const Scalar& s) {
  switch (s.kind) {
    case Scalar::Kind::Bool: return ScalarType::Bool;
    case Scalar::Kind::Int: return ScalarType::Int64;
    case Scalar::Kind::Float: return kDefaultFloat;
    default: return ScalarType::Complex64;
  }
}

}  // namespace

void bind_factories(nb::module_& m) {
  m.def(
      "empty",
      [](nb::args size, nb::handle dtype, nb::handle device) {
        const Shape s = shape_arg(size, "empty()");
        return empty(IntList(s.v, s.n), to_dtype(dtype, kDefaultFloat, "empty()"), to_device(device, "empty()"));
      },
      nb::arg("size"), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
      nb::sig("def empty(*size: int | typing.Sequence[int], dtype: DTypeLike | None = None, "
              "device: DeviceLike | None = None) -> Tensor"),
      "An uninitialized contiguous tensor: empty(2, 3) or empty((2, 3)).");
  m.def(
      "zeros",
      [](nb::args size, nb::handle dtype, nb::handle device) {
        return filled(size, Scalar::from_int(0), dtype, device, "zeros()");
      },
      nb::arg("size"), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
      nb::sig("def zeros(*size: int | typing.Sequence[int], dtype: DTypeLike | None = None, "
              "device: DeviceLike | None = None) -> Tensor"));
  m.def(
      "ones",
      [](nb::args size, nb::handle dtype, nb::handle device) {
        return filled(size, Scalar::from_int(1), dtype, device, "ones()");
      },
      nb::arg("size"), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
      nb::sig("def ones(*size: int | typing.Sequence[int], dtype: DTypeLike | None = None, "
              "device: DeviceLike | None = None) -> Tensor"));
  m.def(
      "full",
      [](nb::handle size, nb::handle value, nb::handle dtype, nb::handle device) {
        const Scalar s = to_scalar(value, "full()");
        const Shape shape = shape_arg(size, "full()");
        const ScalarType t = to_dtype(dtype, inferred_dtype(s), "full()");
        Tensor out = empty(IntList(shape.v, shape.n), t, to_device(device, "full()"), "full()");
        nb::gil_scoped_release release;
        fill_(out, s);
        return out;
      },
      nb::arg("size"), nb::arg("fill_value"), nb::kw_only(), nb::arg("dtype") = nb::none(),
      nb::arg("device") = nb::none(),
      nb::sig("def full(size: int | typing.Sequence[int], fill_value: bool | int | float | complex, *, "
              "dtype: DTypeLike | None = None, device: DeviceLike | None = None) -> Tensor"));
  m.def(
      "empty_strided",
      [](nb::handle size, nb::handle stride, nb::handle dtype, nb::handle device) {
        const Shape s = shape_arg(size, "empty_strided()");
        const Shape st = shape_arg(stride, "empty_strided()");
        ST_CHECK(s.n == st.n, Value, "empty_strided(): sizes have ", s.n, " dims but strides have ", st.n,
                 "; give one stride per dim");
        return empty_strided(IntList(s.v, s.n), IntList(st.v, st.n), to_dtype(dtype, kDefaultFloat, "empty_strided()"),
                             to_device(device, "empty_strided()"));
      },
      nb::arg("size"), nb::arg("stride"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
      nb::sig("def empty_strided(size: typing.Sequence[int], stride: typing.Sequence[int], *, "
              "dtype: DTypeLike | None = None, device: DeviceLike | None = None) -> Tensor"));
  m.def(
      "empty_like",
      [](const Tensor& other, nb::handle dtype, nb::handle device) {
        const Device d = device.is_none() ? other.device() : to_device(device, "empty_like()");
        return empty_like(other, to_dtype(dtype, other.dtype(), "empty_like()"), d);
      },
      nb::arg("other"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
      nb::sig("def empty_like(other: Tensor, *, dtype: DTypeLike | None = None, device: DeviceLike | None = None) "
              "-> Tensor"));
  m.def(
      "from_blob",
      [](uintptr_t ptr, nb::handle shape, nb::handle strides, nb::handle dtype, nb::handle device,
         int64_t storage_offset, nb::handle owner, bool read_only) {
        const Shape s = shape_arg(shape, "from_blob()");
        Shape st;
        if (strides.is_none()) {
          st.n = s.n;
          contiguous_strides(s.v, static_cast<int>(s.n), st.v);
        } else {
          st = shape_arg(strides, "from_blob()");
        }
        ST_CHECK(s.n == st.n, Value, "from_blob(): shape has ", s.n, " dims but strides have ", st.n,
                 "; give one stride per dim");
        PyObject* context = owner.is_none() ? nullptr : owner.ptr();
        Py_XINCREF(context);  // released by the storage's deleter (Note [Storage ownership])
        const char* owner_name = context ? type_short_name(owner) : "from_blob";
        try {
          return from_blob(reinterpret_cast<void*>(ptr), IntList(s.v, s.n), IntList(st.v, st.n), storage_offset,
                           to_dtype(dtype, kDefaultFloat, "from_blob()"), to_device(device, "from_blob()"),
                           context ? release_python_owner : nullptr, context, read_only, owner_name);
        } catch (...) {
          Py_XDECREF(context);
          throw;
        }
      },
      nb::arg("ptr"), nb::arg("shape"), nb::arg("strides") = nb::none(), nb::arg("dtype") = nb::none(),
      nb::arg("device") = nb::none(), nb::arg("storage_offset") = 0, nb::arg("owner") = nb::none(),
      nb::arg("read_only") = false,
      nb::sig("def from_blob(ptr: int, shape: typing.Sequence[int], strides: typing.Sequence[int] | None = None, "
              "dtype: DTypeLike | None = None, device: DeviceLike | None = None, storage_offset: int = 0, "
              "owner: object | None = None, read_only: bool = False) -> Tensor"),
      "A tensor over memory slimtensor does not own. `ptr` is the storage base; the view starts storage_offset "
      "elements after it. `owner` is kept alive until the last tensor over the memory is gone.");
}

}  // namespace slimtensor::python

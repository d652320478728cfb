// bind_factories.cpp: empty, empty_strided, zeros, ones, full, empty_like, from_blob.
#include <nanobind/stl/string.h>

#include "common.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/fill.h"
#include "slimtensor/runtime/device_memory.h"
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

// empty() / empty_strided() (strides null: contiguous), or over pinned host memory when pin_memory is set
// (Note [Pinned memory] in runtime/device_memory.h), which is host memory: the device must be the CPU.
Tensor make_empty(const Shape& s, const Shape* strides, ScalarType t, nb::handle device, bool pin_memory,
                  const char* function) {
  const Device d = to_device(device, function);
  if (!pin_memory) {
    return strides ? empty_strided(IntList(s.v, s.n), IntList(strides->v, strides->n), t, d, function)
                   : empty(IntList(s.v, s.n), t, d, function);
  }
  ST_CHECK(d.is_cpu(), Value, function,
           ": pin_memory=True makes pinned host memory, so the device must be the CPU "
           "but got ",
           device_string(d), "; leave device out, or drop pin_memory");
  Shape contiguous;
  if (!strides) {
    contiguous.n = s.n;
    contiguous_strides(s.v, static_cast<int>(s.n), contiguous.v);
    strides = &contiguous;
  }
  return device_memory::empty_pinned(IntList(s.v, s.n), IntList(strides->v, strides->n), t,
                                     device_memory::pinning_device(kCPU, function), function);
}

Tensor filled(nb::args size, const Scalar& value, nb::handle dtype, nb::handle device, bool pin_memory,
              const char* function) {
  const Shape s = shape_arg(size, function);
  const ScalarType t = to_dtype(dtype, kDefaultFloat, function);
  Tensor out = make_empty(s, nullptr, t, device, pin_memory, function);
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
      [](nb::args size, nb::handle dtype, nb::handle device, bool pin_memory) {
        const Shape s = shape_arg(size, "empty()");
        return make_empty(s, nullptr, to_dtype(dtype, kDefaultFloat, "empty()"), device, pin_memory, "empty()");
      },
      nb::arg("size"), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(), nb::arg("pin_memory") = false,
      nb::sig("def empty(*size: int | typing.Sequence[int], dtype: DTypeLike | None = None, "
              "device: DeviceLike | None = None, pin_memory: bool = False) -> Tensor"),
      "An uninitialized contiguous tensor: empty(2, 3) or empty((2, 3)). pin_memory=True: in pinned host memory.");
  m.def(
      "zeros",
      [](nb::args size, nb::handle dtype, nb::handle device, bool pin_memory) {
        return filled(size, Scalar::from_int(0), dtype, device, pin_memory, "zeros()");
      },
      nb::arg("size"), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(), nb::arg("pin_memory") = false,
      nb::sig("def zeros(*size: int | typing.Sequence[int], dtype: DTypeLike | None = None, "
              "device: DeviceLike | None = None, pin_memory: bool = False) -> Tensor"));
  m.def(
      "ones",
      [](nb::args size, nb::handle dtype, nb::handle device, bool pin_memory) {
        return filled(size, Scalar::from_int(1), dtype, device, pin_memory, "ones()");
      },
      nb::arg("size"), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(), nb::arg("pin_memory") = false,
      nb::sig("def ones(*size: int | typing.Sequence[int], dtype: DTypeLike | None = None, "
              "device: DeviceLike | None = None, pin_memory: bool = False) -> Tensor"));
  m.def(
      "full",
      [](nb::handle size, nb::handle value, nb::handle dtype, nb::handle device, bool pin_memory) {
        const Scalar s = to_scalar(value, "full()");
        const Shape shape = shape_arg(size, "full()");
        const ScalarType t = to_dtype(dtype, inferred_dtype(s), "full()");
        Tensor out = make_empty(shape, nullptr, t, device, pin_memory, "full()");
        nb::gil_scoped_release release;
        fill_(out, s);
        return out;
      },
      nb::arg("size"), nb::arg("fill_value"), nb::kw_only(), nb::arg("dtype") = nb::none(),
      nb::arg("device") = nb::none(), nb::arg("pin_memory") = false,
      nb::sig("def full(size: int | typing.Sequence[int], fill_value: bool | int | float | complex, *, "
              "dtype: DTypeLike | None = None, device: DeviceLike | None = None, pin_memory: bool = False) "
              "-> Tensor"));
  m.def(
      "empty_strided",
      [](nb::handle size, nb::handle stride, nb::handle dtype, nb::handle device, bool pin_memory) {
        const Shape s = shape_arg(size, "empty_strided()");
        const Shape st = shape_arg(stride, "empty_strided()");
        ST_CHECK(s.n == st.n, Value, "empty_strided(): sizes have ", s.n, " dims but strides have ", st.n,
                 "; give one stride per dim");
        return make_empty(s, &st, to_dtype(dtype, kDefaultFloat, "empty_strided()"), device, pin_memory,
                          "empty_strided()");
      },
      nb::arg("size"), nb::arg("stride"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
      nb::arg("pin_memory") = false,
      nb::sig("def empty_strided(size: typing.Sequence[int], stride: typing.Sequence[int], *, "
              "dtype: DTypeLike | None = None, device: DeviceLike | None = None, pin_memory: bool = False) "
              "-> Tensor"));
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
          // On a plugin device, the plugin's locate_pointer checks the memory is that device's (and gives
          // "cuda" its index); the CPU and plugins that cannot tell trust the caller.
          const Device d = device_memory::check_device_pointer(to_device(device, "from_blob()"),
                                                               reinterpret_cast<const void*>(ptr), "from_blob()");
          return from_blob(reinterpret_cast<void*>(ptr), IntList(s.v, s.n), IntList(st.v, st.n), storage_offset,
                           to_dtype(dtype, kDefaultFloat, "from_blob()"), d, context ? release_python_owner : nullptr,
                           context, read_only, owner_name);
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

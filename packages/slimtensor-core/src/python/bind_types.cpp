// bind_types.cpp: the dtype and Device classes, and conversion of Python arguments to core values.
#include <nanobind/stl/string.h>

#include <string>

#include "common.h"
#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"

namespace slimtensor::python {
namespace {

// A dtype object is a ScalarType with Python properties; one instance per code, made at import.
struct DType {
  ScalarType type;
};

// Raw references, released by an atexit hook: a static nb::object would be destroyed after the
// interpreter, which crashes.
PyObject* g_dtypes[kNumScalarTypeCodes];

std::string device_repr(Device d) {
  const std::string s = device_string(d);
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return "device(type='" + s + "')";
  return "device(type='" + s.substr(0, colon) + "', index=" + s.substr(colon + 1) + ")";
}

}  // namespace

nb::object dtype_object(ScalarType t) { return nb::borrow(g_dtypes[static_cast<int>(t)]); }

ScalarType to_dtype(nb::handle obj, ScalarType fallback, const char* function) {
  if (obj.is_none()) return fallback;
  if (DType* d; nb::try_cast<DType*>(obj, d) && d) return d->type;
  if (nb::isinstance<nb::str>(obj)) return scalar_type_from_name(nb::borrow<nb::str>(obj).c_str(), function);
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return ScalarType::Bool;
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return ScalarType::Int64;
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return ScalarType::Float64;
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyComplex_Type)) return ScalarType::Complex128;
  // numpy dtypes and scalar types (ml_dtypes' bfloat16 included) and torch dtypes, by name.
  nb::object numpy = nb::module_::import_("numpy");
  try {
    nb::object name = numpy.attr("dtype")(obj).attr("name");
    return scalar_type_from_name(nb::cast<std::string>(name), function);
  } catch (const nb::python_error&) {}
  return scalar_type_from_name(nb::cast<std::string>(nb::str(obj)), function);
}

Device to_device(nb::handle obj, const char* function) {
  if (obj.is_none()) return kCPUDevice;
  if (Device* d; nb::try_cast<Device*>(obj, d) && d) return *d;
  if (nb::isinstance<nb::str>(obj)) return parse_device(nb::borrow<nb::str>(obj).c_str(), function);
  throw nb::type_error((std::string(function) +
                        ": device must be a slimtensor.Device or a string like 'cpu' or "
                        "'cuda:1' but got " +
                        nb::cast<std::string>(nb::str(obj.type().attr("__name__"))))
                           .c_str());
}

int64_t to_int_list(nb::handle obj, int64_t* out, int64_t capacity, const char* function) {
  PyObject* o = obj.ptr();
  if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 1) {
    PyObject* only = PyTuple_GET_ITEM(o, 0);
    if (PyTuple_Check(only) || PyList_Check(only)) o = only;
  }
  if (!PyTuple_Check(o) && !PyList_Check(o)) {
    if (PyLong_Check(o) || PyIndex_Check(o)) {
      const long long v = PyLong_AsLongLong(o);
      if (v == -1 && PyErr_Occurred()) throw nb::python_error();
      out[0] = v;
      return 1;
    }
    throw nb::type_error((std::string(function) + ": expected a sequence of ints but got " +
                          nb::cast<std::string>(nb::str(nb::handle(o).type().attr("__name__"))))
                             .c_str());
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  if (n > capacity) {
    throw nb::value_error((std::string(function) + ": at most " + std::to_string(capacity) +
                           " dims are supported but got " + std::to_string(n))
                              .c_str());
  }
  PyObject** items = PySequence_Fast_ITEMS(o);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = items[i];
    long long v;
    if (PyLong_CheckExact(item)) {
      v = PyLong_AsLongLong(item);
    } else if (PyIndex_Check(item) && !PyBool_Check(item)) {
      PyObject* index = PyNumber_Index(item);
      if (!index) throw nb::python_error();
      v = PyLong_AsLongLong(index);
      Py_DECREF(index);
    } else {
      throw nb::type_error((std::string(function) + ": expected ints but element " + std::to_string(i) + " is " +
                            nb::cast<std::string>(nb::str(nb::handle(item).type().attr("__name__"))))
                               .c_str());
    }
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      throw nb::value_error(
          (std::string(function) + ": element " + std::to_string(i) + " does not fit in int64").c_str());
    }
    out[i] = v;
  }
  return n;
}

Scalar to_scalar(nb::handle obj, const char* function) {
  PyObject* o = obj.ptr();
  if (PyBool_Check(o)) return Scalar::from_bool(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(o);
      if (PyErr_Occurred()) {
        PyErr_Clear();
        throw nb::value_error((std::string(function) + ": the integer does not fit in 64 bits").c_str());
      }
      Scalar s = Scalar::from_int(static_cast<int64_t>(u));
      s.d = static_cast<double>(u);
      return s;
    }
    if (overflow < 0) throw nb::value_error((std::string(function) + ": the integer does not fit in int64").c_str());
    return Scalar::from_int(v);
  }
  if (PyFloat_Check(o)) return Scalar::from_double(PyFloat_AS_DOUBLE(o));
  if (PyComplex_Check(o)) return Scalar::from_complex(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o));
  // numpy scalars and 0-d arrays: integers by __index__, the rest by __complex__/__float__.
  if (PyIndex_Check(o)) {
    nb::object index = nb::steal(PyNumber_Index(o));
    if (index.is_valid()) return to_scalar(index, function);
    // Its __index__ raised: a one-element numpy array (whose __index__ only 0-d arrays have) is its item;
    // anything else (an array of several elements, any object) is an error that says what was expected.
    nb::python_error raised;
    long long elements = -1;
    if (PyObject* size = PyObject_GetAttrString(o, "size")) {
      if (PyLong_Check(size)) elements = PyLong_AsLongLong(size);
      Py_DECREF(size);
    }
    PyErr_Clear();
    if (elements == 1 && PyObject_HasAttrString(o, "item")) {
      nb::object item = nb::steal(PyObject_CallMethod(o, "item", nullptr));
      if (!item.is_valid()) throw nb::python_error();
      if (PyLong_Check(item.ptr()) || !PyIndex_Check(item.ptr())) return to_scalar(item, function);
    }
    std::string why = Py_TYPE(raised.value().ptr())->tp_name;
    if (PyObject* text = PyObject_Str(raised.value().ptr())) {
      if (const char* c = PyUnicode_AsUTF8(text)) why += std::string(": ") + c;
      Py_DECREF(text);
    }
    PyErr_Clear();
    std::string what = Py_TYPE(o)->tp_name;
    if (elements >= 0) what += " of " + std::to_string(elements) + " elements";
    throw nb::type_error((std::string(function) +
                          ": expected a number (bool, int, float, complex or a one-element "
                          "array) but got " +
                          what + ", whose __index__ raised " + why + "; pass a single value, e.g. a.item()")
                             .c_str());
  }
  if (PyObject_HasAttrString(o, "dtype")) {
    nb::object kind = nb::handle(o).attr("dtype").attr("kind");
    const std::string k = nb::cast<std::string>(kind);
    if (k == "b") return Scalar::from_bool(PyObject_IsTrue(o) == 1);
    if (k == "c")
      return Scalar::from_complex(nb::cast<double>(nb::handle(o).attr("real")),
                                  nb::cast<double>(nb::handle(o).attr("imag")));
  }
  const double d = PyFloat_AsDouble(o);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw nb::type_error((std::string(function) + ": expected a number (bool, int, float, complex) but got " +
                          nb::cast<std::string>(nb::str(obj.type().attr("__name__"))))
                             .c_str());
  }
  return Scalar::from_double(d);
}

int64_t to_int64(nb::handle obj, const char* function, const char* what) {
  PyObject* o = obj.ptr();
  if (PyBool_Check(o) || !(PyLong_Check(o) || PyIndex_Check(o))) {
    throw nb::type_error((std::string(function) + ": " + what + " must be an int but got " +
                          nb::cast<std::string>(nb::str(obj.type().attr("__name__"))))
                             .c_str());
  }
  nb::object index = nb::steal(PyNumber_Index(o));
  if (!index.is_valid()) throw nb::python_error();
  const long long v = PyLong_AsLongLong(index.ptr());
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    throw nb::value_error((std::string(function) + ": " + what + " does not fit in int64").c_str());
  }
  return v;
}

nb::object scalar_to_python(const Scalar& s, ScalarType t) {
  switch (s.kind) {
    case Scalar::Kind::Bool: return nb::bool_(s.i != 0);
    case Scalar::Kind::Int:
      if (t == ScalarType::UInt64) return nb::steal(PyLong_FromUnsignedLongLong(static_cast<uint64_t>(s.i)));
      return nb::steal(PyLong_FromLongLong(s.i));
    case Scalar::Kind::Float: return nb::steal(PyFloat_FromDouble(s.d));
    default: return nb::steal(PyComplex_FromDoubles(s.d, s.imag));
  }
}

void bind_types(nb::module_& m) {
  nb::class_<DType>(m, "dtype", "An element type: c10's code, torch's name and the size of one element.")
      .def_prop_ro(
          "code", [](const DType& d) { return static_cast<int>(d.type); }, "c10 ScalarType code")
      .def_prop_ro("name", [](const DType& d) { return std::string(name(d.type)); })
      .def_prop_ro(
          "itemsize", [](const DType& d) { return itemsize(d.type); }, "bytes per element")
      .def_prop_ro("is_floating_point", [](const DType& d) { return info(d.type).is_floating; })
      .def_prop_ro("is_complex", [](const DType& d) { return info(d.type).is_complex; })
      .def_prop_ro("is_signed", [](const DType& d) { return info(d.type).is_signed; })
      .def("__repr__", [](const DType& d) { return "slimtensor." + std::string(name(d.type)); })
      .def("__reduce__",
           [](const DType& d) {
             return nb::make_tuple(nb::module_::import_("slimtensor._dtypes").attr("dtype_from_code"),
                                   nb::make_tuple(static_cast<int>(d.type)));
           })
      .def("__hash__", [](const DType& d) { return static_cast<int>(d.type); })
      .def("__eq__", [](const DType& a, nb::handle b) {
        DType* other = nullptr;
        return nb::try_cast<DType*>(b, other) && other && other->type == a.type;
      });
  for (int code = 0; code < kNumScalarTypeCodes; ++code) {
    const ScalarTypeInfo* i = scalar_type_info(code);
    if (!i->is_tensor_dtype) continue;
    g_dtypes[code] = nb::cast(DType{static_cast<ScalarType>(code)}).release().ptr();
  }
  // By name in slimtensor/_dtypes.py (not here: names like `bool` would shadow builtins in the stubs).
  m.def(
      "_dtype_table",
      []() {
        nb::dict table;
        for (int code = 0; code < kNumScalarTypeCodes; ++code)
          if (g_dtypes[code]) table[scalar_type_info(code)->name] = nb::borrow(g_dtypes[code]);
        return table;
      },
      nb::sig("def _dtype_table() -> dict[str, dtype]"));
  m.def(
      "_dtype_by_code", [](int code) { return dtype_object(scalar_type_from_code(code, "dtype")); },
      nb::sig("def _dtype_by_code(code: int) -> dtype"));
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([]() {
    for (PyObject*& p : g_dtypes) Py_CLEAR(p);
  }));

  nb::class_<Device>(m, "Device", "A device: a type ('cpu', 'cuda', a plugin's name) and an index.")
      .def(
          "__init__",
          [](Device* self, nb::handle spec, nb::handle index) {
            Device d = to_device(spec, "Device()");
            if (!index.is_none()) {
              const long long i = nb::cast<long long>(index);
              ST_CHECK(i >= 0 && i <= 9999, Value, "Device(): index must be in [0, 9999] but got ", i);
              ST_CHECK(d.type != kCPU || i == 0, Value, "Device(): the CPU has only index 0 but got ", i);
              d.index = static_cast<int16_t>(i);
            }
            new (self) Device(d);
          },
          nb::arg("type"), nb::arg("index") = nb::none(),
          nb::sig("def __init__(self, type: str | Device, index: int | None = None) -> None"))
      .def_prop_ro("type",
                   [](const Device& d) {
                     const std::string s = device_string(Device{d.type, -1});
                     return s;
                   })
      .def_prop_ro(
          "index",
          [](const Device& d) -> nb::object {
            if (d.index < 0) return nb::none();
            return nb::int_(d.index);
          },
          nb::for_getter(nb::sig("def index(self, /) -> int | None")))
      .def_prop_ro(
          "code", [](const Device& d) { return static_cast<int>(d.type); }, "c10 DeviceType code")
      .def("__str__", [](const Device& d) { return device_string(d); })
      .def("__repr__", [](const Device& d) { return device_repr(d); })
      .def("__hash__", [](const Device& d) { return (static_cast<int>(d.type) << 16) | (d.index & 0xFFFF); })
      .def("__eq__",
           [](const Device& a, nb::handle b) {
             if (Device* other; nb::try_cast<Device*>(b, other) && other) return a == *other;
             if (nb::isinstance<nb::str>(b)) {
               try {
                 return a == parse_device(nb::borrow<nb::str>(b).c_str());
               } catch (const Error&) {
                 return false;
               }
             }
             return false;
           })
      .def("__reduce__", [](const Device& d) {
        return nb::make_tuple(nb::module_::import_("slimtensor").attr("Device"), nb::make_tuple(device_string(d)));
      });
}

}  // namespace slimtensor::python

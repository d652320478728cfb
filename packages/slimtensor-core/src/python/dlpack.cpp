// dlpack.cpp: DLPack for Python: Tensor.__dlpack__/__dlpack_device__ and from_dlpack, as capsules around the
// core's one codec (Note [DLPack codec] in src/dlpack/codec.h).
//
// Note [DLPack capsules]
// A capsule is named "dltensor_versioned" (DLManagedTensorVersioned, asked for with max_version >= (1, 0))
// or "dltensor" (legacy DLManagedTensor). Its destructor calls the deleter of a capsule nobody consumed;
// a consumer renames it "used_dltensor(_versioned)" and from then on owns the deleter call. from_dlpack
// renames a capsule only once the tensor exists: a refused capsule still belongs to its producer.
//
// Note [Legacy capsules and read-only]
// A legacy capsule cannot say read-only. As numpy does: exporting a read-only tensor as a legacy capsule
// raises BufferError, and a legacy capsule is imported read-only unless its producer is known to hand out
// writable memory: slimtensor's own exports, numpy arrays whose writeable flag is set, torch tensors.
// (jax arrays are immutable and export legacy capsules: they import read-only.)
//
// Note [numpy and bfloat16]
// numpy has no bfloat16 (or float8) dtype, and np.from_dlpack refuses such a capsule with its own
// "Unsupported dtype in DLTensor", which says nothing about what works. np.from_dlpack calls
// __dlpack__(dl_device=..., copy=..., max_version=...) with exactly those keywords, in that order; no other
// known consumer passes that set (torch passes max_version alone, stream-aware consumers pass stream). For
// that call and a dtype numpy cannot hold, __dlpack__ raises a BufferError that names what works:
// t.numpy() and np.asarray(t) (ml_dtypes' bfloat16). Any other consumer gets the capsule.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <string>
#include <utility>

#include "common.h"
#include "dlpack/codec.h"
#include "dlpack/streams.h"
#include "dlpack/types.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/clone.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/runtime/device_registry.h"

namespace slimtensor::python {
namespace {

using dlpack::DLManagedTensor;
using dlpack::DLManagedTensorVersioned;

constexpr const char* kLegacyName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kUsedLegacyName = "used_dltensor";
constexpr const char* kUsedVersionedName = "used_dltensor_versioned";

[[noreturn]] void raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

std::string py_type_name(nb::handle obj) { return nb::cast<std::string>(nb::str(obj.type().attr("__name__"))); }

// ---- export ------------------------------------------------------------------------------------------

// A capsule nobody consumed still owns its managed tensor.
void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kVersionedName)) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
    if (m && m->deleter) m->deleter(m);
  } else if (PyCapsule_IsValid(capsule, kLegacyName)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
    if (m && m->deleter) m->deleter(m);
  }
}

template <class Managed>
nb::object capsule_of(Managed* m, const char* name) {
  PyObject* capsule = PyCapsule_New(m, name, capsule_destructor);
  if (!capsule) {
    m->deleter(m);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

struct ExportArgs {
  bool has_stream = false;
  int64_t stream = 0;
  nb::handle max_version, dl_device, copy;
  bool numpy_call = false;  // the keywords np.from_dlpack passes (Note [numpy and bfloat16])
};

ExportArgs parse_export_args(const nb::args& args, const nb::kwargs& kwargs) {
  if (args.size() != 0) {
    throw nb::type_error("__dlpack__() takes keyword arguments only: stream=, max_version=, dl_device=, copy=");
  }
  ExportArgs a;
  std::string keys;
  for (auto [key, value] : kwargs) {
    const std::string k = nb::cast<std::string>(key);
    keys += k + ",";
    if (k == "stream") {
      if (!value.is_none()) {
        a.has_stream = true;
        a.stream = to_int64(value, "__dlpack__()", "stream");
      }
    } else if (k == "max_version") {
      a.max_version = value;
    } else if (k == "dl_device") {
      a.dl_device = value;
    } else if (k == "copy") {
      a.copy = value;
    } else {
      // TypeError: consumers retry without keywords on it, as for producers older than DLPack 1.0.
      throw nb::type_error(("__dlpack__() got an unexpected keyword argument '" + k + "'").c_str());
    }
  }
  a.numpy_call = keys == "dl_device,copy,max_version,";
  return a;
}

bool numpy_has_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::BFloat16:
    case ScalarType::Float8_e4m3fn:
    case ScalarType::Float8_e4m3fnuz:
    case ScalarType::Float8_e5m2:
    case ScalarType::Float8_e5m2fnuz:
    case ScalarType::Float8_e8m0fnu: return false;
    default: return true;
  }
}

nb::object export_dlpack(const Tensor& self, nb::args args, nb::kwargs kwargs) {
  const ExportArgs a = parse_export_args(args, kwargs);
  Tensor t = self;
  const int32_t our_type = dlpack::dl_device_type(t.device());
  if (our_type == 0) {
    raise(PyExc_BufferError,
          "__dlpack__(): device " + device_string(t.device()) +
              " has no DLPack device code (its plugin declares none); copy it to the CPU first (t.cpu())");
  }
  const bool copy_true = a.copy.is_valid() && a.copy.ptr() == Py_True;
  const bool copy_false = a.copy.is_valid() && a.copy.ptr() == Py_False;
  if (a.copy.is_valid() && !a.copy.is_none() && !copy_true && !copy_false) {
    throw nb::type_error(("__dlpack__(): copy must be None, True or False but got " + py_type_name(a.copy)).c_str());
  }
  bool copied = false;
  if (a.dl_device.is_valid() && !a.dl_device.is_none()) {
    std::pair<int32_t, int32_t> want;
    if (!nb::try_cast(a.dl_device, want)) {
      throw nb::type_error(("__dlpack__(): dl_device must be a (device_type, device_id) tuple of ints but got " +
                            py_type_name(a.dl_device))
                               .c_str());
    }
    if (want.first != our_type || (want.first != dlpack::kDLCPU && want.second != t.device().index)) {
      if (want.first != dlpack::kDLCPU || copy_false) {
        raise(PyExc_BufferError, "__dlpack__(): cannot export a tensor on " + device_string(t.device()) +
                                     " to dl_device (" + std::to_string(want.first) + ", " +
                                     std::to_string(want.second) + ")" + (copy_false ? " with copy=False" : "") +
                                     "; move it first with t.to(...)");
      }
      dlpack::order_export(t.device(), a.has_stream, a.stream, "__dlpack__");
      t = to(t, kCPUDevice, t.dtype(), true);
      copied = true;
    }
  }
  if (!copied) dlpack::order_export(t.device(), a.has_stream, a.stream, "__dlpack__");
  if (!copied && copy_true) {
    t = clone(t, MemoryFormat::Preserve);
    copied = true;
  }
  if (a.numpy_call && !numpy_has_dtype(t.dtype())) {
    raise(PyExc_BufferError, std::string("__dlpack__(): numpy has no ") + name(t.dtype()) +
                                 " dtype, so np.from_dlpack() cannot take this tensor; use t.numpy() or "
                                 "np.asarray(t), which give an ml_dtypes." +
                                 name(t.dtype()) + " array sharing the memory");
  }
  bool versioned = false;
  if (a.max_version.is_valid() && !a.max_version.is_none()) {
    std::pair<int, int> v;
    if (!nb::try_cast(a.max_version, v)) {
      throw nb::type_error(
          ("__dlpack__(): max_version must be a (major, minor) tuple of ints but got " + py_type_name(a.max_version))
              .c_str());
    }
    versioned = v.first >= 1;
  }
  if (versioned) {
    return capsule_of(
        dlpack::encode_versioned(std::move(t), copied ? dlpack::kDLPackFlagBitmaskIsCopied : 0, "__dlpack__"),
        kVersionedName);
  }
  if (t.is_read_only()) {
    // Note [Legacy capsules and read-only]. The consumer chose the legacy protocol, not the user: say what
    // the user can do.
    raise(PyExc_BufferError,
          "__dlpack__(): the tensor is read-only, and this consumer asked for a legacy (unversioned) DLPack "
          "capsule, which cannot say read-only (the consumer could write it); give it a writable copy, "
          "t.clone(), or for numpy take a read-only view with np.asarray(t)");
  }
  return capsule_of(dlpack::encode_legacy(std::move(t), "__dlpack__"), kLegacyName);
}

// ---- import ------------------------------------------------------------------------------------------

// The storage deleter of an imported capsule: calls the producer's deleter with the GIL held (a deleter
// may touch Python objects); at interpreter shutdown it leaks instead (Note in py_owner.cpp).
template <class Managed>
void release_managed(void*, void* context) {
  if (!python_alive()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  auto* m = static_cast<Managed*>(context);
  if (m->deleter) m->deleter(m);
  PyGILState_Release(state);
}

// Note [Legacy capsules and read-only]: producers known to export writable memory in legacy capsules.
bool known_writable_producer(nb::handle producer) {
  if (!producer.is_valid()) return false;
  if (nb::isinstance<Tensor>(producer)) return !nb::cast<const Tensor&>(producer).is_read_only();
  PyObject* mro = Py_TYPE(producer.ptr())->tp_mro;
  for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); ++i) {
    nb::handle type = PyTuple_GET_ITEM(mro, i);
    nb::object module = nb::getattr(type, "__module__", nb::none());
    nb::object qualname = nb::getattr(type, "__qualname__", nb::none());
    if (!nb::isinstance<nb::str>(module) || !nb::isinstance<nb::str>(qualname)) continue;
    const std::string m = nb::cast<std::string>(module), q = nb::cast<std::string>(qualname);
    if (m == "numpy" && q == "ndarray") {
      nb::object flags = nb::getattr(producer, "flags", nb::none());
      return !flags.is_none() && nb::cast<bool>(nb::getattr(flags, "writeable", nb::bool_(false)));
    }
    if (m == "torch" && q == "Tensor") return true;
  }
  return false;
}

const char* owner_name(nb::handle producer) { return producer.is_valid() ? type_short_name(producer) : "dlpack"; }

Tensor from_capsule(PyObject* capsule, nb::handle producer) {
  if (PyCapsule_IsValid(capsule, kVersionedName)) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
    dlpack::check_version(*m, "from_dlpack");
    Tensor t = dlpack::decode(m->dl_tensor, (m->flags & dlpack::kDLPackFlagBitmaskReadOnly) != 0,
                              release_managed<DLManagedTensorVersioned>, m, owner_name(producer), "from_dlpack");
    PyCapsule_SetName(capsule, kUsedVersionedName);  // consumed: the storage now owns the deleter call
    return t;
  }
  if (PyCapsule_IsValid(capsule, kLegacyName)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
    const bool writable = dlpack::is_own_export(m) || known_writable_producer(producer);
    Tensor t = dlpack::decode(m->dl_tensor, !writable, release_managed<DLManagedTensor>, m, owner_name(producer),
                              "from_dlpack");
    PyCapsule_SetName(capsule, kUsedLegacyName);
    return t;
  }
  const char* name = PyCapsule_GetName(capsule);
  if (!name) PyErr_Clear();
  const std::string n = name ? name : "";
  ST_CHECK(n != kUsedLegacyName && n != kUsedVersionedName, Value,
           "from_dlpack(): the DLPack capsule was already consumed; a capsule can be imported once: call "
           "__dlpack__() again for a new one");
  fail(ErrorKind::Type, "from_dlpack(): expected a capsule named 'dltensor' or 'dltensor_versioned' but got '", n, "'");
}

// Note [DLPack streams] on import: a producer on a device with DLPack streams is given our current stream
// of that device, so that it orders its work before ours. Asked only when such a device is registered.
bool producer_stream(nb::handle obj, int64_t* value) {
  if (!any_plugin_device() || !PyObject_HasAttrString(obj.ptr(), "__dlpack_device__")) return false;
  nb::object dev = nb::steal(PyObject_CallMethod(obj.ptr(), "__dlpack_device__", nullptr));
  std::pair<int32_t, int32_t> code;
  if (!dev.is_valid()) {
    PyErr_Clear();  // __dlpack__ will say what is wrong, if anything
    return false;
  }
  if (!nb::try_cast(dev, code) || code.first == dlpack::kDLCPU || code.first == dlpack::kDLCUDAHost) return false;
  try {
    return dlpack::consumer_stream(dlpack::from_dl_device({code.first, code.second}, "from_dlpack"), value);
  } catch (const Error&) {
    return false;  // a device no plugin declares: the import refuses it below, with the reason
  }
}

bool has_dlpack_method(nb::handle obj) { return PyObject_HasAttrString(obj.ptr(), "__dlpack__") == 1; }

Tensor from_dlpack(nb::handle obj) {
  if (PyCapsule_CheckExact(obj.ptr())) return from_capsule(obj.ptr(), nb::handle());
  // Deliberately never freed: static nb::objects would be destroyed after the interpreter.
  static PyObject* method_name = PyUnicode_InternFromString("__dlpack__");
  static PyObject* kwnames = Py_BuildValue("(s)", "max_version");
  static PyObject* version = Py_BuildValue("(ii)", 1, 1);
  static PyObject* stream_kwnames = Py_BuildValue("(ss)", "max_version", "stream");
  int64_t stream = 0;
  PyObject* capsule;
  if (producer_stream(obj, &stream)) {
    nb::object value = nb::int_(stream);
    PyObject* args[3] = {obj.ptr(), version, value.ptr()};
    capsule = PyObject_VectorcallMethod(method_name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, stream_kwnames);
  } else {
    PyObject* args[2] = {obj.ptr(), version};
    capsule = PyObject_VectorcallMethod(method_name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
  }
  if (!capsule) {
    if (PyErr_ExceptionMatches(PyExc_AttributeError) && !has_dlpack_method(obj)) {
      PyErr_Clear();
      // No DLPack: any buffer-protocol exporter (bytes, bytearray, memoryview, array.array), as nanobind's
      // ndarray casters accept.
      if (PyObject_CheckBuffer(obj.ptr())) return from_buffer(obj, nb::none());
      throw nb::type_error(("from_dlpack(): expected an object with __dlpack__, a DLPack capsule or a buffer "
                            "(bytes, bytearray, memoryview) but got " +
                            py_type_name(obj))
                               .c_str());
    }
    // Producers older than DLPack 1.0 reject max_version with TypeError: ask for a legacy capsule.
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
    PyErr_Clear();
    capsule = PyObject_CallMethodNoArgs(obj.ptr(), method_name);
    if (!capsule) throw nb::python_error();
  }
  nb::object owned = nb::steal(capsule);
  if (!PyCapsule_CheckExact(capsule)) {
    throw nb::type_error(("from_dlpack(): " + py_type_name(obj) + ".__dlpack__() returned " + py_type_name(owned) +
                          ", not a DLPack capsule; the producer (" + py_type_name(obj) +
                          ") is broken: __dlpack__ must return a PyCapsule named 'dltensor' or "
                          "'dltensor_versioned'")
                             .c_str());
  }
  return from_capsule(capsule, obj);
}

nb::tuple dlpack_device(const Tensor& t) {
  const int32_t code = dlpack::dl_device_type(t.device());
  if (code == 0) {
    raise(PyExc_BufferError, "__dlpack_device__(): device " + device_string(t.device()) +
                                 " has no DLPack device code (its plugin declares none)");
  }
  return nb::make_tuple(code, static_cast<int>(t.device().index));
}

}  // namespace

void bind_dlpack(nb::module_& m, nb::class_<Tensor>& cls) {
  cls.def("__dlpack__", &export_dlpack,
          nb::sig("def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None, "
                  "dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> object"),
          "Exports a DLPack capsule (versioned when max_version >= (1, 0)). The tensor stays alive while the "
          "capsule or its consumer holds it. stream follows the DLPack rules for the tensor's device.");
  cls.def("__dlpack_device__", &dlpack_device, nb::sig("def __dlpack_device__(self) -> tuple[int, int]"));
  m.def("from_dlpack", &from_dlpack, nb::arg("obj"),
        "A tensor sharing the memory of any DLPack producer (an object with __dlpack__, or a capsule), or of a "
        "buffer-protocol object (bytes, bytearray, memoryview). Legacy (unversioned) capsules import read-only "
        "unless the producer is known to be writable (slimtensor, numpy, torch).");
}

}  // namespace slimtensor::python

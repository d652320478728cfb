// dlpack.cpp: DLPack exchange: Tensor.__dlpack__/__dlpack_device__ (export) and from_dlpack (import),
// versioned (1.x) and legacy capsules.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <string>

#include "common.h"
#include "dlpack_abi.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/copy/clone.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/base/error.h"
#include "slimtensor/tensor/factories.h"

namespace slimtensor::python {
namespace {

constexpr const char* kLegacyName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kUsedLegacyName = "used_dltensor";
constexpr const char* kUsedVersionedName = "used_dltensor_versioned";

bool dl_dtype(ScalarType t, dlpack::DataType* out) {
  const int bits = static_cast<int>(itemsize(t)) * 8;
  switch (t) {
    case ScalarType::Int8: case ScalarType::Int16: case ScalarType::Int32: case ScalarType::Int64:
      *out = {dlpack::kInt, static_cast<uint8_t>(bits), 1}; return true;
    case ScalarType::UInt8: case ScalarType::UInt16: case ScalarType::UInt32: case ScalarType::UInt64:
      *out = {dlpack::kUInt, static_cast<uint8_t>(bits), 1}; return true;
    case ScalarType::Float16: case ScalarType::Float32: case ScalarType::Float64:
      *out = {dlpack::kFloat, static_cast<uint8_t>(bits), 1}; return true;
    case ScalarType::BFloat16: *out = {dlpack::kBfloat, 16, 1}; return true;
    case ScalarType::Complex32: case ScalarType::Complex64: case ScalarType::Complex128:
      *out = {dlpack::kComplex, static_cast<uint8_t>(bits), 1}; return true;
    case ScalarType::Bool: *out = {dlpack::kBool, 8, 1}; return true;
    case ScalarType::Float8_e4m3fn: *out = {dlpack::kFloat8_e4m3fn, 8, 1}; return true;
    case ScalarType::Float8_e4m3fnuz: *out = {dlpack::kFloat8_e4m3fnuz, 8, 1}; return true;
    case ScalarType::Float8_e5m2: *out = {dlpack::kFloat8_e5m2, 8, 1}; return true;
    case ScalarType::Float8_e5m2fnuz: *out = {dlpack::kFloat8_e5m2fnuz, 8, 1}; return true;
    case ScalarType::Float8_e8m0fnu: *out = {dlpack::kFloat8_e8m0fnu, 8, 1}; return true;
    default: return false;
  }
}

bool scalar_type_of(dlpack::DataType d, ScalarType* out) {
  if (d.lanes != 1) return false;
  for (int code = 0; code < kNumScalarTypeCodes; ++code) {
    const ScalarTypeInfo* i = scalar_type_info(code);
    dlpack::DataType candidate;
    if (!i->is_tensor_dtype || !dl_dtype(static_cast<ScalarType>(code), &candidate)) continue;
    if (candidate.code == d.code && candidate.bits == d.bits) {
      *out = static_cast<ScalarType>(code);
      return true;
    }
  }
  return false;
}

int32_t dl_device_type(Device d) {
  const DeviceEntry* e = find_device(d.type);
  return e ? e->dlpack_device_type : 0;
}

// What an exported capsule owns: a tensor (keeping the storage alive) and its shape and strides.
struct Export {
  Tensor tensor;
  int64_t shape[64];
  int64_t strides[64];
};

template <class Managed>
void fill_export(Managed* m, Export* ex) {
  const Tensor& t = ex->tensor;
  for (int d = 0; d < t.ndim(); ++d) {
    ex->shape[d] = t.sizes()[d];
    ex->strides[d] = t.strides()[d];
  }
  m->manager_ctx = ex;
  m->dl_tensor.data = t.data_ptr();
  m->dl_tensor.device = {dl_device_type(t.device()), t.device().index};
  m->dl_tensor.ndim = t.ndim();
  dl_dtype(t.dtype(), &m->dl_tensor.dtype);
  m->dl_tensor.shape = ex->shape;
  m->dl_tensor.strides = ex->strides;
  m->dl_tensor.byte_offset = 0;
}

void delete_versioned(dlpack::ManagedTensorVersioned* m) {
  delete static_cast<Export*>(m->manager_ctx);
  delete m;
}
void delete_legacy(dlpack::ManagedTensor* m) {
  delete static_cast<Export*>(m->manager_ctx);
  delete m;
}

// A capsule nobody consumed still owns its tensor.
void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kVersionedName)) {
    auto* m = static_cast<dlpack::ManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
    if (m && m->deleter) m->deleter(m);
  } else if (PyCapsule_IsValid(capsule, kLegacyName)) {
    auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
    if (m && m->deleter) m->deleter(m);
  }
}

[[noreturn]] void buffer_error(const std::string& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  throw nb::python_error();
}

nb::object export_dlpack(const Tensor& self, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                         nb::handle copy) {
  Tensor t = self;
  const int32_t our_type = dl_device_type(t.device());
  if (our_type == 0) buffer_error("__dlpack__(): device " + device_string(t.device()) + " has no DLPack device code");
  bool copied = false;
  if (!dl_device.is_none()) {
    const auto want = nb::cast<std::pair<int32_t, int32_t>>(dl_device);
    if (want.first != our_type || (want.first != dlpack::kCPU && want.second != t.device().index)) {
      if (want.first == dlpack::kCPU && !(copy.is_valid() && copy.ptr() == Py_False)) {
        t = to(t, kCPUDevice, t.dtype(), true);
        copied = true;
      } else {
        buffer_error("__dlpack__(): cannot export a tensor on " + device_string(t.device()) + " to dl_device (" +
                     std::to_string(want.first) + ", " + std::to_string(want.second) + ") without a copy");
      }
    }
  }
  if (!copied && copy.is_valid() && copy.ptr() == Py_True) {
    t = clone(t, MemoryFormat::Preserve);
    copied = true;
  }
  dlpack::DataType dt;
  if (!dl_dtype(t.dtype(), &dt)) buffer_error(std::string("__dlpack__(): ") + name(t.dtype()) + " has no DLPack type code");
  bool versioned = false;
  if (!max_version.is_none()) {
    const auto v = nb::cast<std::pair<int, int>>(max_version);
    versioned = v.first >= 1;
  }
  auto* ex = new Export{t, {}, {}};
  if (versioned) {
    auto* m = new dlpack::ManagedTensorVersioned{};
    m->version = {1, 1};
    m->deleter = delete_versioned;
    m->flags = (t.is_read_only() ? dlpack::kFlagReadOnly : 0) | (copied ? dlpack::kFlagIsCopied : 0);
    fill_export(m, ex);
    return nb::steal(PyCapsule_New(m, kVersionedName, capsule_destructor));
  }
  if (t.is_read_only()) {
    delete ex;
    buffer_error("__dlpack__(): the tensor is read-only and a legacy (unversioned) capsule cannot say so; ask "
                 "for max_version=(1, 0) or newer, or export a copy (copy=True)");
  }
  auto* m = new dlpack::ManagedTensor{};
  m->deleter = delete_legacy;
  fill_export(m, ex);
  return nb::steal(PyCapsule_New(m, kLegacyName, capsule_destructor));
}

// The storage deleter of an imported capsule: calls the producer's deleter with the GIL held.
template <class Managed>
void release_managed(void*, void* context) {
  if (!Py_IsInitialized()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  auto* m = static_cast<Managed*>(context);
  if (m->deleter) m->deleter(m);
  PyGILState_Release(state);
}

Device import_device(const dlpack::Device& d) {
  if (d.device_type == dlpack::kCPU || d.device_type == dlpack::kCUDAHost) return kCPUDevice;
  for (const DeviceEntry* e : registered_devices()) {
    if (e->table && e->dlpack_device_type == d.device_type) return Device{e->type, static_cast<int16_t>(d.device_id)};
  }
  PyErr_Format(PyExc_BufferError, "from_dlpack(): DLPack device type %d is not supported by any registered device; "
               "install the device's plugin (see slimtensor.devices()) or copy the data to the CPU first",
               static_cast<int>(d.device_type));
  throw nb::python_error();
}

template <class Managed>
Tensor import_managed(Managed* m, bool read_only) {
  const dlpack::Tensor& dl = m->dl_tensor;
  ST_CHECK(dl.ndim >= 0 && dl.ndim <= 64, Value, "from_dlpack(): ndim must be in [0, 64] but the capsule says ",
           dl.ndim);
  ST_CHECK(dl.ndim == 0 || dl.shape != nullptr, Value, "from_dlpack(): the capsule has ndim ", dl.ndim,
           " but a null shape pointer; the producer is broken");
  ScalarType dtype;
  if (!scalar_type_of(dl.dtype, &dtype)) {
    fail(ErrorKind::Type, "from_dlpack(): unsupported DLPack dtype (code ", int(dl.dtype.code), ", bits ",
         int(dl.dtype.bits), ", lanes ", dl.dtype.lanes, ")");
  }
  const Device device = import_device(dl.device);
  int64_t sizes[64], strides[64];
  for (int d = 0; d < dl.ndim; ++d) sizes[d] = dl.shape[d];
  if (dl.strides) {
    for (int d = 0; d < dl.ndim; ++d) {
      strides[d] = dl.strides[d];
      ST_CHECK(strides[d] >= 0 || sizes[d] <= 1, Value, "from_dlpack(): stride[", d, "] is negative (", strides[d],
               "); slimtensor has no negative strides: export a contiguous copy");
      if (sizes[d] <= 1 && strides[d] < 0) strides[d] = 0;
    }
  } else {
    contiguous_strides(sizes, dl.ndim, strides);
  }
  char* base = static_cast<char*>(dl.data);
  if (base) base += dl.byte_offset;
  // from_blob checks the layout and a null pointer before its storage takes the deleter; the capsule is
  // marked consumed only once this returns.
  return from_blob(base, IntList(sizes, dl.ndim), IntList(strides, dl.ndim), 0, dtype, device, release_managed<Managed>,
                   m, read_only, "dlpack", "from_dlpack");
}

Tensor from_capsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kVersionedName)) {
    auto* m = static_cast<dlpack::ManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
    if (m->version.major != 1) {
      PyErr_Format(PyExc_BufferError, "from_dlpack(): DLPack major version %u is not supported (slimtensor reads 1.x)",
                   m->version.major);
      throw nb::python_error();
    }
    Tensor t = import_managed(m, (m->flags & dlpack::kFlagReadOnly) != 0);
    PyCapsule_SetName(capsule, kUsedVersionedName);  // consumed: the storage now owns the deleter call
    return t;
  }
  if (PyCapsule_IsValid(capsule, kLegacyName)) {
    auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
    Tensor t = import_managed(m, false);
    PyCapsule_SetName(capsule, kUsedLegacyName);
    return t;
  }
  const char* name = PyCapsule_GetName(capsule);
  PyErr_Clear();
  const std::string n = name ? name : "";
  ST_CHECK(n != kUsedLegacyName && n != kUsedVersionedName, Value,
           "from_dlpack(): the DLPack capsule was already consumed; a capsule can be imported once: call "
           "__dlpack__() again for a new one");
  fail(ErrorKind::Type, "from_dlpack(): expected a capsule named 'dltensor' or 'dltensor_versioned' but got '", n, "'");
}

Tensor from_dlpack(nb::handle obj) {
  if (PyCapsule_CheckExact(obj.ptr())) return from_capsule(obj.ptr());
  // Deliberately never freed: static nb::objects would be destroyed after the interpreter.
  static PyObject* method_name = PyUnicode_InternFromString("__dlpack__");
  static PyObject* kwnames = Py_BuildValue("(s)", "max_version");
  static PyObject* version = Py_BuildValue("(ii)", 1, 1);
  PyObject* args[2] = {obj.ptr(), version};
  PyObject* capsule = PyObject_VectorcallMethod(method_name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
  if (!capsule) {
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
      PyErr_Clear();
      throw nb::type_error(("from_dlpack(): expected an object with __dlpack__ or a DLPack capsule but got " +
                            nb::cast<std::string>(nb::str(obj.type().attr("__name__")))).c_str());
    }
    // Producers older than the 2023 array API reject max_version with TypeError: ask for a legacy capsule.
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
    PyErr_Clear();
    capsule = PyObject_CallMethodNoArgs(obj.ptr(), method_name);
    if (!capsule) throw nb::python_error();
  }
  nb::object owned = nb::steal(capsule);
  return from_capsule(capsule);
}

}  // namespace

void bind_dlpack(nb::module_& m, nb::class_<Tensor>& cls) {
  cls.def("__dlpack__", &export_dlpack, nb::kw_only(), nb::arg("stream") = nb::none(),
          nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none(),
          "Exports a DLPack capsule (versioned when max_version >= (1, 0)). The tensor stays alive while the "
          "capsule or its consumer holds it.");
  cls.def("__dlpack_device__", [](const Tensor& t) {
    const int32_t code = dl_device_type(t.device());
    if (code == 0) buffer_error("__dlpack_device__(): device " + device_string(t.device()) + " has no DLPack device code");
    return nb::make_tuple(code, static_cast<int>(t.device().index));
  });
  m.def("from_dlpack", &from_dlpack, nb::arg("obj"),
        "A tensor sharing the memory of any DLPack producer (an object with __dlpack__, or a capsule).");
}

}  // namespace slimtensor::python

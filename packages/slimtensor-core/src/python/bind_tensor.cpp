// bind_tensor.cpp: the Tensor and Storage classes: metadata, views, copies and conversions.
//
// Note [Hot paths]
// Views, shape/stride queries and item() are called in tight Python loops. They convert arguments by
// hand from the raw tuple (no std::vector), build the result tuple with the C API, and release the GIL
// only for work large enough to pay for it.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "common.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/clone.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/copy/fill.h"
#include "slimtensor/copy/item.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/tensor/factories.h"

namespace slimtensor::python {
namespace {

constexpr int64_t kReleaseGilBytes = 1 << 16;  // copies at least this large run without the GIL

struct PyStorage {
  Storage storage;
};

nb::object int_tuple(const int64_t* v, int n) {
  PyObject* t = PyTuple_New(n);
  if (!t) throw nb::python_error();
  for (int i = 0; i < n; ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(v[i]));
  return nb::steal(t);
}

MemoryFormat to_format(nb::handle obj, MemoryFormat fallback, const char* function) {
  if (obj.is_none()) return fallback;
  if (!nb::isinstance<MemoryFormat>(obj)) {
    throw nb::type_error((std::string(function) +
                          ": memory_format must be one of slimtensor.contiguous_format, "
                          "preserve_format, channels_last, channels_last_3d but got " +
                          nb::cast<std::string>(nb::repr(obj)))
                             .c_str());
  }
  return nb::cast<MemoryFormat>(obj);
}

void copy_with_gil_policy(const Tensor& dst, const Tensor& src, bool non_blocking) {
  if (dst.nbytes() >= kReleaseGilBytes) {
    nb::gil_scoped_release release;
    copy_(dst, src, non_blocking);
  } else {
    copy_(dst, src, non_blocking);
  }
}

// data_ptr of Tensor and Storage: an address, or an error for opaque device memory (Note [Storage
// handles]): a handle is never handed out as if it were one.
uintptr_t address_or_raise(const StorageImpl& s, void* address, const char* function) {
  ST_CHECK(s.is_addressable(), Runtime, function, ": the memory of this ", device_string(s.device()),
           " tensor is an opaque device handle, not an address; exchange it through DLPack "
           "(__dlpack__, with byte_offset) or copy it to the CPU first (.cpu())");
  return reinterpret_cast<uintptr_t>(address);
}

nb::object storage_owner(const StorageImpl& s) {
  if (s.is_owning()) return nb::none();
  if (s.borrow_deleter() == release_python_owner && s.borrow_context())
    return nb::borrow(static_cast<PyObject*>(s.borrow_context()));
  if (s.borrow_deleter() == release_python_buffer && s.borrow_context()) {
    PyObject* obj = static_cast<Py_buffer*>(s.borrow_context())->obj;
    return obj ? nb::borrow(obj) : nb::none();
  }
  return nb::none();
}

}  // namespace

void bind_tensor(nb::module_& m) {
  nb::enum_<MemoryFormat>(m, "memory_format", "Layout orders for contiguous() and clone()")
      .value("contiguous_format", MemoryFormat::Contiguous)
      .value("preserve_format", MemoryFormat::Preserve)
      .value("channels_last", MemoryFormat::ChannelsLast)
      .value("channels_last_3d", MemoryFormat::ChannelsLast3d);

  nb::class_<PyStorage>(m, "Storage", "The memory under one or more tensors (shared by views).")
      .def_prop_ro("nbytes", [](const PyStorage& s) { return s.storage->nbytes(); })
      .def_prop_ro(
          "data_ptr",
          [](const PyStorage& s) {
            return address_or_raise(*s.storage.get(), s.storage->address(), "Storage.data_ptr");
          },
          "the address of the storage's first byte (an error for device memory that is not addressable)")
      .def_prop_ro("device", [](const PyStorage& s) { return s.storage->device(); })
      .def_prop_ro(
          "is_owning", [](const PyStorage& s) { return s.storage->is_owning(); },
          "True when slimtensor allocated the memory; False when it borrows someone else's")
      .def_prop_ro("is_read_only", [](const PyStorage& s) { return s.storage->is_read_only(); })
      .def_prop_ro(
          "use_count", [](const PyStorage& s) { return s.storage->use_count(); },
          "references to the storage: tensors, views, AOTI handles and this Storage object itself")
      .def_prop_ro(
          "id", [](const PyStorage& s) { return s.storage->id(); }, "unique for the process, never reused")
      .def_prop_ro(
          "owner", [](const PyStorage& s) { return storage_owner(*s.storage.get()); },
          "the Python object that keeps borrowed memory alive, or None")
      .def("__repr__", [](const PyStorage& s) {
        return "Storage(id=" + std::to_string(s.storage->id()) + ", nbytes=" + std::to_string(s.storage->nbytes()) +
               ", device='" + device_string(s.storage->device()) + "', " +
               (s.storage->is_owning() ? "owning" : "borrowed") +
               ", use_count=" + std::to_string(s.storage->use_count()) + ")";
      });

  auto cls = nb::class_<Tensor>(m, "Tensor", nb::type_slots(tensor_buffer_slots),
                                "A strided view over a storage: sizes, strides, offset, dtype, device.");
  // Note [Typed signatures]: arguments converted by hand (nb::handle) get their Python types from nb::sig,
  // so the stubs (and mypy, pyright) see what is accepted and returned, not `object`.
  cls.def(nb::new_([](nb::args args, nb::kwargs kwargs) -> nb::object {
            // Note [st.Tensor(data)] (python/slimtensor/_factories.py): a float32 copy, written in Python.
            return nb::module_::import_("slimtensor._factories").attr("_tensor_new")(*args, **kwargs);
          }),
          "Tensor(data): a float32 copy of a sequence, array or tensor (torch's legacy constructor); "
          "st.tensor(data, dtype=...) for other dtypes, st.empty(...) for an uninitialised tensor.");
  cls.def_prop_ro(
         "shape", [](const Tensor& t) { return int_tuple(t.sizes(), t.ndim()); },
         nb::for_getter(nb::sig("def shape(self, /) -> tuple[int, ...]")))
      .def_prop_ro("ndim", &Tensor::ndim)
      .def_prop_ro(
          "dtype", [](const Tensor& t) { return dtype_object(t.dtype()); },
          nb::for_getter(nb::sig("def dtype(self, /) -> dtype")))
      .def_prop_ro("device", &Tensor::device)
      .def_prop_ro("nbytes", &Tensor::nbytes)
      .def_prop_ro("itemsize", &Tensor::itemsize)
      .def_prop_ro("is_read_only", &Tensor::is_read_only)
      .def_prop_ro("T", [](const Tensor& t) { return reverse_dims(t); })
      .def_prop_ro("mT", [](const Tensor& t) { return matrix_transpose(t); })
      .def(
          "size", [](const Tensor& t) { return int_tuple(t.sizes(), t.ndim()); },
          nb::sig("def size(self) -> tuple[int, ...]"))
      .def(
          "size",
          [](const Tensor& t, nb::handle dim) -> nb::object {
            if (dim.is_none()) return int_tuple(t.sizes(), t.ndim());
            return nb::int_(t.size(to_int64(dim, "size()", "dim")));
          },
          nb::arg("dim"), nb::sig("def size(self, dim: typing.SupportsIndex) -> int"))
      .def(
          "stride", [](const Tensor& t) { return int_tuple(t.strides(), t.ndim()); },
          nb::sig("def stride(self) -> tuple[int, ...]"))
      .def(
          "stride",
          [](const Tensor& t, nb::handle dim) -> nb::object {
            if (dim.is_none()) return int_tuple(t.strides(), t.ndim());
            return nb::int_(t.stride(to_int64(dim, "stride()", "dim")));
          },
          nb::arg("dim"), nb::sig("def stride(self, dim: typing.SupportsIndex) -> int"))
      .def("storage_offset", &Tensor::storage_offset)
      .def("numel", &Tensor::numel)
      .def("dim", &Tensor::ndim)
      .def("element_size", &Tensor::itemsize)
      .def(
          "data_ptr", [](const Tensor& t) { return address_or_raise(*t.storage_impl(), t.data_ptr(), "data_ptr()"); },
          "the address of element 0 (an error for device memory that is not addressable)")
      .def("storage", [](const Tensor& t) { return PyStorage{t.storage()}; })
      .def(
          "is_contiguous",
          [](const Tensor& t, nb::handle format) {
            return t.is_contiguous(to_format(format, MemoryFormat::Contiguous, "is_contiguous()"));
          },
          nb::arg("memory_format") = nb::none(),
          nb::sig("def is_contiguous(self, memory_format: memory_format | None = None) -> bool"))
      .def("__len__",
           [](const Tensor& t) {
             ST_CHECK(t.ndim() > 0, Type, "len() of a 0-d tensor");
             return t.sizes()[0];
           })
      // --- views ---
      .def(
          "as_strided",
          [](const Tensor& t, nb::handle size, nb::handle stride, std::optional<int64_t> offset) {
            int64_t sz[kMaxDims], st[kMaxDims];
            const int64_t n = to_int_list(size, sz, kMaxDims, "as_strided()");
            const int64_t k = to_int_list(stride, st, kMaxDims, "as_strided()");
            return as_strided(t, IntList(sz, n), IntList(st, k), offset);
          },
          nb::arg("size"), nb::arg("stride"), nb::arg("storage_offset") = nb::none(),
          nb::sig("def as_strided(self, size: typing.Sequence[int], stride: typing.Sequence[int], "
                  "storage_offset: int | None = None) -> Tensor"))
      .def(
          "permute",
          [](const Tensor& t, nb::args dims) {
            int64_t d[kMaxDims];
            const int64_t n = to_int_list(dims, d, kMaxDims, "permute()");
            return permute(t, IntList(d, n));
          },
          nb::sig("def permute(self, *dims: int | typing.Sequence[int]) -> Tensor"))
      .def(
          "transpose", [](const Tensor& t, int64_t a, int64_t b) { return transpose(t, a, b); }, nb::arg("dim0"),
          nb::arg("dim1"))
      .def("t",
           [](const Tensor& t) {
             ST_CHECK(t.ndim() <= 2, Runtime, "t(): expects a tensor with <= 2 dims but got ", t.ndim(),
                      "; use .mT or "
                      ".transpose(a, b)");
             return t.ndim() < 2 ? t : transpose(t, 0, 1);
           })
      .def(
          "select", [](const Tensor& t, int64_t dim, int64_t index) { return select(t, dim, index); }, nb::arg("dim"),
          nb::arg("index"))
      .def(
          "narrow",
          [](const Tensor& t, int64_t dim, int64_t start, int64_t length) { return narrow(t, dim, start, length); },
          nb::arg("dim"), nb::arg("start"), nb::arg("length"))
      .def(
          "unsqueeze", [](const Tensor& t, int64_t dim) { return unsqueeze(t, dim); }, nb::arg("dim"))
      .def(
          "squeeze",
          [](const Tensor& t, nb::handle dim) {
            if (dim.is_none()) return squeeze_all(t);
            return squeeze(t, to_int64(dim, "squeeze()", "dim"));
          },
          nb::arg("dim") = nb::none(), nb::sig("def squeeze(self, dim: int | None = None) -> Tensor"))
      .def(
          "expand",
          [](const Tensor& t, nb::args sizes) {
            int64_t s[kMaxDims];
            const int64_t n = to_int_list(sizes, s, kMaxDims, "expand()");
            return expand(t, IntList(s, n));
          },
          nb::sig("def expand(self, *sizes: int | typing.Sequence[int]) -> Tensor"))
      .def(
          "reshape",
          [](const Tensor& t, nb::args shape) {
            int64_t s[kMaxDims];
            const int64_t n = to_int_list(shape, s, kMaxDims, "reshape()");
            if (t.nbytes() >= kReleaseGilBytes && !t.is_contiguous()) {  // may copy: let other threads run
              nb::gil_scoped_release release;
              return reshape(t, IntList(s, n));
            }
            return reshape(t, IntList(s, n));
          },
          nb::sig("def reshape(self, *shape: int | typing.Sequence[int]) -> Tensor"))
      .def(
          "view",
          [](const Tensor& t, nb::args shape) {
            if (shape.size() == 1) {
              nb::handle only = shape[0];
              if (!PyLong_Check(only.ptr()) && !PyTuple_Check(only.ptr()) && !PyList_Check(only.ptr())) {
                return view_dtype(t, to_dtype(only, t.dtype(), "view()"));
              }
            }
            int64_t s[kMaxDims];
            const int64_t n = to_int_list(shape, s, kMaxDims, "view()");
            return view(t, IntList(s, n));
          },
          nb::sig("def view(self, *shape: int | typing.Sequence[int] | _DType | str) -> Tensor"))
      .def(
          "flatten", [](const Tensor& t, int64_t start, int64_t end) { return flatten(t, start, end); },
          nb::arg("start_dim") = 0, nb::arg("end_dim") = -1)
      // --- copies ---
      .def(
          "contiguous",
          [](nb::handle_t<Tensor> self, nb::handle format) -> nb::object {
            const Tensor& t = *nb::inst_ptr<Tensor>(self);
            const MemoryFormat f = to_format(format, MemoryFormat::Contiguous, "contiguous()");
            ST_CHECK(f != MemoryFormat::Preserve, Value,
                     "contiguous(): memory_format=preserve_format is not allowed; "
                     "use contiguous_format, channels_last or channels_last_3d");
            if (t.is_contiguous(f)) return nb::borrow(self);  // the tensor itself, as in PyTorch
            Tensor out;
            {
              nb::gil_scoped_release release;
              out = contiguous(t, f);
            }
            return nb::cast(std::move(out));
          },
          nb::arg("memory_format") = nb::none(),
          nb::sig("def contiguous(self, memory_format: memory_format | None = None) -> Tensor"))
      .def(
          "clone",
          [](const Tensor& t, nb::handle format) {
            const MemoryFormat f = to_format(format, MemoryFormat::Preserve, "clone()");
            nb::gil_scoped_release release;
            return clone(t, f);
          },
          nb::arg("memory_format") = nb::none(),
          nb::sig("def clone(self, memory_format: memory_format | None = None) -> Tensor"))
      .def(
          "copy_",
          [](nb::handle_t<Tensor> self, const Tensor& src, bool non_blocking) {
            copy_with_gil_policy(*nb::inst_ptr<Tensor>(self), src, non_blocking);
            return nb::borrow(self);
          },
          nb::arg("src"), nb::arg("non_blocking") = false,
          nb::sig("def copy_(self, src: Tensor, non_blocking: bool = False) -> Tensor"))
      .def(
          "fill_",
          [](nb::handle_t<Tensor> self, nb::handle value) {
            const Tensor& t = *nb::inst_ptr<Tensor>(self);
            const Scalar s = to_scalar(value, "fill_()");
            if (t.nbytes() >= kReleaseGilBytes) {
              nb::gil_scoped_release release;
              fill_(t, s);
            } else {
              fill_(t, s);
            }
            return nb::borrow(self);
          },
          nb::arg("value").none(), nb::sig("def fill_(self, value: bool | int | float | complex) -> Tensor"))
      .def(
          "zero_",
          [](nb::handle_t<Tensor> self) {
            const Tensor& t = *nb::inst_ptr<Tensor>(self);
            ST_CHECK(!t.is_read_only(), Runtime,
                     "zero_(): the tensor is read-only (it borrows memory its owner marked "
                     "read-only); zero a copy instead: t = t.clone()");
            if (t.nbytes() >= kReleaseGilBytes) {
              nb::gil_scoped_release release;
              fill_(t, Scalar::from_int(0));
            } else {
              fill_(t, Scalar::from_int(0));
            }
            return nb::borrow(self);
          },
          nb::sig("def zero_(self) -> Tensor"))
      .def(
          "item", [](const Tensor& t) { return scalar_to_python(item(t), t.dtype()); },
          nb::sig("def item(self) -> int | float | bool"),
          "The value of a one-element tensor as a Python number (complex for complex dtypes; typed as torch "
          "types it)")
      .def(
          "_to",
          [](nb::handle_t<Tensor> self, nb::handle device, nb::handle dtype, bool copy,
             bool non_blocking) -> nb::object {
            const Tensor& t = *nb::inst_ptr<Tensor>(self);
            // "cuda" is the current device: t.to("cuda") on a tensor already there is the tensor itself.
            Device d = device.is_none() ? t.device() : to_device(device, "to()");
            if (d.index < 0) d = resolve_device(d, "to()");
            const ScalarType ty = to_dtype(dtype, t.dtype(), "to()");
            if (!copy && d == t.device() && ty == t.dtype()) return nb::borrow(self);  // the tensor itself
            if (d.type != t.device().type) {  // name the call, not the allocation inside it
              Device check = d;
              if (check.index < 0) check.index = 0;  // "cuda" means the current (first) device
              usable_device(check, "to()");
            }
            Tensor out;
            {
              nb::gil_scoped_release release;
              out = to(t, d, ty, true, non_blocking);
            }
            return nb::cast(std::move(out));
          },
          nb::arg("device").none(), nb::arg("dtype").none(), nb::arg("copy") = false, nb::arg("non_blocking") = false,
          nb::sig("def _to(self, device: DeviceLike | None, dtype: DTypeLike | None, copy: bool = False, "
                  "non_blocking: bool = False) -> Tensor"))
      .def(
          "_is_same",
          [](const Tensor& a, const Tensor& b) {
            return a.storage_impl() == b.storage_impl() && a.storage_offset() == b.storage_offset() &&
                   a.ndim() == b.ndim() && std::equal(a.sizes(), a.sizes() + a.ndim(), b.sizes()) &&
                   std::equal(a.strides(), a.strides() + a.ndim(), b.strides()) && a.dtype() == b.dtype();
          },
          "same storage, offset, sizes, strides and dtype")
      .def("_has_internal_overlap", [](const Tensor& t) { return has_internal_overlap(t); });

  bind_indexing(cls);
  bind_dlpack(m, cls);
  bind_device_memory(m, cls);
}

}  // namespace slimtensor::python

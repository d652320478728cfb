// bind_collectives.cpp: a Python collective backend (slimtensor.distributed, Note [Collective backends]) as a
// named group of the c10d shims (Note [Collective groups] in slimtensor/c/collectives.h).
#include <nanobind/stl/string.h>

#include <string>

#include "common.h"
#include "slimtensor/base/error.h"
#include "slimtensor/c/collectives.h"
#include "slimtensor/tensor/factories.h"

namespace slimtensor::python {
namespace {

// The context of one registered Python group: the backend object and the last error's text.
struct PythonGroup {
  nb::object backend;
  std::string error;
};

const char* const kReduceNames[] = {"sum", "avg", "product", "min", "max"};

// A tensor over the memory a shim hands over: a borrowed view that lives only during the backend call.
Tensor view_of(st_memory_ref data, int64_t numel, int32_t dtype, int32_t device_type) {
  const Device d{static_cast<DeviceType>(device_type), static_cast<int16_t>(data.device_index)};
  const int64_t size[1] = {numel}, stride[1] = {1};
  void* base = static_cast<char*>(data.handle) + data.byte_offset;
  return from_blob(base, IntList(size, 1), IntList(stride, 1), 0, static_cast<ScalarType>(dtype), d, nullptr, nullptr,
                   false, "collective", "collective");
}

template <typename Call>
int32_t call_python(void* context, Call&& call) {
  auto* g = static_cast<PythonGroup*>(context);
  nb::gil_scoped_acquire gil;
  try {
    call(g->backend);
    return 0;
  } catch (nb::python_error& e) {
    g->error = e.what();
  } catch (const std::exception& e) {
    g->error = e.what();
  }
  return 1;
}

int32_t all_reduce(void* context, st_memory_ref data, int64_t numel, int32_t dtype, int32_t device_type, int32_t op) {
  return call_python(context, [&](nb::object& backend) {
    backend.attr("all_reduce")(view_of(data, numel, dtype, device_type), kReduceNames[op]);
  });
}

int32_t wait(void* context, st_memory_ref data, int32_t device_type) {
  return call_python(context, [&](nb::object& backend) {
    backend.attr("wait")(view_of(data, 0, static_cast<int32_t>(ScalarType::UInt8), device_type));
  });
}

const char* last_error(void* context) { return static_cast<PythonGroup*>(context)->error.c_str(); }

void release(void* context) {
  nb::gil_scoped_acquire gil;
  delete static_cast<PythonGroup*>(context);
}

}  // namespace

void bind_collectives(nb::module_& m) {
  m.def(
      "_register_collective_group",
      [](const std::string& name, nb::object backend) {
        auto* g = new PythonGroup{std::move(backend), {}};
        st_collective_group table{sizeof(st_collective_group), g, all_reduce, wait, last_error, release};
        if (slimtensor_register_collective_group(name.c_str(), &table) != 0) {
          const std::string message = slimtensor_last_error();
          delete g;
          fail(ErrorKind::Value, message);
        }
      },
      nb::arg("name"), nb::arg("backend"));
  m.def(
      "_unregister_collective_group",
      [](const std::string& name) {
        if (slimtensor_unregister_collective_group(name.c_str()) != 0)
          fail(ErrorKind::Value, std::string(slimtensor_last_error()));
      },
      nb::arg("name"));
  m.def("_collective_counts",
        [] { return nb::make_tuple(slimtensor_collective_groups(), slimtensor_collective_pending()); });
}

}  // namespace slimtensor::python

// module.cpp: the nanobind module slimtensor._C: registration, error translation, statistics, tracing hooks.
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "copy/copy_kernels.h"
#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/runtime/events.h"
#include "slimtensor/runtime/memory_stats.h"
#include "slimtensor/runtime/streams.h"
#include "slimtensor/runtime/threads.h"

namespace slimtensor::python {
namespace {

void translate_errors(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    PyObject* type = PyExc_RuntimeError;
    switch (e.kind()) {
      case ErrorKind::Value: type = PyExc_ValueError; break;
      case ErrorKind::Type: type = PyExc_TypeError; break;
      case ErrorKind::Index: type = PyExc_IndexError; break;
      case ErrorKind::Memory: type = PyExc_MemoryError; break;
      case ErrorKind::Buffer: type = PyExc_BufferError; break;
      case ErrorKind::NotImplemented: type = PyExc_NotImplementedError; break;
      case ErrorKind::Runtime: type = PyExc_RuntimeError; break;
    }
    PyErr_SetString(type, e.what());
  } catch (const std::bad_cast&) {
    // An argument nanobind could not convert inside a function body (the signatures catch the rest).
    PyErr_SetString(PyExc_TypeError, "slimtensor: an argument has the wrong type (see the function's signature)");
  }
}

const char* event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::StorageAlloc: return "storage_alloc";
    case EventKind::StorageFree: return "storage_free";
    case EventKind::TensorCreate: return "tensor_create";
    case EventKind::TensorDestroy: return "tensor_destroy";
    case EventKind::Copy: return "copy";
    case EventKind::HandleCreate: return "handle_create";
    case EventKind::HandleDelete: return "handle_delete";
    case EventKind::DeviceEvent: return "device_event";
  }
  return "unknown";
}

nb::object dtype_name(int8_t code) {
  if (code < 0) return nb::none();
  return nb::str(name(static_cast<ScalarType>(code)));
}

nb::dict event_dict(const Event& e) {
  nb::dict d;
  d["kind"] = event_kind_name(e.kind);
  d["time_ns"] = e.time_ns;
  d["id"] = e.id;
  d["storage_id"] = e.storage_id;
  d["bytes"] = e.bytes;
  d["device"] = device_string(e.device);
  d["src_device"] = e.kind == EventKind::Copy ? nb::object(nb::str(device_string(e.src_device).c_str())) : nb::none();
  d["dtype"] = dtype_name(e.dtype);
  d["src_dtype"] = dtype_name(e.src_dtype);
  d["owning"] = e.owning;
  d["op"] = e.op;
  d["sizes"] = nb::tuple(nb::cast(e.sizes));
  d["strides"] = nb::tuple(nb::cast(e.strides));
  d["offset"] = e.offset;
  d["src_storage_id"] = e.src_storage_id;
  d["stream"] = e.kind == EventKind::DeviceEvent ? nb::object(nb::int_(e.stream)) : nb::none();
  return d;
}

void emit_stat(void* user, const char* key, int64_t value) {
  // Called by the plugin during allocator_stats, with the GIL held by our caller.
  if (key) (*static_cast<nb::dict*>(user))[key] = value;
}

// The core's counters of a device type; for a plugin device with allocator_stats (`index` >= 0: that
// device; -1: the current one), also the allocator's own statistics under "allocator".
nb::dict stats_dict(DeviceType type, int index) {
  const MemoryStats s = memory_stats(type);
  nb::dict d;
  d["live_bytes"] = s.live_bytes;
  d["peak_bytes"] = s.peak_bytes;
  d["live_storages"] = s.live_storages;
  d["live_tensors"] = s.live_tensors;
  d["live_aoti_handles"] = s.live_aoti_handles;
  d["total_allocations"] = s.total_allocations;
  d["plugin_bytes"] = s.plugin_bytes;
  d["plugin_peak_bytes"] = s.plugin_peak_bytes;
  const DeviceEntry* e = find_device(type);
  if (e && e->table && e->unavailable_reason.empty()) {
    nb::dict allocator;
    if (allocator_stats(Device{type, static_cast<int16_t>(index)}, emit_stat, &allocator)) d["allocator"] = allocator;
  }
  return d;
}

}  // namespace
}  // namespace slimtensor::python

NB_MODULE(_C, m) {
  using namespace slimtensor;
  using namespace slimtensor::python;
  m.doc() = "slimtensor's C++ core, bound with nanobind.";
  nb::register_exception_translator(translate_errors);

  bind_types(m);
  bind_tensor(m);
  bind_factories(m);
  bind_buffer(m);
  bind_aoti(m);
  bind_collectives(m);

  m.def(
      "_memory_stats",
      [](nb::handle device) {
        const Device d = device.is_none() ? kCPUDevice : to_device(device, "memory_stats()");
        return stats_dict(d.type, d.index);
      },
      nb::arg("device") = nb::none());
  m.def("_memory_stats_by_code", [](int code) { return stats_dict(static_cast<DeviceType>(code), -1); });
  m.def(
      "synchronize",
      [](nb::handle device) {
        // Note [Streams in the core]: waits for all queued work of a device (every stream), as
        // torch.cuda.synchronize. None: the current device of every available plugin device type.
        std::vector<Device> targets;
        if (!device.is_none()) {
          targets.push_back(to_device(device, "synchronize()"));
        } else {
          for (const DeviceEntry* e : registered_devices()) {
            if (e->table && e->unavailable_reason.empty()) targets.push_back(Device{e->type, -1});
          }
        }
        nb::gil_scoped_release release;  // plugin work may take long
        for (const Device d : targets) streams::synchronize_device(d);
      },
      nb::arg("device") = nb::none(),
      "Waits until all work queued on a device (every stream) has finished: `device` ('cuda', 'cuda:1'), or "
      "None for the current device of every plugin device type. A no-op for the CPU.");
  m.def(
      "current_device",
      [](nb::handle type) { return streams::current_device(to_device(type, "current_device()").type); },
      nb::arg("type"), "The calling thread's current device index of a device type ('cuda'): 0 for the CPU.");
  m.def(
      "set_device", [](nb::handle device) { streams::set_device(to_device(device, "set_device()")); },
      nb::arg("device"), "Sets the calling thread's current device of that type: set_device('cuda:1').");
  m.def(
      "reset_peak_memory_stats",
      [](nb::handle device) {
        reset_peak_memory(device.is_none() ? kCPU : to_device(device, "reset_peak_memory_stats()").type);
      },
      nb::arg("device") = nb::none(), nb::sig("def reset_peak_memory_stats(device: DeviceLike | None = None) -> None"));
  m.def("set_num_threads", &set_num_threads, nb::arg("n"),
        "Threads slimtensor's own kernels (large copies and fills) may use.");
  m.def("get_num_threads", &num_threads);
  m.def(
      "_copy_isa", [] { return std::string(cpu_copy_isa()); },
      "the copy kernels' instruction set: avx512, avx2 or scalar");

  m.def("_trace_start", &events::start_trace);
  m.def("_trace_stop", [](size_t token) {
    std::vector<Event> events = events::stop_trace(token);
    nb::list out;
    for (const Event& e : events) out.append(event_dict(e));
    return out;
  });
  m.def("_tracing_active", &events::tracing_active);

  m.def(
      "_register_device_plugin",
      [](nb::handle capsule, const std::string& source) {
        void* p = PyCapsule_GetPointer(capsule.ptr(), ST_PLUGIN_CAPSULE_NAME);
        if (!p) throw nb::python_error();
        const DeviceEntry& e = register_device_plugin(reinterpret_cast<st_plugin_init_fn>(p), source);
        return e.name;
      },
      nb::arg("capsule"), nb::arg("source"));
  m.def(
      "_set_device_autoload_hook",
      [](nb::object hook) {
        // The Python callable lives in a raw slot touched only with the GIL held; the C++ hook captures
        // nothing, so copying it (find_device does, without the GIL) never touches a Python refcount.
        static PyObject* g_hook = nullptr;
        Py_XDECREF(g_hook);
        g_hook = nullptr;
        if (hook.is_none()) {
          set_device_autoload_hook(nullptr);
          return;
        }
        g_hook = hook.release().ptr();
        set_device_autoload_hook([]() {
          nb::gil_scoped_acquire gil;
          if (!g_hook) return;
          nb::object callable = nb::borrow(g_hook);
          try {
            callable();
          } catch (nb::python_error& e) {
            e.discard_as_unraisable("slimtensor device autoload");
          }
        });
      },
      nb::arg("hook").none());
  m.def("_devices", []() {
    nb::list out;
    for (const DeviceEntry* e : registered_devices()) {
      nb::dict d;
      int32_t count = 1;
      std::string reason = e->unavailable_reason;
      if (e->table && reason.empty() && e->table->device_count(e->table->ctx, &count) != 0) {
        reason = std::string("device_count failed: ") + e->table->last_error(e->table->ctx);
        count = 0;
      }
      d["name"] = e->name;
      d["code"] = e->type;
      d["dlpack_code"] = e->dlpack_device_type;
      d["available"] = reason.empty();
      d["reason"] = reason;
      d["count"] = reason.empty() ? count : 0;
      d["source"] = e->source;
      d["plugin_version"] = e->plugin_version;
      out.append(d);
    }
    return out;
  });
  m.attr("_PLUGIN_ABI") = nb::make_tuple(ST_PLUGIN_ABI_MAJOR, ST_PLUGIN_ABI_MINOR);

  // What `slimtensor info` prints under "build": how this module and the core were compiled.
  nb::dict build;
#if defined(__clang__)
  build["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  build["compiler"] = std::string("gcc ") + __VERSION__;
#else
  build["compiler"] = "unknown";
#endif
  build["cxx_standard"] = static_cast<long>(__cplusplus);
#ifdef SLIMTENSOR_BUILD_TYPE
  build["build_type"] = SLIMTENSOR_BUILD_TYPE;
#else
  build["build_type"] = "unknown";
#endif
#ifdef NDEBUG
  build["assertions"] = false;
#else
  build["assertions"] = true;
#endif
  build["nanobind"] = std::to_string(NB_VERSION_MAJOR) + "." + std::to_string(NB_VERSION_MINOR) + "." +
                      std::to_string(NB_VERSION_PATCH);
#ifdef SLIMTENSOR_SLEEF_BUNDLED
  build["sleef_bundled"] = true;
#else
  build["sleef_bundled"] = false;
#endif
#ifdef SLIMTENSOR_DNNL_BUNDLED
  build["onednn_bundled"] = true;
#else
  build["onednn_bundled"] = false;
#endif
  m.attr("_BUILD_INFO") = build;
}

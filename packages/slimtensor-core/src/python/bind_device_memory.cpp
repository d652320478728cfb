// bind_device_memory.cpp: Tensor.record_stream, pin_memory, is_pinned, and the stream helpers of
// __cuda_array_interface__ (Notes [Pinned memory] and [record_stream in the core] in runtime/device_memory.h).
#include <nanobind/stl/optional.h>

#include <optional>
#include <string>

#include "common.h"
#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_memory.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/runtime/streams.h"

namespace slimtensor::python {
namespace {

constexpr int32_t kDLCUDA = 2;
constexpr int32_t kDLROCM = 10;

// An int attribute of obj, or nullopt when obj has no such attribute (a non-int one is a TypeError).
std::optional<int64_t> int_attr(nb::handle obj, const char* name, const char* function) {
  if (!nb::hasattr(obj, name)) return std::nullopt;
  nb::object v = nb::getattr(obj, name);
  if (v.is_none()) return std::nullopt;
  return to_int64(v, function, name);
}

// A stream of t's device from what users hold (Note [record_stream in the core]):
//   - an int: the device's DLPack stream number (what __dlpack__(stream=...) takes; for CUDA the
//     cudaStream_t value, with 1 and 2 the legacy and per-thread default streams);
//   - a CUDA stream object (torch.cuda.Stream, slimtensor_cuda.Stream, cupy's, anything with
//     __cuda_stream__() or an int cuda_stream attribute), for devices whose DLPack type is CUDA/ROCm;
//   - any plugin's stream object with an int stream_handle attribute: the handle as the plugin gave it.
void* stream_arg(nb::handle obj, Device d, const char* function) {
  const DeviceEntry* e = find_device(d.type);
  const bool cuda_like = e && (e->dlpack_device_type == kDLCUDA || e->dlpack_device_type == kDLROCM);
  const std::string dev = device_string(d);
  if (PyBool_Check(obj.ptr())) {
    fail(ErrorKind::Type, function, ": stream must be a stream object or an int, not bool");
  }
  if (PyLong_Check(obj.ptr()) || PyIndex_Check(obj.ptr())) {
    const int64_t value = to_int64(obj, function, "stream");
    ST_CHECK(value > 0, Value, function, ": stream ", value,
             " names no stream; an int stream is the device's "
             "DLPack stream number (for CUDA: 1 the legacy default stream, 2 the per-thread default, else the "
             "cudaStream_t value), or pass the stream object itself");
    void* stream = nullptr;
    bool known = false;
    try {
      known = streams::from_dlpack(d, value, &stream);
    } catch (const Error& e) {
      fail(ErrorKind::Value, function, ": stream ", value, " is not a DLPack stream number of ", dev, ": ", e.what());
    }
    ST_CHECK(known, Type, function, ": ", dev,
             " defines no DLPack stream numbers, so an int cannot name one of its "
             "streams; pass the plugin's stream object (one with an int stream_handle attribute)");
    return stream;
  }
  std::optional<int64_t> handle;
  if (cuda_like && nb::hasattr(obj, "__cuda_stream__")) {
    nb::object r = nb::getattr(obj, "__cuda_stream__")();
    ST_CHECK(nb::isinstance<nb::tuple>(r) && nb::len(r) == 2, Type, function, ": ", type_short_name(obj),
             ".__cuda_stream__() must return (version, handle)");
    handle = to_int64(nb::tuple(r)[1], function, "__cuda_stream__()[1]");
  } else if (cuda_like && (handle = int_attr(obj, "cuda_stream", function))) {
  } else if ((handle = int_attr(obj, "stream_handle", function))) {
  } else {
    fail(ErrorKind::Type, function, ": cannot take a stream of ", dev, " from ", type_short_name(obj), "; pass ",
         cuda_like ? "a CUDA stream object (with __cuda_stream__ or cuda_stream), " : "",
         "an object with an int stream_handle attribute, or the stream's DLPack number (an int)");
  }
  if (std::optional<int64_t> index = int_attr(obj, "device_index", function)) {
    ST_CHECK(*index == d.index, Value, function, ": the stream belongs to ", e->name, ":", *index,
             " but the tensor "
             "is on ",
             dev, "; pass a stream of the tensor's device");
  }
  return reinterpret_cast<void*>(static_cast<uintptr_t>(*handle));
}

DeviceType pinning_type(nb::handle device, const char* function) {
  return device.is_none() ? kCPU : to_device(device, function).type;
}

}  // namespace

void bind_device_memory(nb::module_& m, nb::class_<Tensor>& cls) {
  cls.def(
         "record_stream",
         [](const Tensor& t, nb::handle stream) {
           ST_CHECK(!t.device().is_cpu(), Value,
                    "record_stream(): the tensor is on the CPU, which has no streams; "
                    "record_stream is for tensors of a plugin device (cuda, ...)");
           void* s = stream_arg(stream, t.device(), "record_stream()");
           nb::gil_scoped_release release;  // a plugin without record_stream synchronises the stream
           device_memory::record_stream(t, s, "record_stream()");
         },
         nb::arg("stream"),
         "Marks the tensor's memory as used on `stream` (a stream of its device), as torch's record_stream: the "
         "allocator will not reuse it before the work queued on that stream has finished, even once the tensor "
         "is freed. `stream`: a stream object (torch.cuda.Stream, slimtensor_cuda.Stream, anything with an int "
         "stream_handle) or the device's DLPack stream number. Does nothing for borrowed memory (DLPack, from_blob).")
      .def(
          "pin_memory",
          [](nb::handle_t<Tensor> self, nb::handle device) -> nb::object {
            const Tensor& t = *nb::inst_ptr<Tensor>(self);
            const DeviceEntry& e = device_memory::pinning_device(pinning_type(device, "pin_memory()"), "pin_memory()");
            if (t.device().is_cpu() && device_memory::is_pinned(t, e.type, "pin_memory()")) {
              return nb::borrow(self);  // the tensor itself, as in PyTorch
            }
            Tensor out;
            {
              nb::gil_scoped_release release;  // the copy may be large
              out = device_memory::pin_memory(t, e, "pin_memory()");
            }
            return nb::cast(std::move(out));
          },
          nb::arg("device") = nb::none(),
          "A copy of this CPU tensor in pinned (page-locked) host memory, or the tensor itself when it is pinned "
          "already. `device`: the device whose plugin pins it (default: the first available one that can).")
      .def(
          "is_pinned",
          [](const Tensor& t, nb::handle device) {
            return device_memory::is_pinned(t, pinning_type(device, "is_pinned()"), "is_pinned()");
          },
          nb::arg("device") = nb::none(),
          "Whether the tensor's memory is pinned host memory (of `device`'s plugin, or of any plugin).");

  m.def(
      "_current_stream_dlpack",
      [](nb::handle device) -> std::optional<int64_t> {
        const Device d = resolve_device(to_device(device, "__cuda_array_interface__"), "__cuda_array_interface__");
        int64_t value = 0;
        if (!streams::to_dlpack(d, streams::current(d), &value)) return std::nullopt;
        return value;
      },
      nb::arg("device"),
      "The DLPack number of the calling thread's current stream of `device`, or None when it defines none.");
  m.def(
      "_wait_dlpack_stream",
      [](nb::handle device, int64_t value) {
        const char* fn = "from_cuda_array_interface()";
        const Device d = resolve_device(to_device(device, fn), fn);
        void* producer = nullptr;
        ST_CHECK(streams::from_dlpack(d, value, &producer), Value, fn, ": ", device_string(d),
                 " defines no DLPack stream numbers, so stream ", value, " cannot be waited for");
        nb::gil_scoped_release release;
        streams::order_after(d, streams::current(d), producer);
      },
      nb::arg("device"), nb::arg("stream"),
      "Makes the current stream of `device` wait for the work queued so far on the stream with DLPack number "
      "`stream` (the consumer side of __cuda_array_interface__ v3).");
}

}  // namespace slimtensor::python

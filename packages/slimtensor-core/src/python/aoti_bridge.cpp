// aoti_bridge.cpp: slimtensor._C's AOTI functions: tensors -> AOTI handles, handles -> tensors, and one
// model run, with no DLPack or ctypes round trip.
//
// Note [AOTI calls from Python]
// slimtensor.aoti runs a model through AOTInductorModelContainerRun (a C function pointer the model .so
// exports). The input handles are new handles on the tensors' own storages (any device: the model checks
// what it accepts); the container steals the handles it gets past its input check and nulls their slots,
// and the rest are deleted here after every run, success or failure (Note [Input handles] in
// python/slimtensor/aoti/_model.py). Every non-NULL output is ours: it is adopted by the model owner (an
// output over the model's constants pins the model, Note [Model owner]) and stolen into a Tensor. The
// run itself releases the GIL.
//
// Note [Graph replay from Python]
// replay() of a captured device graph is host-bound for small models (Note [Replay in one call] in the CUDA
// plugin's graphs.cpp), so checking its inputs and calling the plugin's replay function is one call here:
// each input must be a dense slimtensor tensor with its static input's dtype, shape and device, which makes
// its bytes exactly the static input's. An input that is not is no error here: nothing is queued and -1 tells
// the caller to take its checked path, which converts what it can (DLPack producers, strided views) and names
// what it cannot. The inputs stay referenced by the caller until the launch is queued.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <vector>

#include "aoti/tensor_handles.h"
#include "common.h"
#include "slimtensor/base/error.h"
#include "slimtensor/c/aoti_host.h"

namespace slimtensor::python {
namespace {

// AOTInductorModelContainerRun (torch/csrc/inductor/aoti_runtime/interface.h).
using ContainerRunFn = int32_t (*)(void* container, AtenTensorHandle* inputs, size_t num_inputs,
                                   AtenTensorHandle* outputs, size_t num_outputs, void* stream, void* proxy_executor);

AtenTensorHandle to_handle(uintptr_t h) { return reinterpret_cast<AtenTensorHandle>(h); }

void delete_all(std::vector<AtenTensorHandle>& handles) noexcept {
  for (AtenTensorHandle& h : handles) {
    if (h) aoti_torch_delete_tensor_object(h);
    h = nullptr;
  }
}

uintptr_t new_handle(const Tensor& t) { return reinterpret_cast<uintptr_t>(aoti::new_tensor_handle(t, "aoti")); }

Tensor steal_handle(uintptr_t h) { return aoti::steal_tensor_handle(to_handle(h), "_aoti_steal_handle"); }

nb::tuple run(uintptr_t run_fn, uintptr_t container, nb::list inputs, size_t num_outputs, uintptr_t owner,
              uintptr_t stream) {
  ST_CHECK(run_fn != 0 && container != 0, Value, "_aoti_run(): run_fn and container must not be NULL");
  const size_t n = nb::len(inputs);
  std::vector<AtenTensorHandle> ins(n, nullptr), outs(num_outputs, nullptr);
  try {
    for (size_t i = 0; i < n; ++i) {
      nb::handle x = inputs[i];
      if (!nb::isinstance<Tensor>(x)) {
        throw nb::type_error(("_aoti_run(): input " + std::to_string(i) + " is a " +
                              nb::cast<std::string>(nb::str(x.type().attr("__name__"))) + ", not a slimtensor.Tensor")
                                 .c_str());
      }
      ins[i] = aoti::new_tensor_handle(nb::cast<const Tensor&>(x), "aoti_run");
    }
  } catch (...) {
    delete_all(ins);
    throw;
  }
  int32_t rc;
  {
    nb::gil_scoped_release released;
    rc = reinterpret_cast<ContainerRunFn>(run_fn)(reinterpret_cast<void*>(container), ins.data(), n, outs.data(),
                                                  num_outputs, reinterpret_cast<void*>(stream), nullptr);
  }
  delete_all(ins);  // what the container did not steal
  nb::list results;
  if (rc != 0) {
    delete_all(outs);
    return nb::make_tuple(rc, results);
  }
  try {
    for (size_t i = 0; i < num_outputs; ++i) {
      if (!outs[i]) {
        results.append(nb::none());
        continue;
      }
      if (owner && slimtensor_aoti_owner_adopt_output(reinterpret_cast<void*>(owner), outs[i]) < 0) {
        fail(ErrorKind::Runtime, "slimtensor.aoti: output ", i, ": ", slimtensor_last_error());
      }
      AtenTensorHandle h = outs[i];
      outs[i] = nullptr;
      results.append(nb::cast(aoti::steal_tensor_handle(h, "_aoti_run")));
    }
  } catch (...) {
    delete_all(outs);
    throw;
  }
  return nb::make_tuple(rc, results);
}

// The plugin's replay entry (slimtensor_cuda_aoti_graph_replay): graph, stream, n, n source addresses.
using GraphReplayFn = int32_t (*)(void* graph, void* stream, int32_t n, const void* const* srcs);

bool matches(const Tensor& t, const Tensor& fixed) {
  if (!t.is_contiguous() || t.dtype() != fixed.dtype() || t.ndim() != fixed.ndim() || !(t.device() == fixed.device()))
    return false;
  for (int d = 0; d < t.ndim(); ++d) {
    if (t.sizes()[d] != fixed.sizes()[d]) return false;
  }
  return true;
}

int32_t graph_replay(uintptr_t replay_fn, uintptr_t graph, uintptr_t stream, nb::tuple inputs, nb::tuple statics) {
  ST_CHECK(replay_fn != 0 && graph != 0, Value, "_aoti_graph_replay(): replay_fn and graph must not be NULL");
  const size_t n = nb::len(inputs);
  if (n != nb::len(statics)) return -1;
  std::vector<const void*> srcs(n);
  for (size_t i = 0; i < n; ++i) {
    nb::handle x = inputs[i], fixed = statics[i];
    if (!nb::isinstance<Tensor>(x) || !nb::isinstance<Tensor>(fixed)) return -1;
    const Tensor& t = nb::cast<const Tensor&>(x);
    if (!matches(t, nb::cast<const Tensor&>(fixed)) || (t.numel() > 0 && !t.is_addressable())) return -1;
    srcs[i] = t.data_ptr();
  }
  nb::gil_scoped_release released;  // a launch may wait for room in the device's queue
  return reinterpret_cast<GraphReplayFn>(replay_fn)(reinterpret_cast<void*>(graph), reinterpret_cast<void*>(stream),
                                                    static_cast<int32_t>(n), srcs.data());
}

}  // namespace

void bind_aoti(nb::module_& m) {
  m.def("_aoti_new_handle", &new_handle, nb::arg("tensor"),
        "A new AOTI handle (an int) sharing the tensor's storage; the caller deletes it or hands it to a model.");
  m.def("_aoti_steal_handle", &steal_handle, nb::arg("handle"),
        "The tensor of a live AOTI handle, which is deleted (stolen).");
  m.def("_aoti_run", &run, nb::arg("run_fn"), nb::arg("container"), nb::arg("inputs"), nb::arg("num_outputs"),
        nb::arg("owner"), nb::arg("stream") = 0,
        nb::sig("def _aoti_run(run_fn: int, container: int, inputs: list[Tensor], num_outputs: int, owner: int, "
                "stream: int = 0) -> tuple[int, list[Tensor | None]]"),
        "Runs AOTInductorModelContainerRun at run_fn on the inputs (Note [AOTI calls from Python]) on `stream` (a "
        "device stream handle; 0 for CPU models and the default stream); returns the container's error code and, "
        "when it is 0, the outputs.");
  m.def("_aoti_graph_replay", &graph_replay, nb::arg("replay_fn"), nb::arg("graph"), nb::arg("stream"),
        nb::arg("inputs"), nb::arg("statics"),
        nb::sig("def _aoti_graph_replay(replay_fn: int, graph: int, stream: int, inputs: tuple[object, ...], "
                "statics: tuple[Tensor, ...]) -> int"),
        "Replays a captured device graph through the plugin's function at replay_fn (Note [Graph replay from "
        "Python]): its return code, or -1 with nothing queued when an input is not a dense tensor matching its "
        "static input in dtype, shape and device.");
}

}  // namespace slimtensor::python

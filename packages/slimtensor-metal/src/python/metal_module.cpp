// metal_module.cpp: the nanobind module slimtensor_metal._metal: the plugin capsule, and the Python API's
// empty_cache / memory_stats / synchronize over the process's MPS context.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <string>

#include "bridge/metal_bridge.h"
#include "plugin/errors.h"
#include "plugin/plugin.h"

namespace nb = nanobind;
using namespace slimtensor_metal;

namespace {

const mtlb_api* system_api() {
#if defined(__APPLE__) && defined(SLIMTENSOR_METAL_HAVE_BRIDGE)
  return mtlb_system_api();
#else
  return nullptr;  // Metal cannot exist here: the device registers as unavailable with the reason
#endif
}

const char* kNoMetal = "Metal needs macOS on Apple silicon";

}  // namespace

extern "C" __attribute__((visibility("default"))) int st_plugin_init(const st_core_table* core,
                                                                     const st_device_table** out) {
  return plugin_init(core, out, system_api(), system_api() ? nullptr : kNoMetal);
}

NB_MODULE(_metal, m) {
  m.doc() = "The Metal (MPS) device plugin of slimtensor (native part)";
  m.attr("DEVICE_NAME") = "mps";
  m.attr("HAVE_BRIDGE") = system_api() != nullptr;
  m.def("plugin_capsule", []() {
    st_plugin_init_fn init = st_plugin_init;
    void* p;
    std::memcpy(&p, &init, sizeof p);  // POSIX: function pointers round-trip through void*
    return nb::capsule(p, ST_PLUGIN_CAPSULE_NAME);
  });
  m.def("unavailable_reason", []() -> nb::object {
    MetalContext* c = mps_context();
    if (!c) return system_api() ? nb::none() : nb::cast(kNoMetal);
    const char* r = c->unavailable_reason();
    return r ? nb::cast(std::string(r)) : nb::none();
  });
  // The calling thread's last error of the plugin and its shims (st.aoti adds it to a failed run's message).
  m.def("last_error", []() { return std::string(last_error()); });
  m.def("empty_cache", []() {
    MetalContext* c = mps_context();
    if (c && c->empty_cache()) throw std::runtime_error(last_error());
  });
  m.def("synchronize", []() {
    MetalContext* c = mps_context();
    if (!c || c->unavailable_reason()) return;  // nothing was ever queued
    nb::gil_scoped_release nogil;
    if (c->synchronize_all(0)) throw std::runtime_error(last_error());
  });
  m.def("memory_stats", []() {
    nb::dict d;
    MetalContext* c = mps_context();
    if (!c) return d;
    if (c->allocator_stats(0, [](void* u, const char* k, int64_t v) { (*static_cast<nb::dict*>(u))[k] = v; }, &d))
      throw std::runtime_error(last_error());
    return d;
  });
}

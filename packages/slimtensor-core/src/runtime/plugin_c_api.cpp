// runtime/plugin_c_api.cpp: slimtensor_register_device_plugin, plugin registration for C and C++ hosts.
#include "aoti/handle.h"
#include "slimtensor/c/device_plugin.h"
#include "slimtensor/runtime/device_registry.h"

extern "C" int slimtensor_register_device_plugin(st_plugin_init_fn init, const char* source) {
  // The same code as the Python capsule path; refusals leave their message in slimtensor_last_error().
  const char* fn = "slimtensor_register_device_plugin";
  const AOTITorchError rc = slimtensor::aoti::guarded(fn, [&] {
    slimtensor::register_device_plugin(init, source && *source ? source : "slimtensor_register_device_plugin");
  });
  return rc == AOTI_TORCH_SUCCESS ? 0 : 1;
}

// table.h: the CUDA device table of the plugin ABI 1.1 and its entry point.
#pragma once

#include "slimtensor/c/device_plugin.h"

namespace slimtensor_cuda {
// The table (static; valid for the process).
const st_device_table* device_table();
}  // namespace slimtensor_cuda

extern "C" int st_plugin_init(const st_core_table* core, const st_device_table** out);

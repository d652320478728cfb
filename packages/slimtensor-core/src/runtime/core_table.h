// src/runtime/core_table.h: the st_core_table the core gives every plugin (c/device_plugin.h).
#pragma once

#include "slimtensor/c/device_plugin.h"

namespace slimtensor {

// The one core table (ABI ST_PLUGIN_ABI_MAJOR.ST_PLUGIN_ABI_MINOR), valid for the life of the process.
const st_core_table& core_table() noexcept;

}  // namespace slimtensor

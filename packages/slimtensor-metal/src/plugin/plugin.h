// plugin.h: the Metal plugin's entry point, its device table, and the process's MPS context.
//
// Note [MPS plugin context]
// st_plugin_init makes one MetalContext for the process (the device table and its ctx must stay valid
// until exit, Note [Plugin ABI]); the MPS shims reach the device through mps_context(). Only device state
// lives there (Note [Metal context]); model state lives in the objects the shims hand out.
#pragma once

#include "metal_context.h"
#include "slimtensor/c/device_plugin.h"

namespace slimtensor_metal {

// The plugin's init: checks the core table (Note [Plugin ABI]) and returns the device table. `api` is the
// Metal bridge (mtlb_system_api() on Apple) or NULL where Metal cannot exist; `unavailable` then says why.
int plugin_init(const st_core_table* core, const st_device_table** out, const mtlb_api* api, const char* unavailable);
// The context the shims and the Python API use; NULL before plugin_init.
MetalContext* mps_context();
// Replaces the process's context (tests); returns the previous one, which the caller then owns.
MetalContext* set_mps_context(MetalContext* ctx);
// Fills a device table for ctx (tests build one over a context of their own).
void fill_device_table(st_device_table* t, MetalContext* ctx);

}  // namespace slimtensor_metal

// tensor_access.h: what the MPS shims read from an AtenTensorHandle, through the core's exported functions.
//
// Note [Tensor access]
// The plugin never links the core: it reads tensors through functions the core hands out by name
// (st_core_table.core_symbol, ABI 1.1): the aoti_torch_get_* getters, and slimtensor_aoti_get_memory_ref
// (c/shim.h) for the (MTLBuffer handle, byte offset) of a tensor's first element. aoti_torch_get_data_ptr is
// never used: for MPS memory (opaque handles, Note [Device memory handles]) the core refuses it. Every core
// with ABI 1.1 exports all of these; a table that lacks one is refused with the upgrade command, never worked
// around. A handle the core gives back is checked by the registry before use (Note [Metal memory]): a host
// address inside a buffer's contents handed over as a handle is refused with that explanation.
#pragma once

#include <cstdint>

#include "slimtensor/c/device_plugin.h"

extern "C" {
typedef struct AtenTensorOpaque* AtenTensorHandle;
typedef int32_t AOTITorchError;
}

namespace slimtensor_metal {

struct TensorAccess {
  AOTITorchError (*get_dtype)(AtenTensorHandle, int32_t*) = nullptr;
  AOTITorchError (*get_device_type)(AtenTensorHandle, int32_t*) = nullptr;
  AOTITorchError (*get_device_index)(AtenTensorHandle, int32_t*) = nullptr;
  AOTITorchError (*get_dim)(AtenTensorHandle, int64_t*) = nullptr;
  AOTITorchError (*get_sizes)(AtenTensorHandle, int64_t**) = nullptr;
  AOTITorchError (*get_strides)(AtenTensorHandle, int64_t**) = nullptr;
  // slimtensor_aoti_get_memory_ref: (handle, byte offset, device index) of the first element.
  AOTITorchError (*memory_ref)(AtenTensorHandle, st_memory_ref*) = nullptr;
  // slimtensor_last_error: the core's message when one of the above fails (optional: messages only).
  const char* (*last_error)(void) = nullptr;
};

struct TensorInfo {
  int32_t dtype = 0, device_type = 0, device_index = 0;
  int64_t ndim = 0;
  const int64_t* sizes = nullptr;
  const int64_t* strides = nullptr;
  int64_t itemsize = 0;
  void* buffer = nullptr;  // the MTLBuffer
  uint64_t offset = 0;     // byte offset of the first element in it
};

// The accessors from the core's table (NULL entries where the core lacks a function; all NULL for a table
// older than ABI 1.1).
TensorAccess tensor_access_from_core(const st_core_table* core);
// Replaces the accessors the shims use (tests); returns the previous ones.
TensorAccess set_tensor_access(const TensorAccess& a);
const TensorAccess& tensor_access();

// Reads `t` and its memory reference; `what` names the argument in messages ("mm_out(): mat2"). The
// caller resolves out->buffer / out->offset through the registry (resolve_handle_locked) before use.
class MetalContext;
int read_tensor_locked(MetalContext* ctx, const char* what, AtenTensorHandle t, TensorInfo* out);

}  // namespace slimtensor_metal

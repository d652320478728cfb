// tensor_access.h: what the MPS shims read from an AtenTensorHandle, through the core's exported functions.
//
// Note [Tensor access]
// The plugin never links the core: it reads tensors through functions the core hands out by name
// (st_core_table.core_symbol): the aoti_torch_get_* getters, plus slimtensor_tensor_memory_ref for the
// (buffer handle, byte offset) of a tensor's first element. That last one is an addition the plugin
// needs from the core (see README: "What the core must add"); without it, a tensor binds only when its
// data pointer is a host address inside a live buffer's shared contents (from_blob over contents), and
// any other tensor is refused with that explanation, never guessed at.
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
  AOTITorchError (*get_data_ptr)(AtenTensorHandle, void**) = nullptr;
  // Optional (the addition of Note [Tensor access]): (handle, byte offset) of the first element.
  AOTITorchError (*memory_ref)(AtenTensorHandle, st_memory_ref*) = nullptr;
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

// The accessors from the core's table (NULL entries where the core lacks a function).
TensorAccess tensor_access_from_core(const st_core_table* core);
// Replaces the accessors the shims use (tests); returns the previous ones.
TensorAccess set_tensor_access(const TensorAccess& a);
const TensorAccess& tensor_access();

// Reads `t` and resolves its memory; `what` names the argument in messages ("mm_out(): mat2").
// Requires the context lock (it resolves pointers in the registry).
class MetalContext;
int read_tensor_locked(MetalContext* ctx, const char* what, AtenTensorHandle t, TensorInfo* out);

}  // namespace slimtensor_metal

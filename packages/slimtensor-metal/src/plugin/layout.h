// layout.h: stride-aware byte extents of strided tensors (what a buffer must hold for a view to fit).
//
// Note [Stride-aware sizes]
// A view with sizes s and strides t (elements, >= 0) touches elements [0, 1 + sum((s_i - 1) * t_i)) from
// its first element, or none when any s_i is 0. That, not numel, is what its storage must hold: a padded
// row stride needs more than numel elements and an expanded (stride 0) view needs fewer. Every bounds
// check and every temporary of the plugin is sized with extent_bytes.
#pragma once

#include <cstdint>

namespace slimtensor_metal {

// Bytes spanned by the view (0 for an empty view); false (and a message) on negative sizes or strides, or
// on overflow. `fn` names the caller in the message.
bool extent_bytes(const char* fn, int32_t ndim, const int64_t* sizes, const int64_t* strides, int64_t itemsize,
                  uint64_t* out);
// numel, overflow-checked.
bool numel_of(const char* fn, int32_t ndim, const int64_t* sizes, uint64_t* out);

}  // namespace slimtensor_metal

// copy/copy_paths.h: the two ways copy_ moves planned elements: on the CPU, or through a device plugin.
#pragma once

#include <vector>

#include "slimtensor/tensor/tensor.h"

namespace slimtensor {

// dst and src on the CPU; src_strides are src's strides broadcast to dst's shape.
void copy_cpu(const Tensor& dst, const Tensor& src, const std::vector<int64_t>& src_strides);
// dst or src (or both) on a plugin device (copy/device_copy.cpp); never two views of one storage that
// share an element (copy_ clones such a source first). non_blocking: Note in slimtensor/copy/copy.h.
void copy_device(const Tensor& dst, const Tensor& src, const std::vector<int64_t>& src_strides, bool non_blocking);

}  // namespace slimtensor

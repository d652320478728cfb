// src/aoti/ops/conv_onednn.h: the oneDNN path of aoti_torch_cpu_convolution (Note [oneDNN convolution plans]).
#pragma once

#include <cstddef>

#include "aoti/ops/conv_geometry.h"
#include "slimtensor/tensor/tensor.h"

namespace slimtensor::aoti {

// Computes the convolution g of x with w (and bias b, may be null) into y, which the caller allocated with
// the result's sizes, dtype and strides. Returns false, having written nothing, when oneDNN is unavailable
// or has no fast primitive for the case (float64 and integer dtypes, empty tensors, ...): the caller then
// takes the im2col path. Throws Error when oneDNN fails while running.
bool convolution_onednn(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor& y,
                        const char* fn);

// How many plans the cache holds (for tests).
size_t onednn_convolution_plans();

}  // namespace slimtensor::aoti

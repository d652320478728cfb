// src/aoti/ops/conv_geometry.h: the shape of one convolution (sizes, stride, padding, dilation, groups), shared by its
// two paths (convolution.cpp's im2col + BLAS, conv_onednn.cpp's oneDNN primitives).
#pragma once

#include <cstdint>

namespace slimtensor::aoti {

// Every spatial rank is padded to 3-D with size-1 leading dims; nd is the real rank (1..3).
struct ConvGeometry {
  int nd = 2;
  bool transposed = false;
  int64_t n = 0, c = 0, oc = 0, groups = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dil[3] = {1, 1, 1}, opad[3] = {0, 0, 0};
  int64_t in_len() const { return in[0] * in[1] * in[2]; }
  int64_t out_len() const { return out[0] * out[1] * out[2]; }
  int64_t k_len() const { return k[0] * k[1] * k[2]; }
};

}  // namespace slimtensor::aoti

// conv_graph.h: one convolution problem as a cuDNN graph-API execution plan (Note [Convolution plans]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aoti_ops/cudnn_api.h"

namespace slimtensor_cuda::aoti_ops {

// What a plan depends on: everything but the data pointers. Tensors are x (the input), w (the weight) and y (the
// output), rank nd (4 or 5: 1-D convolutions as 2-D with a height of 1); a transposed convolution is cuDNN's
// backward-data with dy = x and dx = y. Groups are implied by x's channels over w's.
struct ConvProblem {
  int type = 0;  // cudnnDataType_t of x, w and y; float32 math (TF32 allowed, torch's default)
  bool transposed = false;
  int nd = 0;
  int64_t x_dims[5], x_strides[5], w_dims[5], w_strides[5], y_dims[5], y_strides[5];
  int64_t pad[3], stride[3], dilation[3];  // nd - 2 each
  int64_t x_align, w_align, y_align;       // bytes each data pointer is aligned to (1-16)

  // The cache key: every field, in order.
  std::vector<int64_t> key(int device) const;
};

class ConvGraphPlan {
 public:
  explicit ConvGraphPlan(const dnn::Api* api) : a_(api) {}
  ~ConvGraphPlan();
  ConvGraphPlan(const ConvGraphPlan&) = delete;
  ConvGraphPlan& operator=(const ConvGraphPlan&) = delete;

  // Builds the operation graph and the plan of the first engine cuDNN's heuristics rank that takes it:
  // 0, or nonzero with *why saying what failed (with cuDNN's own words).
  int build(dnn::Handle h, const ConvProblem& p, std::string* why);
  int64_t workspace_bytes() const { return workspace_; }
  // Queues the convolution on the handle's stream; a cuDNN status (0 on success), *why set on failure.
  dnn::Status run(dnn::Handle h, const void* x, const void* w, void* y, void* workspace, std::string* why) const;

 private:
  dnn::Desc make(int type, std::string* why, const char* what);
  int tensor(int64_t uid, int nd, const int64_t* dims, const int64_t* strides, int64_t align, int type, dnn::Desc* out,
             std::string* why);
  std::string reason(const char* what, dnn::Status st) const;

  const dnn::Api* a_;
  std::vector<dnn::Desc> owned_;  // every descriptor made for the plan, destroyed with it
  dnn::Desc plan_ = nullptr;
  int64_t workspace_ = 0;
};

}  // namespace slimtensor_cuda::aoti_ops

// src/aoti/ops/embedding_bag.cpp: the fallbacks aoti_torch_cpu__embedding_bag and _embedding_bag_forward_only
// (inference).
//
// Note [embedding_bag]
// As torch's CPU forward (EmbeddingBag.cpp) for tensors that do not require grad: index i belongs to bag
// offset2bag[i] = (the number of offsets <= i) - 1 (with include_last_offset the last offset only ends the
// last bag); rows equal to padding_idx (>= 0) are skipped. Modes: 0 sum (rows scaled by
// per_sample_weights: fused multiply-add as fbgemm does, float64 multiply then add), 1 mean (the sum, stored in the
// weight dtype, divided by the bag's row count; empty bags give 0), 2 max (elementwise, the first row of a bag or a
// strictly greater one wins, so NaN does not propagate; empty bags give 0). float16/bfloat16 accumulate in float32.
// Returned besides the (num_bags, D) result: offset2bag (empty in the sum mode's fast path: float weights
// with unit column stride and no padding_idx), bag_size (row counts; zeros in sum mode), max_indices
// (the winning row per bag and column in max mode, a copy of bag_size in mean mode, zeros in sum mode), all
// in indices' dtype.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "aoti/ops/op_args.h"
#include "aoti/ops/operands.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/copy/fill.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

Tensor filled(std::vector<int64_t> sizes, ScalarType dt, const std::vector<int64_t>& values) {
  Tensor t = empty(sizes, ScalarType::Int64, kCPUDevice);
  if (!values.empty())
    std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(int64_t));
  else
    fill_(t, Scalar::from_int(0));
  return dense_copy(t, dt);
}

template <typename W>
void bags(const W* w, int64_t D, const int64_t* idx, const std::vector<int64_t>& bag_of, int64_t num_bags, int mode,
          const W* psw, bool fused, int64_t padding_idx, W* out, std::vector<int64_t>& bag_size,
          std::vector<int64_t>& max_idx) {
  for (size_t i = 0; i < bag_of.size(); ++i) {
    const int64_t b = bag_of[i], row = idx[i];
    if (b < 0 || b >= num_bags) continue;
    if (row == padding_idx) continue;
    W* o = out + b * D;
    const W* x = w + row * D;
    if (mode == 2) {
      for (int64_t d = 0; d < D; ++d) {
        if (bag_size[b] == 0 || x[d] > o[d]) {
          o[d] = x[d];
          max_idx[b * D + d] = row;
        }
      }
    } else if (psw) {
      if (fused) {  // fbgemm's fused multiply-add (torch's fast path)
        for (int64_t d = 0; d < D; ++d) o[d] = std::fma(psw[i], x[d], o[d]);
      } else {  // torch's other path: a multiply, then an add
        for (int64_t d = 0; d < D; ++d) o[d] += psw[i] * x[d];
      }
    } else {
      for (int64_t d = 0; d < D; ++d) o[d] += x[d];
    }
    ++bag_size[b];
  }
}

AOTITorchError embedding_bag(const char* fn, bool forward_only, AtenTensorHandle weight, AtenTensorHandle indices,
                             AtenTensorHandle offsets, int64_t mode, AtenTensorHandle* per_sample_weights,
                             int32_t include_last_offset, int64_t padding_idx, AtenTensorHandle* ret0,
                             AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  return guarded(fn, [&] {
    const Tensor& w = cpu_arg(weight, fn, "weight");
    const Tensor& ix = cpu_arg(indices, fn, "indices");
    const Tensor& of = cpu_arg(offsets, fn, "offsets");
    const Tensor* ps =
        per_sample_weights && *per_sample_weights ? &cpu_arg(*per_sample_weights, fn, "per_sample_weights") : nullptr;
    for (AtenTensorHandle* r : {ret0, ret1, ret2, ret3}) out_arg(r, fn, "ret0..ret3");
    const ScalarType t = w.dtype();
    if (!info(t).is_floating || !info(t).convertible) {
      fail(ErrorKind::Type, fn, "(): weight must be float16, bfloat16, float32 or float64 but is ", name(t));
    }
    check_ndim(w, 2, fn, "weight");
    check_ndim(ix, 1, fn, "indices");
    check_ndim(of, 1, fn, "offsets");
    for (const Tensor* x : {&ix, &of}) {
      if (x->dtype() != ScalarType::Int64 && x->dtype() != ScalarType::Int32) {
        fail(ErrorKind::Type, fn, "(): indices and offsets must be int64 or int32 but one is ", name(x->dtype()));
      }
    }
    if (mode < 0 || mode > 2) fail(ErrorKind::Value, fn, "(): mode must be 0 (sum), 1 (mean) or 2 (max) but is ", mode);
    if (ps) {
      if (mode != 0)
        fail(ErrorKind::Value, fn, "(): per_sample_weights is only supported for mode 0 (sum) but mode is ", mode);
      check_same_dtype(w, *ps, fn, "weight", "per_sample_weights");
      if (ps->ndim() != 1 || ps->numel() != ix.numel()) {
        fail(ErrorKind::Value, fn, "(): per_sample_weights must be 1-D with one weight per index (", ix.numel(), ")");
      }
    }
    const int64_t num_weights = w.sizes()[0], D = w.sizes()[1], n = ix.numel();
    const int64_t num_bags = of.numel() - (include_last_offset ? 1 : 0);
    if (num_bags < 0) fail(ErrorKind::Value, fn, "(): include_last_offset needs at least one offset");
    Tensor idx = dense_copy(ix, ScalarType::Int64), off = dense_copy(of, ScalarType::Int64);
    const int64_t* ip = static_cast<const int64_t*>(idx.data_ptr());
    const int64_t* op = static_cast<const int64_t*>(off.data_ptr());
    if (of.numel() > 0 && op[0] != 0) {
      fail(ErrorKind::Value, fn, "(): offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start ",
           "from position 0. However, got ", op[0]);
    }
    for (int64_t i = 0; i < n; ++i) {
      if (ip[i] < 0 || ip[i] >= num_weights) {
        fail(ErrorKind::Index, fn, "(): indices[", i, "] = ", ip[i], " is out of range for a weight of ", num_weights,
             " rows");
      }
    }
    std::vector<int64_t> bag_of(static_cast<size_t>(n), -1);
    for (int64_t i = 0, b = -1, k = 0; i < n; ++i) {  // the number of offsets (those that start bags) <= i, less 1
      while (k < num_bags && op[k] <= i) ++k, ++b;
      bag_of[static_cast<size_t>(i)] = b;
    }
    // torch's fast path (fbgemm): float weights with unit column stride, no padding_idx
    const bool fast_sum = (t == ScalarType::Float32 || t == ScalarType::Float16 || t == ScalarType::BFloat16) &&
                          (D <= 1 || w.strides()[1] == 1) && padding_idx < 0 &&
                          (!ps || ps->numel() <= 1 || ps->strides()[0] == 1);
    const ScalarType acc = t == ScalarType::Float64 ? ScalarType::Float64 : ScalarType::Float32;
    Tensor wd = dense_copy(w, acc);
    Tensor psd = ps ? dense_copy(*ps, acc) : Tensor();
    std::vector<int64_t> out_sizes = {num_bags, D};
    Tensor out = empty(out_sizes, acc, kCPUDevice, fn);
    fill_(out, Scalar::from_double(0.0));
    std::vector<int64_t> bag_size(static_cast<size_t>(std::max<int64_t>(num_bags, 0)), 0);
    std::vector<int64_t> max_idx(mode == 2 ? static_cast<size_t>(num_bags * D) : 0, 0);
    if (acc == ScalarType::Float64) {
      bags(static_cast<const double*>(wd.data_ptr()), D, ip, bag_of, num_bags, static_cast<int>(mode),
           ps ? static_cast<const double*>(psd.data_ptr()) : nullptr, false, padding_idx,
           static_cast<double*>(out.data_ptr()), bag_size, max_idx);
    } else {
      bags(static_cast<const float*>(wd.data_ptr()), D, ip, bag_of, num_bags, static_cast<int>(mode),
           ps ? static_cast<const float*>(psd.data_ptr()) : nullptr, fast_sum, padding_idx,
           static_cast<float*>(out.data_ptr()), bag_size, max_idx);
    }
    Tensor result = empty(out_sizes, t, kCPUDevice, fn);
    copy_(result, out);  // the sum (or max) in the weight dtype
    if (mode == 1) {     // mean: that sum divided by the row count, in the weight dtype's rounding
      Tensor r = dense_copy(result, acc);
      for (int64_t b = 0; b < num_bags; ++b) {
        const int64_t c = std::max<int64_t>(bag_size[b], 1);
        for (int64_t d = 0; d < D; ++d) {
          if (acc == ScalarType::Float64)
            static_cast<double*>(r.data_ptr())[b * D + d] /= static_cast<double>(c);
          else
            static_cast<float*>(r.data_ptr())[b * D + d] /= static_cast<float>(c);
        }
      }
      copy_(result, r);
    }
    const ScalarType it = ix.dtype();
    std::vector<int64_t> o2b_sizes = {mode == 0 && fast_sum ? 0 : n};
    Tensor o2b = filled(o2b_sizes, it, mode == 0 && fast_sum ? std::vector<int64_t>{} : bag_of);
    // bag_size and max_indices (but max mode's): one per bag, except in sum mode of the forward-only op, where
    // torch sizes them like offsets.
    const int64_t bs_len = mode == 0 && forward_only ? of.numel() : num_bags;
    Tensor bs = filled(std::vector<int64_t>{bs_len}, it, mode == 0 ? std::vector<int64_t>{} : bag_size);
    Tensor mx = mode == 2 ? filled(out_sizes, it, max_idx)
                          : filled(std::vector<int64_t>{bs_len}, it, mode == 1 ? bag_size : std::vector<int64_t>{});
    return_handles(fn, {&result, &o2b, &bs, &mx}, {ret0, ret1, ret2, ret3});
  });
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu__embedding_bag(AtenTensorHandle weight, AtenTensorHandle indices,
                                             AtenTensorHandle offsets, int32_t scale_grad_by_freq, int64_t mode,
                                             int32_t sparse, AtenTensorHandle* per_sample_weights,
                                             int32_t include_last_offset, int64_t padding_idx, AtenTensorHandle* ret0,
                                             AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  return embedding_bag("aoti_torch_cpu__embedding_bag", false, weight, indices, offsets, mode, per_sample_weights,
                       include_last_offset, padding_idx, ret0, ret1, ret2, ret3);
}

AOTITorchError aoti_torch_cpu__embedding_bag_forward_only(AtenTensorHandle weight, AtenTensorHandle indices,
                                                          AtenTensorHandle offsets, int32_t scale_grad_by_freq,
                                                          int64_t mode, int32_t sparse,
                                                          AtenTensorHandle* per_sample_weights,
                                                          int32_t include_last_offset, int64_t padding_idx,
                                                          AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                                          AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  return embedding_bag("aoti_torch_cpu__embedding_bag_forward_only", true, weight, indices, offsets, mode,
                       per_sample_weights, include_last_offset, padding_idx, ret0, ret1, ret2, ret3);
}

}  // extern "C"

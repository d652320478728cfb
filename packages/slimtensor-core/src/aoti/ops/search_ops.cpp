// src/aoti/ops/search_ops.cpp: the binary-search fallbacks aoti_torch_cpu_searchsorted_Tensor, _searchsorted_Scalar and
// _bucketize_Tensor.
//
// Note [searchsorted]
// As torch's CPU kernel (Bucketization.cpp): for each value v of self, the position in its row of
// sorted_sequence (the whole sequence when it is 1-D, else the row with the same leading indices) of the
// first element e with !(e < v) (left) or e > v (right), comparisons as written there, so a NaN value goes
// to the end. `side` ("left"/"right", NULL = unset) overrides `right`; side "left" with right = true is an
// error. `sorter` (int64, sorted_sequence's shape) gives the order of each row. Different dtypes are
// compared in their result_type (Note [Type promotion in the fallbacks]); the Scalar overload's value is a
// wrapped number. The result is contiguous int64 (int32 with out_int32), shaped like self.
#include <cstring>
#include <string>
#include <vector>

#include "aoti/ops/dtype_dispatch.h"
#include "aoti/ops/op_args.h"
#include "aoti/ops/operands.h"
#include "aoti/ops/promotion.h"
#include "runtime/parallel.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

template <typename K>
int64_t bound(const K* row, const int64_t* sort, int64_t n, K v, bool right) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    const K e = sort ? row[sort[mid]] : row[mid];
    if (right ? !(e > v) : !(e >= v)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

template <typename K>
void search(const Tensor& seq, const Tensor& vals, const Tensor* sorter, bool right, const Tensor& out) {
  const K* sp = static_cast<const K*>(seq.data_ptr());
  const K* vp = static_cast<const K*>(vals.data_ptr());
  const int64_t* st = sorter ? static_cast<const int64_t*>(sorter->data_ptr()) : nullptr;
  const int64_t n = seq.ndim() == 0 ? 1 : seq.sizes()[seq.ndim() - 1];
  const int64_t per_row = vals.ndim() == 0 ? 1 : vals.sizes()[vals.ndim() - 1];
  const bool one_row = seq.ndim() <= 1;
  const bool i32 = out.dtype() == ScalarType::Int32;
  void* op = out.data_ptr();
  parallel_for(vals.numel(), 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t row = one_row ? 0 : i / per_row;
      const int64_t pos = bound(sp + row * n, st ? st + row * n : nullptr, n, vp[i], right);
      if (i32) {
        static_cast<int32_t*>(op)[i] = static_cast<int32_t>(pos);
      } else {
        static_cast<int64_t*>(op)[i] = pos;
      }
    }
  });
}

void check_search_dtype(ScalarType t, const char* fn, const char* arg) { check_real_op_dtype(t, false, fn, arg); }

// searchsorted of `self` (a tensor, or the wrapped number `scalar` when self is NULL) in seq.
Tensor searchsorted(const char* fn, const Tensor& seq, const Tensor* self, double scalar, bool out_int32, bool right,
                    const char** side, const Tensor* sorter) {
  if (side && *side) {
    const std::string s(*side);
    if (s != "left" && s != "right") {
      fail(ErrorKind::Value, fn, "(): side must be \"left\" or \"right\" but is \"", s, "\"");
    }
    if (s == "left" && right) {
      fail(ErrorKind::Value, fn, "(): side and right can't be set to opposites, got side of left while right was True");
    }
    right = s == "right";
  }
  Tensor value_tensor;
  if (!self) {
    value_tensor = full(IntList(), Scalar::from_double(scalar), ScalarType::Float64, kCPUDevice);
  }
  const Tensor& v = self ? *self : value_tensor;
  if (seq.ndim() == 0) {
    fail(ErrorKind::Value, fn, "(): sorted_sequence must have at least 1 dim but is 0-d; give it a dim");
  }
  if (seq.ndim() > 1) {
    bool match = v.ndim() == seq.ndim();
    for (int d = 0; match && d + 1 < seq.ndim(); ++d) match = v.sizes()[d] == seq.sizes()[d];
    if (!match) {
      fail(ErrorKind::Value, fn, "(): sorted_sequence is ", seq.ndim(), "-D, so its first ", seq.ndim() - 1,
           " dims must equal self's (", v.ndim(), "-D); or pass a 1-D sorted_sequence");
    }
  }
  if (sorter) {
    if (sorter->dtype() != ScalarType::Int64) {
      fail(ErrorKind::Type, fn, "(): sorter must be int64 but is ", name(sorter->dtype()));
    }
    bool same = sorter->ndim() == seq.ndim();
    for (int d = 0; same && d < seq.ndim(); ++d) same = sorter->sizes()[d] == seq.sizes()[d];
    if (!same) fail(ErrorKind::Value, fn, "(): sorter must have sorted_sequence's shape");
  }
  check_search_dtype(seq.dtype(), fn, "sorted_sequence");
  ScalarType common = seq.dtype();
  if (v.dtype() != seq.dtype()) {
    common = result_type(seq.dtype(), Operand::Dimensioned, v.dtype(),
                         !self           ? Operand::WrappedNumber
                         : v.ndim() == 0 ? Operand::ZeroDim
                                         : Operand::Dimensioned,
                         fn);
  }
  check_search_dtype(common, fn, "self");
  Tensor out = empty(IntList(v.sizes(), v.ndim()), out_int32 ? ScalarType::Int32 : ScalarType::Int64, kCPUDevice, fn);
  if (v.numel() == 0) return out;
  // Compare in the common dtype, widened exactly: float64 for floating, int64 for integers.
  const ScalarType key = info(common).is_floating ? ScalarType::Float64 : ScalarType::Int64;
  Tensor s = dense_copy(common == seq.dtype() ? seq : dense_copy(seq, common), key);
  Tensor x = dense_copy(common == v.dtype() ? v : dense_copy(v, common), key);
  Tensor so;
  if (sorter) {
    so = dense_copy(*sorter, ScalarType::Int64);
    const int64_t n = seq.sizes()[seq.ndim() - 1];
    const int64_t* p = static_cast<const int64_t*>(so.data_ptr());
    for (int64_t i = 0; i < so.numel(); ++i) {
      if (p[i] < 0 || p[i] >= n) {
        fail(ErrorKind::Index, fn, "(): sorter holds ", p[i], " but its values index a row of ", n,
             " elements; they must be in [0, ", n, ")");
      }
    }
  }
  if (seq.sizes()[seq.ndim() - 1] == 0) {
    std::memset(out.data_ptr(), 0, static_cast<size_t>(out.nbytes()));
    return out;
  }
  if (key == ScalarType::Float64) {
    search<double>(s, x, sorter ? &so : nullptr, right, out);
  } else {
    search<int64_t>(s, x, sorter ? &so : nullptr, right, out);
  }
  return out;
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu_searchsorted_Tensor(AtenTensorHandle sorted_sequence, AtenTensorHandle self,
                                                  int32_t out_int32, int32_t right, const char** side,
                                                  AtenTensorHandle* sorter, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_searchsorted_Tensor";
  return guarded(fn, [&] {
    const Tensor& seq = cpu_arg(sorted_sequence, fn, "sorted_sequence");
    const Tensor& v = cpu_arg(self, fn, "self");
    const Tensor* so = sorter && *sorter ? &cpu_arg(*sorter, fn, "sorter") : nullptr;
    out_arg(ret0, fn, "ret0");
    *ret0 = make_handle(searchsorted(fn, seq, &v, 0.0, out_int32 != 0, right != 0, side, so), fn);
  });
}

AOTITorchError aoti_torch_cpu_searchsorted_Scalar(AtenTensorHandle sorted_sequence, double self, int32_t out_int32,
                                                  int32_t right, const char** side, AtenTensorHandle* sorter,
                                                  AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_searchsorted_Scalar";
  return guarded(fn, [&] {
    const Tensor& seq = cpu_arg(sorted_sequence, fn, "sorted_sequence");
    const Tensor* so = sorter && *sorter ? &cpu_arg(*sorter, fn, "sorter") : nullptr;
    out_arg(ret0, fn, "ret0");
    if (seq.ndim() != 1) {
      fail(ErrorKind::Value, fn, "(): a scalar value needs a 1-D sorted_sequence but it is ", seq.ndim(), "-D");
    }
    *ret0 = make_handle(searchsorted(fn, seq, nullptr, self, out_int32 != 0, right != 0, side, so), fn);
  });
}

AOTITorchError aoti_torch_cpu_bucketize_Tensor(AtenTensorHandle self, AtenTensorHandle boundaries, int32_t out_int32,
                                               int32_t right, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_bucketize_Tensor";
  return guarded(fn, [&] {
    const Tensor& v = cpu_arg(self, fn, "self");
    const Tensor& b = cpu_arg(boundaries, fn, "boundaries");
    out_arg(ret0, fn, "ret0");
    if (b.ndim() != 1) fail(ErrorKind::Value, fn, "(): boundaries must be 1-D but is ", b.ndim(), "-D");
    *ret0 = make_handle(searchsorted(fn, b, &v, 0.0, out_int32 != 0, right != 0, nullptr, nullptr), fn);
  });
}

}  // extern "C"

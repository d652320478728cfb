// src/aoti/ops/index_put.cpp: the fallback aoti_torch_cpu_index_put (self.clone() with self[indices] = values, or +=
// values).
//
// Note [index_put]
// torch's advanced indexing: `indices` is a list of optional tensors, one per leading dim of self (NULL, or a
// handle holding NULL, is a full slice). bool/uint8 masks stand for the int64 indices of their true
// elements over the dims they cover; int64/int32 indices may be negative (counted from the end). The
// index tensors broadcast to one shape B; the indexed view has shape self[:first] + B + self[last+1:] when
// the indexed dims are adjacent, else B + the sliced dims; values broadcast to it. Elements are written
// in row-major order of the indexed view, so with duplicate indices the last write wins, and accumulate
// adds in that order in the element type's arithmetic (float16/bfloat16 round each step), as torch's
// serial CPU loop does. (torch adds float32 with parallel atomics, so its own sums over duplicates are not
// ordered.) aoti_torch_cpu_index_put returns a new tensor laid out like self (clone's preserve_format);
// aoti_torch_index_put_out (torch's c/shim.h, what inductor's IndexPutFallback calls) writes into out,
// which may be self.
#include <algorithm>
#include <cstring>
#include <vector>

#include "aoti/ops/dtype_dispatch.h"
#include "aoti/ops/gemm.h"
#include "aoti/ops/op_args.h"
#include "aoti/ops/operands.h"
#include "aoti/ops/reduced_float.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/clone.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage_impl() == b.storage_impl() && a.storage_offset() == b.storage_offset() && a.dtype() == b.dtype() &&
         a.ndim() == b.ndim() && std::memcmp(a.sizes(), b.sizes(), sizeof(int64_t) * a.ndim()) == 0 &&
         std::memcmp(a.strides(), b.strides(), sizeof(int64_t) * a.ndim()) == 0;
}

// The broadcast of shapes a and b, or an error naming fn.
std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const char* what,
                               const char* fn) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t sa = i + a.size() >= n ? a[i + a.size() - n] : 1, sb = i + b.size() >= n ? b[i + b.size() - n] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      fail(ErrorKind::Value, fn, "(): ", what, " do not broadcast: size ", sa, " against ", sb);
    }
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

template <typename W, typename R>
void put(W* o, const int64_t* osz, int nd, const std::vector<const int64_t*>& idx, const std::vector<int64_t>& bshape,
         const std::vector<int64_t>& rshape, int first, int last, bool adjacent, const W* vals, bool accumulate) {
  int64_t ostr[64];
  for (int d = nd - 1, s = 1; d >= 0; --d) {
    ostr[d] = s;
    s *= osz[d];
  }
  const int nb = static_cast<int>(bshape.size()), nr = static_cast<int>(rshape.size());
  int64_t total = 1;
  for (int64_t s : rshape) total *= s;
  std::vector<int64_t> r(static_cast<size_t>(nr), 0);
  const int b0 = adjacent ? first : 0;  // where B's coordinates sit among the view's
  for (int64_t k = 0; k < total; ++k) {
    int64_t b = 0;  // linear index into B
    for (int i = 0; i < nb; ++i) b = b * bshape[i] + r[b0 + i];
    int64_t off = 0;
    for (int d = 0, rest = 0; d < nd; ++d) {
      if (idx[d]) {
        off += idx[d][b] * ostr[d];
      } else {
        // a sliced dim: its coordinate in the view
        const int pos = !adjacent ? nb + rest : d < first ? d : first + nb + (d - last - 1);
        ++rest;
        off += r[pos] * ostr[d];
      }
    }
    if (accumulate) {
      if constexpr (std::is_integral_v<W>) {
        o[off] = static_cast<W>(static_cast<uint64_t>(o[off]) + static_cast<uint64_t>(vals[k]));  // wraps
      } else {
        o[off] = R::round(o[off] + vals[k]);
      }
    } else {
      o[off] = vals[k];
    }
    for (int d = nr - 1; d >= 0; --d) {
      if (++r[d] < rshape[d]) break;
      r[d] = 0;
    }
  }
}

}  // namespace

namespace {

// out = self (out may be self), then out[indices] = values (or += with accumulate); indices[i] NULL = a slice.
void index_put_into(const char* fn, const Tensor& out, const Tensor& s, const std::vector<const Tensor*>& indices,
                    const Tensor& v, bool accumulate) {
  const int64_t indices_len_ = static_cast<int64_t>(indices.size());
  check_real_op_dtype(s.dtype(), true, fn, "self");
  check_same_dtype(s, v, fn, "self", "values");
  const int nd = s.ndim();
  // One int64 index tensor (or none) per dim of self, masks expanded to their true elements' coordinates.
  std::vector<Tensor> per_dim(static_cast<size_t>(nd));
  int d = 0;
  for (int64_t i = 0; i < indices_len_; ++i) {
    const Tensor* t = indices[static_cast<size_t>(i)];
    const int covers =
        t && (t->dtype() == ScalarType::Bool || t->dtype() == ScalarType::UInt8) ? std::max(t->ndim(), 1) : 1;
    if (d + covers > nd) {
      fail(ErrorKind::Index, fn, "(): too many indices for a tensor of dimension ", nd, " (got ", indices_len_, ")");
    }
    if (!t) {
      ++d;
      continue;
    }
    if (t->dtype() == ScalarType::Bool || t->dtype() == ScalarType::UInt8) {
      Tensor m = dense_copy(t->ndim() == 0 ? unsqueeze(*t, 0) : *t, ScalarType::Bool);
      for (int k = 0; k < m.ndim(); ++k) {
        if (m.sizes()[k] != s.sizes()[d + k]) {
          fail(ErrorKind::Index, fn, "(): the shape of the mask indices[", i, "] does not match self's at dim ", d + k,
               " (", m.sizes()[k], " against ", s.sizes()[d + k], ")");
        }
      }
      std::vector<std::vector<int64_t>> coords(static_cast<size_t>(m.ndim()));
      std::vector<int64_t> c(static_cast<size_t>(m.ndim()), 0);
      const bool* mp = static_cast<const bool*>(m.data_ptr());
      for (int64_t e = 0; e < m.numel(); ++e) {
        if (mp[e]) {
          for (int k = 0; k < m.ndim(); ++k) coords[k].push_back(c[k]);
        }
        for (int k = m.ndim() - 1; k >= 0; --k) {
          if (++c[k] < m.sizes()[k]) break;
          c[k] = 0;
        }
      }
      for (int k = 0; k < m.ndim(); ++k) {
        std::vector<int64_t> n1 = {static_cast<int64_t>(coords[k].size())};
        Tensor col = empty(n1, ScalarType::Int64, kCPUDevice, fn);
        std::copy(coords[k].begin(), coords[k].end(), static_cast<int64_t*>(col.data_ptr()));
        per_dim[d + k] = col;
      }
      d += m.ndim();
    } else if (t->dtype() == ScalarType::Int64 || t->dtype() == ScalarType::Int32) {
      per_dim[d++] = *t;
    } else {
      fail(ErrorKind::Type, fn, "(): indices[", i, "] is ", name(t->dtype()),
           " but tensors used as indices must be int64, int32, uint8 or bool");
    }
  }
  std::vector<int64_t> bshape;
  int first = -1, last = -1, count = 0;
  for (int k = 0; k < nd; ++k) {
    if (!per_dim[k].defined()) continue;
    bshape = count == 0
                 ? std::vector<int64_t>(per_dim[k].sizes(), per_dim[k].sizes() + per_dim[k].ndim())
                 : broadcast(bshape, std::vector<int64_t>(per_dim[k].sizes(), per_dim[k].sizes() + per_dim[k].ndim()),
                             "the index tensors", fn);
    if (first < 0) first = k;
    last = k;
    ++count;
  }
  if (out.ndim() != nd || std::memcmp(out.sizes(), s.sizes(), sizeof(int64_t) * nd) != 0) {
    fail(ErrorKind::Value, fn, "(): out must have self's shape");
  }
  check_same_dtype(out, s, fn, "out", "self");
  if (!same_view(out, s)) copy_(out, memory_overlaps(out, s) ? clone(s) : s);
  if (count == 0) {  // no index: self[...] = values
    copy_(out, v);
    return;
  }
  const bool adjacent = last - first + 1 == count;
  std::vector<int64_t> rshape;
  if (adjacent) {
    rshape.assign(s.sizes(), s.sizes() + first);
    rshape.insert(rshape.end(), bshape.begin(), bshape.end());
    rshape.insert(rshape.end(), s.sizes() + last + 1, s.sizes() + nd);
  } else {
    rshape = bshape;
    for (int k = 0; k < nd; ++k) {
      if (!per_dim[k].defined()) rshape.push_back(s.sizes()[k]);
    }
  }
  std::vector<int64_t> vb =
      broadcast(rshape, std::vector<int64_t>(v.sizes(), v.sizes() + v.ndim()), "values and the indexed shape", fn);
  if (vb != rshape) {
    fail(ErrorKind::Value, fn, "(): values of shape (", v.ndim(), "-D) cannot be broadcast to the indexed shape");
  }
  // Index tensors broadcast to B, bounds-checked and wrapped.
  std::vector<Tensor> idx_dense(static_cast<size_t>(nd));
  std::vector<const int64_t*> idx(static_cast<size_t>(nd), nullptr);
  for (int k = 0; k < nd; ++k) {
    if (!per_dim[k].defined()) continue;
    idx_dense[k] = dense_copy(expand(per_dim[k], bshape), ScalarType::Int64);
    int64_t* p = static_cast<int64_t*>(idx_dense[k].data_ptr());
    for (int64_t e = 0; e < idx_dense[k].numel(); ++e) {
      if (p[e] < -s.sizes()[k] || p[e] >= s.sizes()[k]) {
        fail(ErrorKind::Index, fn, "(): index ", p[e], " is out of bounds for dimension ", k, " with size ",
             s.sizes()[k]);
      }
      if (p[e] < 0) p[e] += s.sizes()[k];
    }
    idx[k] = p;
  }
  int64_t total = 1;
  for (int64_t x : rshape) total *= x;
  if (total > 0) {
    const ScalarType t = s.dtype();
    const ScalarType w = t == ScalarType::Float64 ? ScalarType::Float64
                         : info(t).is_floating    ? ScalarType::Float32
                                                  : ScalarType::Int64;
    Tensor o = dense_copy(out, w);
    Tensor vals = dense_copy(expand(v, rshape), w);
    auto go = [&](auto* op, auto round) {
      using W = std::remove_pointer_t<decltype(op)>;
      put<W, decltype(round)>(op, o.sizes(), nd, idx, bshape, rshape, first, last, adjacent,
                              static_cast<const W*>(vals.data_ptr()), accumulate);
    };
    if (w == ScalarType::Float64)
      go(static_cast<double*>(o.data_ptr()), NoRound{});
    else if (w == ScalarType::Int64)
      go(static_cast<int64_t*>(o.data_ptr()), NoRound{});
    else if (t == ScalarType::Float16)
      go(static_cast<float*>(o.data_ptr()), RoundF16{});
    else if (t == ScalarType::BFloat16)
      go(static_cast<float*>(o.data_ptr()), RoundBF16{});
    else
      go(static_cast<float*>(o.data_ptr()), NoRound{});
    copy_(out, o);
  }
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu_index_put(AtenTensorHandle self, const AtenTensorHandle** indices, int64_t indices_len_,
                                        AtenTensorHandle values, int32_t accumulate, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_index_put";
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    const Tensor& v = cpu_arg(values, fn, "values");
    out_arg(ret0, fn, "ret0");
    if (indices_len_ < 0 || (indices_len_ > 0 && !indices)) {
      fail(ErrorKind::Value, fn, "(): indices must point at indices_len_ (", indices_len_, ") entries");
    }
    std::vector<const Tensor*> ix;
    for (int64_t i = 0; i < indices_len_; ++i) {
      ix.push_back(indices[i] && *indices[i] ? &cpu_arg(*indices[i], fn, "indices[i]") : nullptr);
    }
    Tensor out = empty_like(s);
    index_put_into(fn, out, s, ix, v, accumulate != 0);
    *ret0 = make_handle(std::move(out), fn);
  });
}

AOTITorchError aoti_torch_index_put_out(AtenTensorHandle out, AtenTensorHandle self, const AtenTensorHandle* indices,
                                        const uint32_t num_indices, const AtenTensorHandle values, bool accumulate) {
  const char* fn = "aoti_torch_index_put_out";
  return guarded(fn, [&] {
    const Tensor& o = cpu_arg(out, fn, "out");
    const Tensor& s = cpu_arg(self, fn, "self");
    const Tensor& v = cpu_arg(values, fn, "values");
    if (num_indices > 0 && !indices) fail(ErrorKind::Value, fn, "(): indices is NULL but num_indices is ", num_indices);
    std::vector<const Tensor*> ix;
    for (uint32_t i = 0; i < num_indices; ++i)
      ix.push_back(indices[i] ? &cpu_arg(indices[i], fn, "indices[i]") : nullptr);
    index_put_into(fn, o, s, ix, v, accumulate);
  });
}

}  // extern "C"

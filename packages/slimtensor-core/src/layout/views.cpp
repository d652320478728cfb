// layout/views.cpp: view operations: new tensors over the same storage, checked by Tensor::make.
#include "slimtensor/layout/views.h"

#include <algorithm>

#include "layout/layout.h"
#include "slimtensor/base/error.h"
#include "slimtensor/copy/clone.h"
#include "slimtensor/copy/copy.h"

namespace slimtensor {
namespace {

Tensor remake(const Tensor& self, Dims dims, int64_t offset, const char* op) {
  return Tensor::make(self.storage(), std::move(dims), offset, self.dtype(), op);
}

// self's dims without those for which drop(i) is true (select, squeeze).
template <class Drop>
Dims without_dims(const Tensor& self, Drop drop) {
  const int n = self.ndim();
  int kept = 0;
  for (int i = 0; i < n; ++i) kept += !drop(i);
  Dims out(kept);
  for (int i = 0, j = 0; i < n; ++i) {
    if (drop(i)) continue;
    out.sizes()[j] = self.sizes()[i];
    out.strides()[j] = self.strides()[i];
    ++j;
  }
  return out;
}

}  // namespace

Tensor as_strided(const Tensor& self, IntList sizes, IntList strides, std::optional<int64_t> storage_offset) {
  return Tensor::make(self.storage(), sizes, strides, storage_offset.value_or(self.storage_offset()), self.dtype(),
                      "as_strided");
}

Tensor permute(const Tensor& self, IntList dims) {
  const int n = self.ndim();
  ST_CHECK(dims.size == n, Value, "permute(): expected ", n, " dims (one per dim of the tensor) but got ", dims.size);
  Dims out(n);
  uint64_t seen = 0;  // n <= 64 (Tensor::make)
  for (int i = 0; i < n; ++i) {
    const int64_t d = wrap_dim(dims[i], n, "permute()");
    ST_CHECK(!(seen >> d & 1), Value, "permute(): dim ", d,
             " appears more than once in the permutation; "
             "each dim must appear exactly once");
    seen |= uint64_t{1} << d;
    out.sizes()[i] = self.sizes()[d];
    out.strides()[i] = self.strides()[d];
  }
  return remake(self, std::move(out), self.storage_offset(), "permute");
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  const int n = self.ndim();
  const int64_t a = wrap_dim(dim0, n, "transpose()"), b = wrap_dim(dim1, n, "transpose()");
  Dims out = self.dims();
  if (n > 0) {
    std::swap(out.sizes()[a], out.sizes()[b]);
    std::swap(out.strides()[a], out.strides()[b]);
  }
  return remake(self, std::move(out), self.storage_offset(), "transpose");
}

Tensor reverse_dims(const Tensor& self) {
  const int n = self.ndim();
  Dims out(n);
  for (int i = 0; i < n; ++i) {
    out.sizes()[i] = self.sizes()[n - 1 - i];
    out.strides()[i] = self.strides()[n - 1 - i];
  }
  return remake(self, std::move(out), self.storage_offset(), "T");
}

Tensor matrix_transpose(const Tensor& self) {
  ST_CHECK(self.ndim() >= 2, Value, "mT: expected a tensor with at least 2 dims but got ", self.ndim());
  return transpose(self, -2, -1);
}

Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  const int n = self.ndim();
  ST_CHECK(n > 0, Index, "select(): cannot select on a 0-d tensor");
  const int64_t d = wrap_dim(dim, n, "select()");
  const int64_t size = self.sizes()[d];
  ST_CHECK(index >= -size && index < size, Index, "select(): index ", index, " is out of bounds for dimension ", d,
           " with size ", size);
  if (index < 0) index += size;
  return remake(self, without_dims(self, [d](int i) { return i == d; }),
                self.storage_offset() + index * self.strides()[d], "select");
}

Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  const int n = self.ndim();
  ST_CHECK(n > 0, Index, "narrow(): cannot narrow a 0-d tensor");
  const int64_t d = wrap_dim(dim, n, "narrow()");
  const int64_t size = self.sizes()[d];
  ST_CHECK(start >= -size && start <= size, Index, "narrow(): start ", start, " is out of range for dimension ", d,
           " of size ", size);
  if (start < 0) start += size;
  ST_CHECK(length >= 0 && length <= size - start, Index, "narrow(): start (", start, ") + length (", length,
           ") exceeds dimension size (", size, ")");
  Dims out = self.dims();
  out.sizes()[d] = length;
  return remake(self, std::move(out), offset_at(self.storage_offset(), start, self.strides()[d]), "narrow");
}

Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start_opt, std::optional<int64_t> stop_opt,
             int64_t step) {
  const int n = self.ndim();
  ST_CHECK(n > 0, Index, "slice(): cannot slice a 0-d tensor");
  const int64_t d = wrap_dim(dim, n, "slice()");
  ST_CHECK(step > 0, Value, "slice(): step must be positive but got ", step,
           "; negative steps would need negative strides, which slimtensor rejects (copy, then index instead)");
  const int64_t size = self.sizes()[d];
  auto clamp = [size](int64_t v) {
    if (v < 0) v += size;
    return std::min(std::max<int64_t>(v, 0), size);
  };
  const int64_t start = start_opt ? clamp(*start_opt) : 0;
  const int64_t stop = stop_opt ? clamp(*stop_opt) : size;
  const int64_t length = stop > start ? (stop - start + step - 1) / step : 0;
  Dims out = self.dims();
  out.sizes()[d] = length;
  int64_t new_stride = 0;
  ST_CHECK(!__builtin_mul_overflow(self.strides()[d], step, &new_stride), Value,
           "slice(): stride * step overflows int64");
  out.strides()[d] = new_stride;
  return remake(self, std::move(out), offset_at(self.storage_offset(), start, self.strides()[d]), "slice");
}

Tensor unsqueeze(const Tensor& self, int64_t dim) {
  const int n = self.ndim();
  const int64_t d = wrap_dim(dim, n + 1, "unsqueeze()");
  Dims out(n + 1);
  for (int i = 0, j = 0; i <= n; ++i) {
    if (i == d) {
      out.sizes()[i] = 1;
      // PyTorch: the new dim's stride is size*stride of the dim after it (1 at the end).
      out.strides()[i] = d < n ? self.sizes()[d] * self.strides()[d] : 1;
      continue;
    }
    out.sizes()[i] = self.sizes()[j];
    out.strides()[i] = self.strides()[j];
    ++j;
  }
  return remake(self, std::move(out), self.storage_offset(), "unsqueeze");
}

Tensor squeeze(const Tensor& self, int64_t dim) {
  const int n = self.ndim();
  const int64_t d = wrap_dim(dim, n, "squeeze()");
  if (n == 0 || self.sizes()[d] != 1) return remake(self, self.dims(), self.storage_offset(), "squeeze");
  return remake(self, without_dims(self, [d](int i) { return i == d; }), self.storage_offset(), "squeeze");
}

Tensor squeeze_all(const Tensor& self) {
  return remake(self, without_dims(self, [&self](int i) { return self.sizes()[i] == 1; }), self.storage_offset(),
                "squeeze");
}

Tensor expand(const Tensor& self, IntList sizes) {
  const int n = self.ndim();
  const int64_t m = sizes.size;
  ST_CHECK(m >= n, Value, "expand(): the number of sizes provided (", m,
           ") must be greater or equal to the number of dimensions in the tensor (", n, ")");
  ST_CHECK(m <= 64, Value, "expand(): at most 64 dims are supported but got ", m);
  Dims out(static_cast<int>(m));
  for (int64_t i = m - 1; i >= 0; --i) {
    const int64_t j = i - (m - n);  // matching dim of self, or < 0 for a new leading dim
    int64_t want = sizes[i];
    if (j < 0) {
      ST_CHECK(want >= 0, Value, "expand(): size ", want, " is not allowed for a new leading dim ", i,
               " (-1 only keeps an existing size)");
      out.sizes()[i] = want;
      // PyTorch's inferExpandGeometry: a new dim of size 1 strides over the dims after it.
      out.strides()[i] = want != 1 ? 0 : (i + 1 < m ? out.sizes()[i + 1] * out.strides()[i + 1] : 1);
      continue;
    }
    const int64_t have = self.sizes()[j];
    if (want == -1) want = have;
    ST_CHECK(want >= 0, Value, "expand(): sizes must be >= 0 or -1 but got ", sizes[i], " at dim ", i);
    if (have == want) {
      out.sizes()[i] = have;
      out.strides()[i] = self.strides()[j];
    } else {
      ST_CHECK(have == 1, Value, "expand(): the expanded size (", want, ") must match the existing size (", have,
               ") at non-singleton dimension ", i, "; only size-1 dims can grow");
      out.sizes()[i] = want;
      out.strides()[i] = 0;
    }
  }
  return remake(self, std::move(out), self.storage_offset(), "expand");
}

Tensor view(const Tensor& self, IntList shape) {
  ST_CHECK(shape.size <= 64, Value, "view(): at most 64 dims are supported but got ", shape.size);
  int64_t resolved[64], strides[64];
  infer_shape_into(shape, self.numel(), "view()", resolved);
  const IntList new_shape(resolved, shape.size);
  ST_CHECK(
      view_strides_into(IntList(self.sizes(), self.ndim()), IntList(self.strides(), self.ndim()), new_shape, strides),
      Runtime,
      "view(): view size is not compatible with input tensor's size and stride (at least one dimension "
      "spans across two contiguous subspaces); use .reshape(...), which copies when it must");
  return Tensor::make(self.storage(), new_shape, IntList(strides, shape.size), self.storage_offset(), self.dtype(),
                      "view");
}

Tensor reshape(const Tensor& self, IntList shape) {
  ST_CHECK(shape.size <= 64, Value, "reshape(): at most 64 dims are supported but got ", shape.size);
  int64_t resolved[64], strides[64];
  infer_shape_into(shape, self.numel(), "reshape()", resolved);
  const IntList new_shape(resolved, shape.size);
  if (view_strides_into(IntList(self.sizes(), self.ndim()), IntList(self.strides(), self.ndim()), new_shape, strides)) {
    return Tensor::make(self.storage(), new_shape, IntList(strides, shape.size), self.storage_offset(), self.dtype(),
                        "reshape");
  }
  Tensor dense = clone(self, MemoryFormat::Contiguous);
  contiguous_strides(resolved, static_cast<int>(shape.size), strides);
  return Tensor::make(dense.storage(), new_shape, IntList(strides, shape.size), 0, self.dtype(), "reshape");
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  const int n = self.ndim();
  const int64_t s = wrap_dim(start_dim, n, "flatten()"), e = wrap_dim(end_dim, n, "flatten()");
  if (n == 0) return reshape(self, std::vector<int64_t>{1});
  ST_CHECK(s <= e, Value, "flatten(): start_dim (", s, ") must not come after end_dim (", e, ")");
  if (s == e) return remake(self, self.dims(), self.storage_offset(), "flatten");
  std::vector<int64_t> shape;
  int64_t merged = 1;
  for (int i = 0; i < n; ++i) {
    if (i < s || i > e) {
      shape.push_back(self.sizes()[i]);
    } else {
      merged *= self.sizes()[i];  // cannot overflow: a factor of numel
      if (i == e) shape.push_back(merged);
    }
  }
  return reshape(self, shape);
}

Tensor view_dtype(const Tensor& self, ScalarType dtype) {
  const int64_t old_size = self.itemsize(), new_size = itemsize(dtype);
  if (old_size == new_size) return Tensor::make(self.storage(), self.dims(), self.storage_offset(), dtype, "view");
  const int n = self.ndim();
  ST_CHECK(n > 0, Runtime, "view(dtype): a 0-d tensor can only be viewed as a dtype of the same size (", old_size,
           " bytes) but ", name(dtype), " has ", new_size);
  ST_CHECK(self.strides()[n - 1] == 1, Runtime, "view(dtype): the last dim must have stride 1 to view ",
           name(self.dtype()), " as ", name(dtype), " but its stride is ", self.strides()[n - 1]);
  Dims out = self.dims();
  int64_t offset_bytes = self.storage_offset() * old_size;
  if (new_size > old_size) {
    const int64_t ratio = new_size / old_size;
    ST_CHECK(self.sizes()[n - 1] % ratio == 0, Runtime, "view(dtype): the last dim (", self.sizes()[n - 1],
             ") must be divisible by ", ratio, " to view ", name(self.dtype()), " as ", name(dtype));
    ST_CHECK(offset_bytes % new_size == 0, Runtime, "view(dtype): the storage offset (", self.storage_offset(),
             ") must be divisible by ", ratio);
    for (int d = 0; d < n - 1; ++d) {
      ST_CHECK(out.strides()[d] % ratio == 0, Runtime, "view(dtype): stride[", d, "] (", out.strides()[d],
               ") must be divisible by ", ratio);
      out.strides()[d] /= ratio;
    }
    out.sizes()[n - 1] /= ratio;
  } else {
    const int64_t ratio = old_size / new_size;
    for (int d = 0; d < n - 1; ++d) out.strides()[d] *= ratio;  // inside the checked byte extent
    out.sizes()[n - 1] *= ratio;
  }
  return Tensor::make(self.storage(), std::move(out), offset_bytes / new_size, dtype, "view");
}

}  // namespace slimtensor

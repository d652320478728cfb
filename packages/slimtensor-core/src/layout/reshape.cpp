// layout/reshape.cpp: shape inference (-1) and PyTorch's view-ability algorithm (computeStride).
#include <algorithm>
#include <sstream>

#include "slimtensor/base/checked_math.h"
#include "slimtensor/base/error.h"
#include "slimtensor/layout/views.h"

namespace slimtensor {
namespace {

std::string shape_string(IntList shape) {
  std::ostringstream out;
  out << "[";
  for (int64_t i = 0; i < shape.size; ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

}  // namespace

std::vector<int64_t> infer_shape(IntList shape, int64_t numel, const char* function) {
  std::vector<int64_t> out(static_cast<size_t>(shape.size));
  infer_shape_into(shape, numel, function, out.data());
  return out;
}

void infer_shape_into(IntList shape, int64_t numel, const char* function, int64_t* out) {
  std::copy(shape.data, shape.data + shape.size, out);
  int64_t infer_at = -1, product = 1;
  bool overflow = false;
  for (int64_t i = 0; i < shape.size; ++i) {
    if (shape[i] == -1) {
      ST_CHECK(infer_at < 0, Runtime, function, ": only one dimension can be inferred (-1) but shape ",
               shape_string(shape), " has more");
      infer_at = i;
      continue;
    }
    ST_CHECK(shape[i] >= 0, Runtime, function, ": invalid shape dimension ", shape[i], " in ", shape_string(shape),
             "; sizes must be >= 0, or -1 to infer one");
    overflow |= mul_overflows(product, shape[i], &product);
  }
  ST_CHECK(!overflow, Runtime, function, ": the number of elements of shape ", shape_string(shape), " overflows int64");
  if (infer_at >= 0) {
    ST_CHECK(product != 0, Runtime, function, ": cannot reshape a tensor of ", numel, " elements into shape ",
             shape_string(shape), " because the unspecified dimension size -1 can be any value and is ambiguous");
    ST_CHECK(numel % product == 0, Runtime, function, ": shape ", shape_string(shape), " is invalid for input of size ",
             numel);
    out[infer_at] = numel / product;
    return;
  }
  ST_CHECK(product == numel, Runtime, function, ": shape ", shape_string(shape), " is invalid for input of size ",
           numel);
}

std::optional<std::vector<int64_t>> view_strides(IntList sizes, IntList strides, IntList shape) {
  std::vector<int64_t> out(static_cast<size_t>(shape.size));
  if (!view_strides_into(sizes, strides, shape, out.data())) return std::nullopt;
  return out;
}

bool view_strides_into(IntList sizes, IntList strides, IntList shape, int64_t* out) {
  const int64_t old_n = sizes.size, new_n = shape.size;
  std::fill(out, out + new_n, 1);
  if (old_n == 0) return true;
  int64_t numel = 1;
  for (int64_t d = 0; d < old_n; ++d) numel *= sizes[d];
  if (numel == 0) {
    if (old_n == new_n && std::equal(sizes.data, sizes.data + old_n, shape.data)) {
      std::copy(strides.data, strides.data + old_n, out);
      return true;
    }
    for (int64_t d = new_n - 1; d >= 0; --d) {
      out[d] = d == new_n - 1 ? 1 : std::max<int64_t>(shape[d + 1], 1) * out[d + 1];
    }
    return true;
  }
  // Walk the old dims from the innermost, in chunks that are contiguous among themselves; each chunk must
  // be covered exactly by a run of new dims, which then get strides inside the chunk.
  int64_t view_d = new_n - 1;
  int64_t chunk_base_stride = strides[old_n - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = old_n - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace slimtensor

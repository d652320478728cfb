// layout/overlap.cpp: internal overlap and density of strided layouts.
#include <algorithm>
#include <numeric>
#include <vector>

#include "layout/layout.h"

namespace slimtensor {
namespace {
constexpr int64_t kExactCheckLimit = int64_t{1} << 22;  // elements enumerated by the exact overlap check
}

Overlap internal_overlap(const int64_t* sizes, const int64_t* strides, int ndim) {
  for (int d = 0; d < ndim; ++d)
    if (sizes[d] == 0) return Overlap::No;  // no elements, nothing to share
  std::vector<int> dims;
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) {
    numel *= sizes[d];
    if (sizes[d] == 1) continue;
    if (strides[d] == 0) return Overlap::Yes;
    dims.push_back(d);
  }
  std::sort(dims.begin(), dims.end(), [&](int a, int b) { return strides[a] < strides[b]; });
  // Sufficient rule: each stride steps past everything the smaller strides reach.
  int64_t reach = 0;
  bool simple = true;
  for (int d : dims) {
    if (strides[d] <= reach) {
      simple = false;
      break;
    }
    reach += strides[d] * (sizes[d] - 1);
  }
  if (simple) return Overlap::No;
  if (numel > kExactCheckLimit) return Overlap::TooHard;
  std::vector<int64_t> offsets{0};
  for (int d : dims) {
    const size_t n = offsets.size();
    for (int64_t i = 1; i < sizes[d]; ++i)
      for (size_t k = 0; k < n; ++k) offsets.push_back(offsets[k] + i * strides[d]);
  }
  std::sort(offsets.begin(), offsets.end());
  return std::adjacent_find(offsets.begin(), offsets.end()) != offsets.end() ? Overlap::Yes : Overlap::No;
}

bool is_non_overlapping_and_dense(const int64_t* sizes, const int64_t* strides, int ndim) {
  for (int d = 0; d < ndim; ++d)
    if (sizes[d] == 0) return true;
  std::vector<int> dims(static_cast<size_t>(ndim));
  std::iota(dims.begin(), dims.end(), 0);
  std::stable_sort(dims.begin(), dims.end(), [&](int a, int b) {
    if (sizes[a] < 2) return false;  // size-0/1 dims go last, their strides do not matter
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t expected = 1;
  for (int d : dims) {
    if (sizes[d] == 0) return true;
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

void infer_dense_strides(const int64_t* sizes, const int64_t* strides, int ndim, int64_t* out) {
  std::vector<int> perm(static_cast<size_t>(ndim));
  for (int i = 0; i < ndim; ++i) perm[i] = ndim - 1 - i;  // innermost first
  // -1: a goes first, 1: b goes first, 0: keep; stride-0 dims never move (as TensorIterator does).
  auto compare = [&](int a, int b) {
    if (strides[a] == 0 || strides[b] == 0) return 0;
    if (strides[a] != strides[b]) return strides[a] < strides[b] ? -1 : 1;
    return sizes[a] > sizes[b] ? 1 : 0;
  };
  for (int i = 1; i < ndim; ++i) {  // a stable insertion sort
    int moving = i;
    for (int j = i - 1; j >= 0; --j) {
      const int c = compare(perm[j], perm[moving]);
      if (c > 0) {
        std::swap(perm[j], perm[moving]);
        moving = j;
      } else if (c < 0) {
        break;
      }
    }
  }
  int64_t running = 1;
  for (int d : perm) {
    out[d] = running;
    if (sizes[d] > 1) running *= sizes[d];
  }
}

bool memory_format_strides(const int64_t* sizes, int ndim, MemoryFormat format, int64_t* out) {
  if (format == MemoryFormat::Contiguous || format == MemoryFormat::Preserve) {
    contiguous_strides(sizes, ndim, out);
    return true;
  }
  const int want = format == MemoryFormat::ChannelsLast ? 4 : 5;
  if (ndim != want) return false;
  // innermost first: C, then the spatial dims from last to first, then N
  const int order4[] = {1, 3, 2, 0}, order5[] = {1, 4, 3, 2, 0};
  const int* order = ndim == 4 ? order4 : order5;
  // PyTorch's get_channels_last_strides_{2d,3d}: raw sizes, so a size-0 dim gives stride 0 outside it.
  int64_t running = 1;
  for (int i = 0; i < ndim; ++i) {
    out[order[i]] = running;
    running *= sizes[order[i]];
  }
  return true;
}

}  // namespace slimtensor

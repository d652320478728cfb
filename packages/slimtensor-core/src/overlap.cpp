// overlap.cpp: internal overlap and density of strided layouts.
#include <algorithm>
#include <numeric>
#include <vector>

#include "layout.h"

namespace slimtensor {
namespace {
constexpr int64_t kExactCheckLimit = int64_t{1} << 22;  // elements enumerated by the exact overlap check
}

Overlap internal_overlap(const int64_t* sizes, const int64_t* strides, int ndim) {
  std::vector<int> dims;
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 0) return Overlap::No;
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

namespace {
// PyTorch's is_channels_last_strides_2d_s4 / _3d_s5, with `order` innermost first.
bool strides_like_channels_last(const int64_t* sizes, const int64_t* strides, const int* order, int n) {
  if (strides[1] == 0) return false;  // a trivial C dimension: default to the contiguous layout
  int64_t min = 0;
  for (int i = 0; i < n; ++i) {
    const int d = order[i];
    if (sizes[d] == 0 || strides[d] < min) return false;
    // N111 tensors (and N11W sliced on W) are ambiguous: they default to the contiguous layout.
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}
}  // namespace

MemoryFormat suggest_memory_format(const int64_t* sizes, const int64_t* strides, int ndim) {
  const int order4[] = {1, 3, 2, 0}, order5[] = {1, 4, 3, 2, 0};
  if (ndim == 4 && strides_like_channels_last(sizes, strides, order4, 4)) return MemoryFormat::ChannelsLast;
  if (ndim == 5 && strides_like_channels_last(sizes, strides, order5, 5)) return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
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

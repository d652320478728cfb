// copy/copy_plan.cpp: plan_copy_dims, shared by copy_ on the CPU, plugin strided copies and convert_strided.
#include "copy/copy_plan.h"

#include <algorithm>

namespace slimtensor {

void plan_copy_dims(int n, const int64_t* sizes, const int64_t* dst_strides, int64_t dst_unit,
                    const int64_t* src_strides, int64_t src_unit, CpuCopyPlan& p) {
  struct D {
    int64_t size, ds, ss;
  };
  D dims[kMaxCopyDims];
  int m = 0;
  for (int d = 0; d < n; ++d) {
    if (sizes[d] == 1) continue;
    dims[m++] = {sizes[d], dst_strides[d] * dst_unit, src_strides[d] * src_unit};
  }
  // Outermost first by the destination's strides, so writes walk memory forward.
  std::stable_sort(dims, dims + m, [](const D& a, const D& b) { return a.ds != b.ds ? a.ds > b.ds : a.ss > b.ss; });
  p.ndim = 0;
  for (int k = 0; k < m; ++k) {
    const D& d = dims[k];
    if (p.ndim > 0) {
      const int i = p.ndim - 1;  // merge into the previous (outer) dim when both sides allow it
      if (p.dst_strides[i] == d.ds * d.size && p.src_strides[i] == d.ss * d.size) {
        p.sizes[i] *= d.size;
        p.dst_strides[i] = d.ds;
        p.src_strides[i] = d.ss;
        continue;
      }
    }
    p.sizes[p.ndim] = d.size;
    p.dst_strides[p.ndim] = d.ds;
    p.src_strides[p.ndim] = d.ss;
    ++p.ndim;
  }
}

}  // namespace slimtensor

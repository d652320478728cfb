// src/aoti/ops/histc.cpp: the fallback aoti_torch_cpu_histc (a histogram of equal-width bins).
//
// Note [histc arithmetic]
// As torch's CPU kernel (HistogramKernel.cpp, LINEAR_INTERPOLATION): the outer edges are min and max (when
// they are equal: the data's minimum and maximum; still equal: widened by 1 each way), which must be finite
// with min < max; they are converted to self's dtype T. An element e counts when left <= e <= right (so
// NaNs never count); its bin is int64((e - left) * bins / (right - left)) computed in T's own arithmetic
// (float16 and bfloat16 round every intermediate result, as c10::Half/BFloat16 operators do), the last
// bin including the right edge. Counts are exact (int64), converted to T at the end: torch accumulates them in
// T per thread, which is the same unless one thread's count of a bin passes T's integer range (2048 for
// float16, 256 for bfloat16). The result is a contiguous 1-D tensor of `bins` elements of self's dtype.
#include <algorithm>
#include <cmath>
#include <vector>

#include "aoti/ops/op_args.h"
#include "aoti/ops/reduced_float.h"
#include "slimtensor/c/shim_cpu.h"
#include "slimtensor/copy/copy.h"
#include "slimtensor/copy/fill.h"
#include "slimtensor/layout/views.h"
#include "slimtensor/tensor/factories.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

template <typename V, typename R>
void histogram(const V* x, int64_t n, int64_t bins, V left, V right, int64_t* hist) {
  for (int64_t i = 0; i < n; ++i) {
    const V e = x[i];
    if (!(e >= left && e <= right)) continue;
    const V num = R::round(R::round(e - left) * R::round(static_cast<V>(bins)));
    int64_t pos = static_cast<int64_t>(R::round(num / R::round(right - left)));
    if (pos == bins) pos -= 1;
    hist[pos] += 1;
  }
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_cpu_histc(AtenTensorHandle self, int64_t bins, double min, double max,
                                    AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu_histc";
  return guarded(fn, [&] {
    const Tensor& s = cpu_arg(self, fn, "self");
    out_arg(ret0, fn, "ret0");
    const ScalarType t = s.dtype();
    if (t != ScalarType::Float16 && t != ScalarType::BFloat16 && t != ScalarType::Float32 && t != ScalarType::Float64) {
      fail(ErrorKind::Type, fn, "(): self has dtype ", name(t),
           " but histc takes float16, bfloat16, float32 or float64; convert it first");
    }
    if (bins <= 0) fail(ErrorKind::Value, fn, "(): bins must be > 0, but got ", bins, " for bins");
    const bool wide = t == ScalarType::Float64;
    const ScalarType work = wide ? ScalarType::Float64 : ScalarType::Float32;  // exact for T's values
    Tensor x = empty(IntList(s.sizes(), s.ndim()), work, kCPUDevice, fn);
    copy_(x, s);
    const int64_t n = x.numel();
    double lo = min, hi = max;
    if (lo == hi && n > 0) {
      lo = INFINITY, hi = -INFINITY;
      bool nan = false;
      for (int64_t i = 0; i < n; ++i) {
        const double v =
            wide ? static_cast<const double*>(x.data_ptr())[i] : static_cast<const float*>(x.data_ptr())[i];
        nan |= std::isnan(v);
        lo = std::min(lo, v), hi = std::max(hi, v);
      }
      if (nan) lo = hi = NAN;
    }
    if (lo == hi) lo -= 1, hi += 1;
    if (!std::isfinite(lo) || !std::isfinite(hi)) {
      fail(ErrorKind::Value, fn, "(): range of [", lo, ", ", hi, "] is not finite");
    }
    if (!(lo < hi)) fail(ErrorKind::Value, fn, "(): max must be larger than min (min ", lo, ", max ", hi, ")");
    std::vector<int64_t> sizes = {bins};
    Tensor h = empty(sizes, ScalarType::Int64, kCPUDevice, fn);
    fill_(h, Scalar::from_int(0));
    int64_t* hp = static_cast<int64_t*>(h.data_ptr());
    // The edges in T: convert min and max through a 0-d tensor of T (copy_'s rounding).
    Tensor edges = empty(std::vector<int64_t>{2}, t, kCPUDevice, fn),
           edges_w = empty(std::vector<int64_t>{2}, work, kCPUDevice, fn);
    fill_(narrow(edges, 0, 0, 1), Scalar::from_double(lo));
    fill_(narrow(edges, 0, 1, 1), Scalar::from_double(hi));
    copy_(edges_w, edges);
    if (wide) {
      const double* e = static_cast<const double*>(edges_w.data_ptr());
      histogram<double, NoRound>(static_cast<const double*>(x.data_ptr()), n, bins, e[0], e[1], hp);
    } else {
      const float* e = static_cast<const float*>(edges_w.data_ptr());
      const float* xp = static_cast<const float*>(x.data_ptr());
      if (t == ScalarType::Float16)
        histogram<float, RoundF16>(xp, n, bins, e[0], e[1], hp);
      else if (t == ScalarType::BFloat16)
        histogram<float, RoundBF16>(xp, n, bins, e[0], e[1], hp);
      else
        histogram<float, NoRound>(xp, n, bins, e[0], e[1], hp);
    }
    Tensor out = empty(sizes, t, kCPUDevice, fn);
    copy_(out, h);
    *ret0 = make_handle(std::move(out), fn);
  });
}

}  // extern "C"

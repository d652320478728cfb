// tests/core/cpp/scalar_casts.cpp: Scalar::from_double / from_complex on NaN, infinities and values outside int64
// (issue 14: a plain cast, undefined behaviour). Built with -fsanitize=float-cast-overflow by test_scalar_casts.py.
#include <cmath>
#include <cstdio>
#include <limits>
#include "slimtensor/copy/scalar.h"
using slimtensor::Scalar;
int main() {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const double vals[] = {nan, inf, -inf, 1e300, -1e300, 9223372036854775808.0, -9223372036854775808.0, -1.5};
  long long sum = 0;
  for (double v : vals) {
    sum += Scalar::from_double(v).i;
    sum += Scalar::from_complex(v, 1.0).i;
  }
  std::printf("%lld %lld %lld\n", (long long)Scalar::from_double(nan).i, (long long)Scalar::from_double(inf).i,
              (long long)Scalar::from_double(-1.5).i);
  return 0;
}

// convert_tool.cpp: runs the device conversions (kernels/convert.cuh) on the host over a file of elements,
// so tests can compare them byte for byte with slimtensor's CPU copy without a GPU.
// Usage: convert_tool <src dtype code> <dst dtype code> <count> <input file> <output file>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/convert.cuh"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: convert_tool SRC DST COUNT IN OUT\n");
    return 2;
  }
  const int src = std::atoi(argv[1]), dst = std::atoi(argv[2]);
  const long n = std::atol(argv[3]);
  const int ss = slimtensor_cuda::itemsize(src), ds = slimtensor_cuda::itemsize(dst);
  if (!ss || !ds || n < 0) {
    std::fprintf(stderr, "convert_tool: bad dtype codes %d -> %d or count %ld\n", src, dst, n);
    return 2;
  }
  std::vector<unsigned char> in(static_cast<size_t>(n) * ss), out(static_cast<size_t>(n) * ds);
  FILE* f = std::fopen(argv[4], "rb");
  if (!f || std::fread(in.data(), 1, in.size(), f) != in.size()) return 3;
  std::fclose(f);
  for (long i = 0; i < n; ++i) {
    if (src == dst) {
      for (int b = 0; b < ss; ++b) out[i * ds + b] = in[i * ss + b];
    } else {
      slimtensor_cuda::convert_element(dst, &out[i * ds], src, &in[i * ss]);
    }
  }
  f = std::fopen(argv[5], "wb");
  if (!f || std::fwrite(out.data(), 1, out.size(), f) != out.size()) return 3;
  std::fclose(f);
  return 0;
}

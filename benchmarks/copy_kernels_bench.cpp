// benchmarks/copy_kernels_bench.cpp: times slimtensor's ISA copy kernels directly (no Python, no planner) against
// memcpy.
//
// Build (from the repository root):
//   g++ -O2 -std=c++17 -Ipackages/slimtensor-core/src/kernels benchmarks/copy_kernels_bench.cpp \
//       packages/slimtensor-core/src/kernels/copy_avx512.cpp packages/slimtensor-core/src/kernels/copy_avx2.cpp \
//       -o /tmp/copy_kernels_bench   (add the per-file -mavx512*/-mavx2 flags of CMakeLists.txt: see make_bench.sh)
// Run: /tmp/copy_kernels_bench [avx512|avx2] [MiB=64] [repeats=7]
// Environment: NO_HUGEPAGES=1 (no madvise(MADV_HUGEPAGE) on the buffers), NO_STREAM=1 (ordinary stores),
// OFFSET=n (buffers start n bytes past a 2 MiB boundary; numpy's large arrays sit at 16; SRC_OFFSET and
// DST_OFFSET set one side).
// Prints GB/s (bytes read + written, 1 GB = 1e9 B) as best / median over the repeats, one thread, for the
// shapes of the baselines: a contiguous copy, the four strided layouts, and float32 -> bfloat16.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "copy_isa.h"

using slimtensor::CopyKernels;

static char* alloc(size_t bytes, const char* offset_env) {
  void* p = nullptr;
  if (posix_memalign(&p, 2 << 20, bytes) != 0) std::exit(1);
  if (std::getenv("NO_HUGEPAGES") == nullptr) madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 1, bytes);  // pre-fault
  // OFFSET=16 mimics numpy's large arrays (glibc's mmap chunks start 16 bytes into a page).
  const char* off = std::getenv(offset_env);
  if (off == nullptr) off = std::getenv("OFFSET");
  return static_cast<char*>(p) + (off ? std::atoi(off) : 0);
}

static void report(const char* name, double traffic, int repeats, const std::function<void()>& body) {
  body();
  std::vector<double> s;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    body();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  std::printf("%-34s %7.1f / %7.1f GB/s\n", name, traffic / 1e9 / s.front(), traffic / 1e9 / s[s.size() / 2]);
}

int main(int argc, char** argv) {
  const std::string isa = argc > 1 ? argv[1] : "avx512";
  const int64_t mib = argc > 2 ? std::atoll(argv[2]) : 64;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 7;
  const CopyKernels* k = isa == "avx2" ? slimtensor::copy_kernels_avx2() : slimtensor::copy_kernels_avx512();
  if (!k) {
    std::fprintf(stderr, "%s kernels not built\n", isa.c_str());
    return 2;
  }
  const size_t bytes = static_cast<size_t>(mib) << 20;
  const int64_t n = static_cast<int64_t>(bytes / 4);
  int64_t side = 1;
  while (side * side < n) side *= 2;  // N x N float32 (64 MiB: 4096)
  // NCHW with C = 64 and H = W: 64 MiB -> 16 x 64 x 128 x 128 (as the baselines)
  const int64_t nb = mib >= 1024 ? 16 : mib >= 64 ? 16 : 4, c = 64;
  int64_t hw = n / (nb * c);
  char* src = alloc(bytes + 4096, "SRC_OFFSET");
  char* dst = alloc(bytes + 4096, "DST_OFFSET");
  const bool no_stream = std::getenv("NO_STREAM") != nullptr;  // compare with ordinary stores
  const bool stream = !no_stream && 2 * bytes >= (size_t{24} << 20);
  std::printf("kernels %s, %lld MiB, %d repeats, stream=%d\n", k->name, static_cast<long long>(mib), repeats, stream);
  const double t = 2.0 * bytes;
  report("memcpy", t, repeats, [&] { std::memcpy(dst, src, bytes); });
  report("c2c copy_bytes", t, repeats, [&] { k->copy_bytes(dst, src, bytes, stream); });
  // t2c / c2t: the planner hands both to the kernel as rows = cols = side, src_row = dst_row = side * 4.
  report("t2c (2-d transpose)", t, repeats,
         [&] { k->transpose_32bit(src, side * 4, dst, side * 4, side, side, stream); });
  // p2c: per batch, rows = H*W (src-dense), cols = C, src_row = H*W*4, dst_row = C*4.
  report("p2c (NCHW -> NHWC)", t, repeats, [&] {
    for (int64_t b = 0; b < nb; ++b)
      k->transpose_32bit(src + b * c * hw * 4, hw * 4, dst + b * c * hw * 4, c * 4, hw, c, stream);
  });
  // c2p: per batch, rows = C (src-dense), cols = H*W, src_row = C*4, dst_row = H*W*4.
  report("c2p (NHWC -> NCHW)", t, repeats, [&] {
    for (int64_t b = 0; b < nb; ++b)
      k->transpose_32bit(src + b * c * hw * 4, c * 4, dst + b * c * hw * 4, hw * 4, c, hw, stream);
  });
  const double tb = 6.0 * n;
  const bool stream_bf = !no_stream && 6 * n >= (int64_t{24} << 20);
  report("f32->bf16 c2c", tb, repeats, [&] { k->f32_to_bf16(src, dst, n, stream_bf); });
  report("f32->bf16 t2c", tb, repeats,
         [&] { k->transpose_f32_to_bf16(src, side * 4, dst, side * 2, side, side, stream_bf); });
  report("f32->bf16 p2c", tb, repeats, [&] {
    for (int64_t b = 0; b < nb; ++b)
      k->transpose_f32_to_bf16(src + b * c * hw * 4, hw * 4, dst + b * c * hw * 2, c * 2, hw, c, stream_bf);
  });
  return 0;
}

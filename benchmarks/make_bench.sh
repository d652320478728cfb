#!/bin/sh
# benchmarks/make_bench.sh: builds benchmarks/copy_kernels_bench.cpp with the kernel files' own ISA flags.
set -e
K=packages/slimtensor-core/src/kernels
OUT=${1:-/tmp/copy_kernels_bench}
CXX=${CXX:-g++}
$CXX -O2 -std=c++17 -c $K/copy_avx512.cpp -o "$OUT.avx512.o" -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma -mf16c
$CXX -O2 -std=c++17 -c $K/copy_avx2.cpp -o "$OUT.avx2.o" -mavx2 -mfma -mf16c
$CXX -O2 -std=c++17 -I$K benchmarks/copy_kernels_bench.cpp "$OUT.avx512.o" "$OUT.avx2.o" -o "$OUT"
echo "$OUT"

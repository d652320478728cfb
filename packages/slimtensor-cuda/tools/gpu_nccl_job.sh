#!/usr/bin/env bash
# gpu_nccl_job.sh: build core + cuda, then the NCCL tests with world size 1 and the all_reduce bandwidth bench on
# one GPU (issue 16). Run from the repository root with $OUT set: bash packages/slimtensor-cuda/tools/gpu_nccl_job.sh
# The tensor-parallel block is compiled (torch's CUDA build on the machine) while the packages build.
set -u
OUT=${OUT:-$PWD/gpu_out}
mkdir -p "$OUT"
T0=$(date +%s)
log() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$OUT/summary.txt"; }
F="--no-build-isolation --no-deps --disable-pip-version-check -q"
export CC=/usr/bin/gcc CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++ PATH=$PATH:/usr/local/cuda/bin CMAKE_BUILD_PARALLEL_LEVEL=16
export SLIMTENSOR_CUDA_AOTI_MODELS=/tmp/nccl-models SLIMTENSOR_CUDA_AOTI_PRECOMPILE=0
mkdir -p "$SLIMTENSOR_CUDA_AOTI_MODELS"
log "$(nvidia-smi -L 2>&1 | head -2 | tr '\n' ' ') NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-unset}"
(TORCHINDUCTOR_COMPILE_THREADS=1 timeout 100 python3 tests/aoti/compile_models.py --zoo tensor_parallel_zoo --device cuda \
  "$SLIMTENSOR_CUDA_AOTI_MODELS" tp_block_0of1 >"$OUT/compile.log" 2>&1; echo "rc=$?" >>"$OUT/compile.log") &
COMPILE=$!
timeout 50 python3 -m pip install $F -Cbuild-dir=/tmp/nccl-core packages/slimtensor-core >"$OUT/build_core.log" 2>&1
log "core build rc=$?"
timeout 60 python3 -m pip install $F -Cbuild-dir=/tmp/nccl-cuda packages/slimtensor-cuda >"$OUT/build_cuda.log" 2>&1
RC=$?
log "cuda build rc=$RC"
[ $RC -eq 0 ] || tail -40 "$OUT/build_cuda.log"
python3 -c "from slimtensor_cuda import _nccl; print('NCCL', _nccl.version())" >"$OUT/nccl_version.txt" 2>&1
log "$(tail -1 "$OUT/nccl_version.txt")"
wait $COMPILE
log "compile tp_block_0of1: $(grep -E '^(compiled|rc=)' "$OUT/compile.log" | tr '\n' ' ')"
# -v and faulthandler: a hang shows which test and where (the stacks) before the timeout stops it.
PT="-v -rsfE -p no:cacheprovider -o faulthandler_timeout=20"
timeout 35 python3 -m pytest tests/cuda/test_nccl.py tests/cuda/test_nccl_two_gpus.py $PT \
  --junitxml="$OUT/pytest_nccl.xml" >"$OUT/pytest_nccl.log" 2>&1
log "pytest nccl: rc=$? $(tail -1 "$OUT/pytest_nccl.log")"
grep -E '(FAILED|ERROR|SKIPPED)' "$OUT/pytest_nccl.log" | cut -c1-300 | head -20 | tee -a "$OUT/summary.txt"
if [ -f "$SLIMTENSOR_CUDA_AOTI_MODELS/tp_block_0of1.pt2" ]; then
  timeout 30 python3 -m pytest tests/cuda/aoti/test_nccl_tensor_parallel.py $PT >"$OUT/pytest_nccl_tp.log" 2>&1
  log "pytest nccl tp block: rc=$? $(tail -1 "$OUT/pytest_nccl_tp.log")"
  grep -E '(FAILED|ERROR|SKIPPED|Error)' "$OUT/pytest_nccl_tp.log" | cut -c1-300 | head -10 | tee -a "$OUT/summary.txt"
else
  log "tp_block_0of1 did not compile: $(tail -5 "$OUT/compile.log" | tr '\n' ' ' | cut -c1-600)"
fi
timeout 25 python3 -m slimtensor.distributed.run --nproc 1 packages/slimtensor-cuda/bench/nccl_allreduce.py \
  --out "$OUT/nccl_allreduce_ws1.json" --iters 10 >"$OUT/bench_nccl.log" 2>&1
log "bench (world size 1): rc=$? $(python3 -c "import json; r = json.load(open('$OUT/nccl_allreduce_ws1.json')); print('algbw slimtensor %.0f GB/s, torch %.0f GB/s, ratio %.3f' % (r['slimtensor']['algbw_gbps'], r['torch']['algbw_gbps'], r['ratio']))" 2>&1 | tail -1)"
log "done"

#!/usr/bin/env bash
# gpu_aoti_job.sh: one GPU job for the CUDA AOTI work: compiles the test models (torch on the GPU machine,
# in the background) while it builds the core and the CUDA plugin, then runs tests/cuda/aoti and the CUDA
# AOTI benchmark. Run from the repository root; logs to $OUT. MODELS="..." and PYTEST_ARGS narrow it.
set -u
OUT=${OUT:-$PWD/gpu_out}
mkdir -p "$OUT"
T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/summary.txt"; }
export PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
export SLIMTENSOR_CUDA_AOTI_MODELS=${SLIMTENSOR_CUDA_AOTI_MODELS:-/tmp/st-cuda-aoti-models}
MODELS=${MODELS:-"pointwise view_permute two_outputs softmax alias_input const_alias"}
EXTRA=${EXTRA:-"to_host"}
HF=${HF:-""}
mkdir -p "$SLIMTENSOR_CUDA_AOTI_MODELS"
(
  timeout ${COMPILE_TIMEOUT:-110} "$PY" tests/aoti/compile_models.py --device cuda --jobs 6 "$SLIMTENSOR_CUDA_AOTI_MODELS" $MODELS
  [ -n "$EXTRA" ] && timeout 60 "$PY" tests/aoti/compile_models.py --zoo cuda_model_zoo --device cuda "$SLIMTENSOR_CUDA_AOTI_MODELS" $EXTRA
  [ -n "$HF" ] && timeout 90 "$PY" tests/aoti/compile_models.py --zoo hf_model_zoo --device cuda --jobs 2 "$SLIMTENSOR_CUDA_AOTI_MODELS" $HF
) >"$OUT/compile.log" 2>&1 &
CPID=$!
FLAGS="--no-build-isolation --no-deps --disable-pip-version-check -q"
export CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
log "building slimtensor-core"
timeout 120 "$PY" -m pip install $FLAGS -Cbuild-dir=/tmp/st-build-core packages/slimtensor-core >"$OUT/build_core.log" 2>&1 || { log "core build FAILED"; tail -30 "$OUT/build_core.log"; }
log "building slimtensor-cuda"
timeout 120 "$PY" -m pip install $FLAGS -Cbuild-dir=/tmp/st-build-cuda packages/slimtensor-cuda >"$OUT/build_cuda.log" 2>&1 || { log "cuda build FAILED"; tail -40 "$OUT/build_cuda.log"; }
SITE=$("$PY" -c "import slimtensor_cuda, os; print(os.path.dirname(slimtensor_cuda.__file__))" 2>/dev/null)
for l in "$SITE"/lib*.so; do echo "== $l"; readelf -d "$l" | grep -E "NEEDED|RPATH|RUNPATH"; done >"$OUT/libs.txt" 2>&1
nm -D --defined-only "$SITE/libslimtensor_cuda_aoti.so" >"$OUT/aoti_exports.txt" 2>&1
log "waiting for the model compiles"
wait $CPID; log "compile rc=$? $(grep -c compiled "$OUT/compile.log") compiled"
ls "$SLIMTENSOR_CUDA_AOTI_MODELS" >"$OUT/models.txt"
log "pytest tests/cuda/aoti"
timeout ${TEST_TIMEOUT:-90} "$PY" -m pytest tests/cuda/aoti -q -p no:cacheprovider -x ${PYTEST_ARGS:-} >"$OUT/pytest_aoti.log" 2>&1
log "pytest tests/cuda/aoti: rc=$? $(tail -1 "$OUT/pytest_aoti.log")"
if [ -n "${MORE:-}" ]; then eval "$MORE"; fi
log "done"

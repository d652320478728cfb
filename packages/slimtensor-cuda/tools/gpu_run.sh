#!/usr/bin/env bash
# gpu_run.sh: one-shot build + test + sanitizers + benchmark of slimtensor-cuda on a GPU machine.
# Run from the repository root: bash packages/slimtensor-cuda/tools/gpu_run.sh   (logs and JSON to $OUT)
# Uses the machine's Python with torch/cupy/nanobind/scikit-build-core (no registry): packages are installed
# into that environment itself with --no-build-isolation --no-deps (the machine is bare on every start; a
# --system-site-packages venv would see the base interpreter's site-packages, not torch's venv).
set -u
OUT=${OUT:-$PWD/gpu_out}
mkdir -p "$OUT"
T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/summary.txt"; }
export PATH="$PATH:/usr/local/cuda/bin"
# A $CXX without a shared libstdc++ (the GPU machine's /opt/gcc) is refused at configure time (Note [One C++
# runtime per process]); take the system's compilers then.
if [[ "$(${CXX:-c++} -print-file-name=libstdc++.so 2>/dev/null)" != /* ]] && [ -x /usr/bin/g++ ]; then
  export CC=/usr/bin/gcc CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++
fi
command -v nvcc >/dev/null || { log "no nvcc on PATH or in /usr/local/cuda/bin"; exit 1; }
PY=${PYTHON:-python3}
export CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
log "nvcc: $(nvcc --version | tail -1); python: $($PY --version); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
pip() { "$PY" -m pip "$@"; }
python() { "$PY" "$@"; }
FLAGS="--no-build-isolation --no-deps --disable-pip-version-check -q"
# Wheels carried to the machine (it has no registry): nvidia-cuda-runtime 13 when torch's own is cu12.
if ls .whl/*.whl >/dev/null 2>&1; then pip install --no-index --no-deps -q .whl/*.whl >"$OUT/carried_wheels.log" 2>&1; log "installed carried wheels: $(ls .whl | tr '\n' ' ')"; fi
log "building slimtensor-core"
pip install $FLAGS -Cbuild-dir=/tmp/st-build-core packages/slimtensor-core >"$OUT/build_core.log" 2>&1 || { log "core build FAILED (build_core.log)"; tail -30 "$OUT/build_core.log"; exit 1; }
log "building the hostdev test plugin"
pip install $FLAGS -Cbuild-dir=/tmp/st-build-hostdev tests/plugins/slimtensor-hostdev >"$OUT/build_hostdev.log" 2>&1 || log "hostdev build FAILED (build_hostdev.log); its tests will skip"
log "building slimtensor-cuda"
pip install $FLAGS -Cbuild-dir=/tmp/st-build-cuda packages/slimtensor-cuda >"$OUT/build_cuda.log" 2>&1 || { log "cuda build FAILED (build_cuda.log)"; tail -30 "$OUT/build_cuda.log"; exit 1; }
python -c "import slimtensor_cuda as c; c.register(); import slimtensor as st; print(st.devices()); print(c.unavailable_reason()); print(c.get_device_properties())" >"$OUT/devices.txt" 2>&1
log "devices: $(tail -2 "$OUT/devices.txt" | tr '\n' ' ')"
# nanobind stubs of the native module, for the lead to commit.
python -m nanobind.stubgen -m slimtensor_cuda._C -o "$OUT/_C.pyi" >"$OUT/stubgen.log" 2>&1 || true

log "pytest tests/cuda"
timeout 200 "$PY" -m pytest tests/cuda -q -p no:cacheprovider --junitxml="$OUT/pytest_cuda.xml" >"$OUT/pytest_cuda.log" 2>&1
log "pytest tests/cuda: rc=$? $(tail -1 "$OUT/pytest_cuda.log")"
timeout 120 "$PY" -m pytest tests/core/test_plugin_memory.py tests/core/test_plugin_streams.py -q -p no:cacheprovider >"$OUT/pytest_core_plugins.log" 2>&1
log "core plugin-memory tests with cuda available: rc=$? $(tail -1 "$OUT/pytest_core_plugins.log")"
if ls tests/core/test_device_param*.py >/dev/null 2>&1 || grep -rlq "needs_cuda" tests/core 2>/dev/null; then
  timeout 120 "$PY" -m pytest tests/core -q -p no:cacheprovider -m needs_cuda >"$OUT/pytest_core_cuda.log" 2>&1
  log "core device-parametrised tests: rc=$? $(tail -1 "$OUT/pytest_core_cuda.log")"
fi

SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
# The copy kernels under memcheck and racecheck. compute-sanitizer exits with 99 (--error-exitcode) when it
# finds errors, else with the application's own status: "ERROR SUMMARY: 0 errors" with rc=1 is a pytest
# failure, so the log keeps pytest's short summary (-rfE, no -x) and the summary line names the failures.
# The 2^31-offset test is left out (2 GiB under the sanitizers' shadow memory). --show-backtrace device:
# the host backtrace that compute-sanitizer takes at each kernel launch keeps the launching Python frame alive
# (with its tensors: the module leak check then fails), seen with the default "yes" and gone with "no" or
# "device" (bench/NOTES.md); device backtraces are what a kernel fault needs.
SEL="test_permuted or test_every_dtype_pair_bit_exact or test_non_blocking"
for tool in memcheck racecheck; do
  timeout 300 "$SAN" --tool $tool --show-backtrace device --error-exitcode 99 --target-processes all \
    "$PY" -m pytest tests/cuda/test_gpu.py tests/cuda/test_copy_kernels.py -q -rfE -p no:cacheprovider \
    -k "($SEL) and not past_2_to_31 and not (every_permutation and (bfloat16 or float64 or complex128))" \
    >"$OUT/sanitizer_$tool.log" 2>&1
  log "compute-sanitizer $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1) | pytest: $(grep -E '[0-9]+ (passed|failed)' "$OUT/sanitizer_$tool.log" | tail -1) $(grep -E '^(FAILED|ERROR) ' "$OUT/sanitizer_$tool.log" | head -3 | tr '\n' ' ')"
done

log "benchmark"
timeout 100 "$PY" packages/slimtensor-cuda/bench/cuda_copies.py "$OUT/cuda_copies.json" >"$OUT/bench.log" 2>&1
log "benchmark: rc=$? (bench.log, cuda_copies.json)"
log "done"

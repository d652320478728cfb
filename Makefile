# slimtensor developer verbs. The README's Quick start uses two of them: `make lab` and `make test`.
#
# Three virtual environments, so that the test-only plugin package never reaches the notebooks and the lab
# kernel never holds libtorch:
#   .venv          the lab environment (make lab): the packages, JupyterLab, the kernel spec (inside .venv)
#   .venv-compile  the compile environment (make lab): the core and torch 2.13.0 (CPU), for compiling the
#                  AOTInductor model of notebook 05 and torch's benchmark columns of notebook 04, each in a
#                  subprocess of the notebook
#   .venv-test     the test environment (make test): the packages, pytest, torch (oracle), the test plugin
# All build the core from the same CMake build folder, so a C++ edit rebuilds incrementally.

PYTHON      ?= python3
JOBS        ?= 2
LAB_VENV    := .venv
COMPILE_VENV := .venv-compile
TEST_VENV   := .venv-test
CORE        := packages/slimtensor-core
TEST_PLUGIN := tests/plugins/slimtensor-hostdev
# Device plugins built after the core, into both environments. Metal builds everywhere: off Apple platforms
# without its Objective-C++ bridge, and then registers "mps" as unavailable with the reason.
METAL       := packages/slimtensor-metal
METAL_FLAGS := --no-build-isolation -Cbuild-dir=build/metal-{wheel_tag} -Ccmake.define.CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS)
CUDA_PLUGIN := packages/slimtensor-cuda
# nvcc on PATH, else the toolkit's default place; empty when there is none (the CUDA plugin is then skipped).
NVCC        := $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
KERNEL_NAME := slimtensor
# No -q: installs show what they collect, builds show CMake and ninja's [n/N] lines (BUILD_LOG).
PIP_FLAGS   := --disable-pip-version-check --progress-bar on
BUILD_LOG   := -v -Cbuild.verbose=true
# Explicit builds only: nothing rebuilds at import time (no import-time rebuild races).
BUILD_FLAGS := $(BUILD_LOG) --no-build-isolation -Cbuild-dir=build/{wheel_tag} -Ccmake.define.CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS)
export CMAKE_BUILD_PARALLEL_LEVEL := $(JOBS)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: lab test test-zoo build build-test build-lab build-compile system-deps stubs check-stubs lint format bench bench-models bench-aoti wheel clean distclean help

help:
	@echo "make lab        install the packages and open JupyterLab on notebooks/"
	@echo "make test       install what the tests need, build, run every test"
	@echo "make test-zoo   the AOTI architecture zoo in full (make test runs a reduced zoo)"
	@echo "make build      rebuild the core into both environments after a C++ edit"
	@echo "make stubs      regenerate the typing stubs of slimtensor._C"
	@echo "make lint       ruff, ruff format, clang-format and the stub check (make test runs it)"
	@echo "make format     apply ruff format and clang-format to the whole tree"
	@echo "make bench      run the full benchmark suite into benchmarks/results/"
	@echo "make bench-aoti  the AOTI model cases alone into benchmarks/results/aoti_cpu.json"
	@echo "make bench-models  compile the models make bench times beyond the tests' (oneDNN blocks, the whole zoo)"
	@echo "make wheel      build the core wheel into dist/"
	@echo "make browser-check  run every notebook in headless Chromium, screenshots to build/browser-check/"

# --- system packages ------------------------------------------------------------------------------
# The build needs a C++17 compiler; AOTInductor models need SLEEF (Debian's libsleef3: no PyPI package
# ships it, and the core wheel bundles the copy it finds at build time); the convolution and LSTM fallbacks
# need oneDNN (Debian's libdnnl-dev: the header to build against, and libdnnl2, which the wheel bundles;
# PyPI's onednn is a 97 MB TBB+SYCL build). Installed with apt when we are root and they are missing;
# otherwise the exact command is printed.
APT_PACKAGES := $(if $(shell command -v c++),,g++) $(if $(shell ldconfig -p 2>/dev/null | grep -F libsleef.so.3),,libsleef3) \
                $(if $(wildcard /usr/include/oneapi/dnnl/dnnl.h),,libdnnl-dev)

system-deps:
	@if [ -n "$(strip $(APT_PACKAGES))" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(APT_PACKAGES); \
	  elif ! command -v c++ >/dev/null; then \
	    echo "slimtensor needs a C++17 compiler: run 'sudo apt-get install g++' (Debian/Ubuntu) or 'xcode-select --install' (macOS)"; exit 1; \
	  else \
	    echo "note: missing $(strip $(APT_PACKAGES)): without libsleef3 AOTInductor models compile to scalar kernels, without libdnnl-dev convolutions are slower and the LSTM fallback is refused; install: sudo apt-get install $(strip $(APT_PACKAGES))"; \
	  fi; \
	fi

# --- environments ---------------------------------------------------------------------------------
$(LAB_VENV)/.stamp: requirements/lab.txt requirements/build.txt | system-deps
	$(PYTHON) -m venv $(LAB_VENV)
	$(LAB_VENV)/bin/python -m pip install $(PIP_FLAGS) -r requirements/lab.txt
	touch $@

$(COMPILE_VENV)/.stamp: requirements/compile.txt requirements/build.txt | system-deps
	$(PYTHON) -m venv $(COMPILE_VENV)
	$(COMPILE_VENV)/bin/python -m pip install $(PIP_FLAGS) -r requirements/compile.txt
	touch $@

$(TEST_VENV)/.stamp: requirements/test.txt requirements/build.txt | system-deps
	$(PYTHON) -m venv $(TEST_VENV)
	$(TEST_VENV)/bin/python -m pip install $(PIP_FLAGS) -r requirements/test.txt
	touch $@

# --- builds ---------------------------------------------------------------------------------------
# The CUDA plugin (packages/slimtensor-cuda) is built wherever nvcc exists, GPU or not (without a GPU it
# registers as unavailable, with the reason); a failing build there fails loudly. Without nvcc: a note.
define build_cuda
	@if [ -z "$(NVCC)" ]; then \
	  echo "note: no nvcc on PATH or at /usr/local/cuda/bin/nvcc: the CUDA plugin ($(CUDA_PLUGIN)) is not built, and st.devices() lists no cuda"; \
	else \
	  echo "building the CUDA plugin $(CUDA_PLUGIN) with $(NVCC)"; \
	  CUDACXX=$(NVCC) $(1)/bin/python -m pip install $(PIP_FLAGS) --no-build-isolation \
	    -Cbuild-dir=build/cuda-{wheel_tag} -Ccmake.define.CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(CUDA_PLUGIN) || { \
	    echo "error: nvcc exists ($(NVCC)) but the CUDA plugin $(CUDA_PLUGIN) failed to build (output above); fix the build, or run with NVCC= to skip it"; exit 1; }; \
	fi
endef

build-lab: $(LAB_VENV)/.stamp
	$(LAB_VENV)/bin/python -m pip install $(PIP_FLAGS) $(BUILD_FLAGS) -e $(CORE)
	$(LAB_VENV)/bin/python -m pip install $(PIP_FLAGS) $(METAL_FLAGS) $(METAL)
	$(call build_cuda,$(LAB_VENV))

build-compile: $(COMPILE_VENV)/.stamp
	$(COMPILE_VENV)/bin/python -m pip install $(PIP_FLAGS) $(BUILD_FLAGS) -e $(CORE)

build-test: $(TEST_VENV)/.stamp
	$(TEST_VENV)/bin/python -m pip install $(PIP_FLAGS) $(BUILD_FLAGS) -e $(CORE)
	$(TEST_VENV)/bin/python -m pip install $(PIP_FLAGS) $(METAL_FLAGS) $(METAL)
	@if [ -d $(TEST_PLUGIN) ]; then $(TEST_VENV)/bin/python -m pip install $(PIP_FLAGS) --no-build-isolation \
	  -Cbuild-dir=build/hostdev-{wheel_tag} $(TEST_PLUGIN); fi
	$(call build_cuda,$(TEST_VENV))

build: build-test
	@if [ -d $(LAB_VENV) ]; then $(MAKE) --no-print-directory build-lab; fi
	@if [ -d $(COMPILE_VENV) ]; then $(MAKE) --no-print-directory build-compile; fi

# --- the two README commands ----------------------------------------------------------------------
# The kernel spec goes into the lab environment (--sys-prefix), never the user's home; JupyterLab started
# from .venv finds it there. The .py/.ipynb pairs are committed in sync (tests/notebooks checks it): no
# jupytext run here, so make lab never rewrites a tracked file; after editing a .py, run
# `.venv/bin/jupytext --sync notebooks/NAME.py` yourself.
lab-setup: build-lab build-compile
	$(LAB_VENV)/bin/python -m ipykernel install --sys-prefix --name $(KERNEL_NAME) --display-name "Python (slimtensor)"

lab: lab-setup
	$(LAB_VENV)/bin/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root)

test: build-test lint
	$(TEST_VENV)/bin/python -m pytest

# The whole AOTI architecture zoo (tests/aoti/arch_zoo.py: transformers and torch.nn models, compiled once into
# .cache/aoti-models/); make test compiles and runs a reduced zoo (Note [Reduced and whole zoo] in
# tests/aoti/test_arch_zoo.py).
test-zoo: build-test
	SLIMTENSOR_ZOO=all $(TEST_VENV)/bin/python -m pytest tests/aoti/test_arch_zoo.py

# --- other verbs ----------------------------------------------------------------------------------
STUBGEN := SLIMTENSOR_STUBGEN=1 $(TEST_VENV)/bin/python -m nanobind.stubgen -q -m slimtensor._C \
           -p $(CORE)/python/stubgen_patterns.txt

stubs: build-test
	$(STUBGEN) -o $(CORE)/python/slimtensor/_C.pyi

check-stubs: build-test
	@tmp=$$(mktemp -d) && $(STUBGEN) -o $$tmp/_C.pyi && \
	  if ! diff -u $(CORE)/python/slimtensor/_C.pyi $$tmp/_C.pyi; then \
	    echo "the typing stubs are stale: run 'make stubs' and commit the result"; rm -rf $$tmp; exit 1; fi; rm -rf $$tmp

# One style for the whole tree: ruff (pyproject.toml) for Python, clang-format (.clang-format) for C, C++,
# CUDA and Objective-C++. Both are pinned in requirements/test.txt: their output changes between versions.
# Vendored third-party code (packages/*/third_party) keeps its authors' style.
C_SOURCES = git ls-files -z -- '*.c' '*.cpp' '*.h' '*.cu' '*.cuh' '*.mm' ':(exclude)packages/*/third_party/*'

lint: build-test check-stubs
	$(TEST_VENV)/bin/ruff check .
	$(TEST_VENV)/bin/ruff format --check .
	$(C_SOURCES) | xargs -0 $(TEST_VENV)/bin/clang-format --dry-run --Werror

format: $(TEST_VENV)/.stamp
	$(TEST_VENV)/bin/ruff format .
	$(TEST_VENV)/bin/ruff check --fix .
	$(C_SOURCES) | xargs -0 $(TEST_VENV)/bin/clang-format -i

# OPENBLAS_CORETYPE (set on some machines for old OpenBLAS builds) slows numpy's and torch's copies:
# unset for the benchmark run only.
# The AOTI model cases time the models the AOTI tests compiled (the newest folder of .cache/aoti-models/),
# the oneDNN block's models of the op-fallback zoo (the newest op_model_zoo folder holding them; the tests
# compile only the small ones) and the whole architecture zoo (make test compiles a reduced one):
# `make bench-models` compiles the last two.
AOTI_MODELS = $(dir $(firstword $(shell ls -t .cache/aoti-models/*/pointwise.pt2 2>/dev/null)))
ONEDNN_MODELS = $(dir $(firstword $(shell ls -t .cache/aoti-models/op_model_zoo-*/onednn_bench_lstm.pt2 2>/dev/null)))
ZOO_MODELS = $(dir $(firstword $(shell ls -t .cache/aoti-models/arch_zoo-*/conv_decoder.pt2 2>/dev/null)))
_empty :=
_space := $(_empty) $(_empty)
BENCH_MODELS = $(subst $(_space),:,$(strip $(patsubst %/,%,$(AOTI_MODELS) $(ONEDNN_MODELS) $(ZOO_MODELS))))
bench-models: build-test
	$(TEST_VENV)/bin/python -c "import sys; sys.path[:0] = ['.', 'tests/aoti']; from tests.aoti._helpers import compile_models; \
	  from op_model_zoo import ONEDNN_BENCH_MODELS; print(compile_models(ONEDNN_BENCH_MODELS, zoo='op_model_zoo')); \
	  from tests.aoti.test_arch_zoo import ZOO; print(compile_models(sorted(ZOO), zoo='arch_zoo'))"
bench: build-test
	env -u OPENBLAS_CORETYPE $(if $(BENCH_MODELS),SLIMTENSOR_BENCH_AOTI_MODELS=$(BENCH_MODELS)) \
	  $(TEST_VENV)/bin/python -m slimtensor.bench --out benchmarks/results/latest.json

# The AOTI model, convolution and addmm cases alone (every zoo model, 1 and 2 threads): issue 12's targets.
bench-aoti: build-test
	env -u OPENBLAS_CORETYPE $(if $(BENCH_MODELS),SLIMTENSOR_BENCH_AOTI_MODELS=$(BENCH_MODELS)) \
	  $(TEST_VENV)/bin/python -m slimtensor.bench --filter aoti/model/ --filter aoti/conv/ --filter aoti/addmm/ \
	  --out benchmarks/results/aoti_cpu.json --targets

wheel: $(TEST_VENV)/.stamp
	$(TEST_VENV)/bin/python -m pip wheel $(PIP_FLAGS) --no-build-isolation --no-deps -w dist $(CORE)

clean:
	rm -rf build dist

distclean: clean
	rm -rf $(LAB_VENV) $(COMPILE_VENV) $(TEST_VENV)

# --- see the pictures in a real browser (not part of make test) -----------------------------------
# Starts JupyterLab, opens every notebook in headless Chromium (Debian's chromium + chromium-driver, installed
# with apt when we are root; never a downloaded browser), runs it, and saves a screenshot of each picture
# into build/browser-check/ (ignored by git; docs/images/browser_check.png is a reviewed copy, updated by hand).
BROWSER_CHECK_OUT := build/browser-check
.PHONY: browser-check lab-setup
browser-check: lab-setup
	@command -v chromedriver >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update -q && apt-get install -y -q chromium chromium-driver; \
	  else echo "make browser-check needs Chromium and its driver: run 'sudo apt-get install chromium chromium-driver' (Debian/Ubuntu)"; exit 1; fi; }
	$(LAB_VENV)/bin/python -m pip install $(PIP_FLAGS) selenium
	$(LAB_VENV)/bin/python tests/notebooks/browser_check.py --out-dir $(BROWSER_CHECK_OUT) notebooks/*.ipynb

# --- sanitizers and fuzzers (issue 14; docs/reliability.md) ----------------------------------------
# clang and its sanitizer runtimes come from Debian: apt-get install clang-14 libclang-rt-14-dev llvm-14.
CLANG_VER   ?= 14
CLANGXX     := clang++-$(CLANG_VER)
LLVM_BIN    := /usr/lib/llvm-$(CLANG_VER)/bin
FUZZ_BUILD  := build/fuzz
FUZZ_SAN    := -fsanitize=address,undefined,float-cast-overflow,alignment -fno-sanitize-recover=all -shared-libsan
FUZZ_FLAGS  := -g -O1 -fno-omit-frame-pointer $(FUZZ_SAN) -fsanitize=fuzzer-no-link -fprofile-instr-generate -fcoverage-mapping
FUZZ_TIME   ?= 1800
FUZZ_SMOKE  ?= 10
CLANG_RT    := $(shell dirname $$($(CLANGXX) -print-file-name=libclang_rt.asan-x86_64.so 2>/dev/null) 2>/dev/null)
FUZZ_ENV    := LD_LIBRARY_PATH=$(CLANG_RT) LD_PRELOAD=$(CLANG_RT)/libclang_rt.asan-x86_64.so ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:abort_on_error=1 \
               UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 LLVM_PROFILE_FILE=$(FUZZ_BUILD)/%p.profraw

.PHONY: fuzz-clang fuzz-build fuzz fuzz-one fuzz-py fuzz-coverage build-asan test-asan test-tsan reintroduce
fuzz-clang:
	@command -v $(CLANGXX) >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get install -y -q clang-$(CLANG_VER) libclang-rt-$(CLANG_VER)-dev llvm-$(CLANG_VER); \
	  else echo "the fuzzers need clang: sudo apt-get install clang-$(CLANG_VER) libclang-rt-$(CLANG_VER)-dev llvm-$(CLANG_VER)"; exit 1; fi; }

# libslimtensor with ASan + UBSan + libFuzzer edge coverage + source coverage, and the two C fuzzers.
fuzz-build: fuzz-clang $(TEST_VENV)/.stamp
	cmake -S $(CORE) -B $(FUZZ_BUILD)/core -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang-$(CLANG_VER) \
	  -DCMAKE_CXX_COMPILER=$(CLANGXX) -DPython_EXECUTABLE=$(abspath $(TEST_VENV))/bin/python \
	  "-DCMAKE_CXX_FLAGS=$(FUZZ_FLAGS)" "-DCMAKE_SHARED_LINKER_FLAGS=$(FUZZ_SAN) -fprofile-instr-generate" >/dev/null
	cmake --build $(FUZZ_BUILD)/core -j$(JOBS) --target slimtensor
	for f in shim dlpack; do $(CLANGXX) -std=c++17 $(FUZZ_FLAGS) -fsanitize=fuzzer tests/fuzz/$${f}_fuzzer.cpp \
	  -I$(CORE)/include $(FUZZ_BUILD)/core/libslimtensor.so -Wl,-rpath,$(abspath $(FUZZ_BUILD))/core \
	  -o $(FUZZ_BUILD)/$${f}_fuzzer || exit 1; done

# A fuzzer's run: FUZZER=shim|dlpack, FUZZ_TIME seconds, from (and adding to) tests/fuzz/corpus/<name>.
fuzz-one:
	mkdir -p $(FUZZ_BUILD)/corpus-$(FUZZER) && $(FUZZ_ENV) $(FUZZ_BUILD)/$(FUZZER)_fuzzer -max_total_time=$(FUZZ_TIME) \
	  -max_len=512 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/ $(FUZZ_BUILD)/corpus-$(FUZZER) tests/fuzz/corpus/$(FUZZER)

fuzz: fuzz-build
	$(MAKE) --no-print-directory fuzz-one FUZZER=shim
	$(MAKE) --no-print-directory fuzz-one FUZZER=dlpack
	$(MAKE) --no-print-directory fuzz-py FUZZ_PY_RUNS=-1 FUZZ_PY_TIME=$(FUZZ_TIME)

# Line coverage of the code the C fuzzers target, from the profiles their runs wrote (llvm-cov).
# (An empty .profraw, left by a run killed before exit, makes llvm-profdata fail with "No such file": skipped.)
fuzz-coverage:
	find $(FUZZ_BUILD) -maxdepth 1 -name '*.profraw' -empty -delete
	$(LLVM_BIN)/llvm-profdata merge -sparse $(FUZZ_BUILD)/*.profraw -o $(FUZZ_BUILD)/fuzz.profdata
	$(LLVM_BIN)/llvm-cov report $(FUZZ_BUILD)/core/libslimtensor.so -instr-profile=$(FUZZ_BUILD)/fuzz.profdata \
	  $(CORE)/src/aoti/handle.cpp $(CORE)/src/aoti/handle.h $(CORE)/src/aoti/getters.cpp $(CORE)/src/aoti/lifecycle.cpp \
	  $(CORE)/src/aoti/copies.cpp $(CORE)/src/aoti/scalars.cpp $(CORE)/src/aoti/dlpack_bridge.cpp \
	  $(CORE)/src/dlpack/codec.cpp $(CORE)/src/dlpack/types.cpp $(CORE)/src/dlpack/device_memory.cpp

# The Python differential fuzzer (atheris): view chains, copies and conversions against numpy.
FUZZ_PY_TIME ?= 10
FUZZ_PY_RUNS ?= -1
fuzz-py: build-test
	$(TEST_VENV)/bin/python -m pip install $(PIP_FLAGS) atheris
	$(TEST_VENV)/bin/python tests/fuzz/views_fuzzer.py -max_total_time=$(FUZZ_PY_TIME) -runs=$(FUZZ_PY_RUNS) \
	  -max_len=256 tests/fuzz/corpus/views

# Re-introduced bugs: each patch of tests/fuzz/reintroduced/ (one fixed finding of issue 14 put back) applied to a
# scratch copy of the tree (build/reintro/src), built (ASan+UBSan like build-asan, clang+libFuzzer like
# fuzz-build), and its detectors (regression tests, the sanitizers, a fuzzer from an empty corpus for
# REINTRO_FUZZ_TIME seconds) must fail; then reverted. Summary: build/reintro/summary.json.
REINTRO_FUZZ_TIME ?= 600
reintroduce: build-asan fuzz-build
	env REINTRO_ASAN_FLAGS="$(ASAN_CFLAGS)" REINTRO_ASAN_LINK="-fsanitize=address $(SAN_UB)" \
	  REINTRO_ASAN_ENV='$(ASAN_RUN)' REINTRO_FUZZ_ENV='$(FUZZ_ENV)' REINTRO_CC=clang-$(CLANG_VER) \
	  REINTRO_CXX=$(CLANGXX) REINTRO_FUZZ_FLAGS="$(FUZZ_FLAGS)" REINTRO_FUZZ_LINK="$(FUZZ_SAN) -fprofile-instr-generate" \
	  JOBS=$(JOBS) $(ASAN_VENV)/bin/python tests/fuzz/reintroduce.py --fuzz-time $(REINTRO_FUZZ_TIME) $(REINTRO_ARGS)

# --- make test-asan / test-tsan -------------------------------------------------------------------
# The core and slimtensor._C built with GCC's ASan + UBSan (float-cast-overflow and alignment included, no
# recovery) into .venv-asan (own build dir build/asan-*), and the whole suite run under them: libasan is
# preloaded into the Python process (it must come first), leaks are not reported for Python itself (the
# interpreter keeps its objects at exit) but are for the C++ test programs (LeakSanitizer on), and models are
# bound without RTLD_DEEPBIND, which ASan refuses (Note [Sanitizer binding] in slimtensor/aoti/_runtime.py).
ASAN_VENV  := .venv-asan
SAN_UB     := -fsanitize=undefined,float-cast-overflow,alignment -fno-sanitize-recover=all
ASAN_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address $(SAN_UB)
LIBASAN    = $(shell gcc -print-file-name=libasan.so)
# libstdc++ is preloaded right after libasan: Python is a C program, so when ASan starts no libstdc++ is
# loaded yet, its __cxa_throw interceptor finds no real __cxa_throw, and the first C++ exception thrown in
# the process (torch's TORCH_CHECK inside the oracle, or ours) aborts with "AddressSanitizer: CHECK failed:
# asan_interceptors.cpp: real___cxa_throw != 0" (under pytest's output capture the report is lost).
LIBSTDCXX  = $(shell gcc -print-file-name=libstdc++.so.6)
ASAN_RUN   = LD_PRELOAD="$(LIBASAN) $(LIBSTDCXX)" ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:abort_on_error=1:detect_odr_violation=0 \
             UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 SLIMTENSOR_CXX_SANITIZE="-fsanitize=address $(SAN_UB)" \
             SLIMTENSOR_CXX_ASAN_OPTIONS=detect_leaks=1
$(ASAN_VENV)/.stamp: requirements/test.txt requirements/build.txt | system-deps
	$(PYTHON) -m venv $(ASAN_VENV)
	$(ASAN_VENV)/bin/python -m pip install $(PIP_FLAGS) -r requirements/test.txt
	touch $@

# Both installs run with libasan preloaded: once the ASan-built package is installed, a rebuild's Python
# steps load it ("ASan runtime does not come first in initial library list" otherwise).
build-asan: $(ASAN_VENV)/.stamp
	env $(ASAN_RUN) $(ASAN_VENV)/bin/python -m pip install $(PIP_FLAGS) --no-build-isolation -Cbuild-dir=build/asan-{wheel_tag} \
	  -Ccmake.build-type=Debug "-Ccmake.define.CMAKE_CXX_FLAGS=$(ASAN_CFLAGS)" "-Ccmake.define.CMAKE_C_FLAGS=$(ASAN_CFLAGS)" \
	  "-Ccmake.define.CMAKE_SHARED_LINKER_FLAGS=-fsanitize=address $(SAN_UB)" "-Ccmake.define.CMAKE_MODULE_LINKER_FLAGS=-fsanitize=address $(SAN_UB)" \
	  -Ccmake.define.CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) -e $(CORE)
	@if [ -d $(TEST_PLUGIN) ]; then env $(ASAN_RUN) $(ASAN_VENV)/bin/python -m pip install $(PIP_FLAGS) --no-build-isolation \
	  -Cbuild-dir=build/asan-hostdev-{wheel_tag} "-Ccmake.define.CMAKE_CXX_FLAGS=$(ASAN_CFLAGS)" $(TEST_PLUGIN); fi

test-asan: build-asan
	time env $(ASAN_RUN) $(ASAN_VENV)/bin/python -m pytest -p no:cacheprovider $(PYTEST_ARGS)

# ThreadSanitizer: the core and slimtensor._C built with -fsanitize=thread into .venv-tsan (a venv that sees
# .venv-test's packages through a .pth line, so nothing is downloaded; its own slimtensor comes first); the C++
# thread stress program (tests/aoti/cpp/threads_stress.cpp: handles, copies, counters from many threads) run
# against its libslimtensor; then one AOTI model run from 4 threads at once, results checked
# (tests/aoti/tsan_model_threads.py; libtsan preloaded into Python; libgomp, not instrumented, suppressed:
# tests/aoti/tsan.supp). The model is the AOTI tests' compiled mlp.
TSAN_BUILD := build/tsan
TSAN_VENV  := .venv-tsan
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer -g
LIBTSAN    = $(shell gcc -print-file-name=libtsan.so)
TSAN_RUNS  ?= 20
PURELIB    := import sysconfig; print(sysconfig.get_path('purelib'))
$(TSAN_VENV)/.stamp: $(TEST_VENV)/.stamp
	$(PYTHON) -m venv $(TSAN_VENV)
	$(TEST_VENV)/bin/python -c "$(PURELIB)" > "$$($(TSAN_VENV)/bin/python -c "$(PURELIB)")/test_packages.pth"
	touch $@

test-tsan: $(TEST_VENV)/.stamp $(TSAN_VENV)/.stamp
	@# a rebuild's Python steps must not load the TSan-built package (libtsan is not preloaded there)
	$(TSAN_VENV)/bin/python -m pip uninstall -q -y slimtensor-core 2>/dev/null || true
	$(TSAN_VENV)/bin/python -m pip install $(PIP_FLAGS) --no-deps --no-build-isolation -Cbuild-dir=$(TSAN_BUILD)-{wheel_tag} \
	  -Ccmake.build-type=RelWithDebInfo "-Ccmake.define.CMAKE_CXX_FLAGS=$(TSAN_FLAGS)" "-Ccmake.define.CMAKE_C_FLAGS=$(TSAN_FLAGS)" \
	  "-Ccmake.define.CMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread" "-Ccmake.define.CMAKE_MODULE_LINKER_FLAGS=-fsanitize=thread" \
	  -Ccmake.define.CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) -e $(CORE)
	mkdir -p $(TSAN_BUILD) && lib=$$($(TSAN_VENV)/bin/python -c "$(PURELIB)")/slimtensor/lib/libslimtensor.so && \
	  g++ -std=c++17 -O1 -g -fsanitize=thread -pthread tests/aoti/cpp/threads_stress.cpp -I$(CORE)/include \
	  $$lib -Wl,-rpath,$$(dirname $$lib) -o $(TSAN_BUILD)/threads_stress
	time env TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(TSAN_BUILD)/threads_stress
	@test -n "$(AOTI_MODELS)" || { echo "no compiled test models in .cache/aoti-models: run the AOTI tests once (make test)"; exit 1; }
	time env LD_PRELOAD=$(LIBTSAN) TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(abspath tests/aoti/tsan.supp) \
	  $(TSAN_VENV)/bin/python tests/aoti/tsan_model_threads.py $(AOTI_MODELS) $(TSAN_RUNS)

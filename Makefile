# slimtensor developer verbs. The README's Quick start uses two of them: `make lab` and `make test`.
#
# Two virtual environments, so that the test-only plugin package never reaches the notebooks:
#   .venv       the lab environment (make lab): the packages, JupyterLab, a registered kernel
#   .venv-test  the test environment (make test): the packages, pytest, torch (oracle), the test plugin
# Both build the core from the same CMake build folder, so a C++ edit rebuilds incrementally.

PYTHON      ?= python3
JOBS        ?= 2
LAB_VENV    := .venv
TEST_VENV   := .venv-test
CORE        := packages/slimtensor-core
TEST_PLUGIN := tests/plugins/slimtensor-hostdev
CUDA_PLUGIN := packages/slimtensor-cuda
# nvcc on PATH, else the toolkit's default place; empty when there is none (the CUDA plugin is then skipped).
NVCC        := $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
KERNEL_NAME := slimtensor
PIP_FLAGS   := --disable-pip-version-check -q
# Explicit builds only: nothing rebuilds at import time (no import-time rebuild races).
BUILD_FLAGS := --no-build-isolation -Cbuild-dir=build/{wheel_tag} -Ccmake.define.CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS)
export CMAKE_BUILD_PARALLEL_LEVEL := $(JOBS)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: lab test build build-test system-deps stubs check-stubs lint format bench wheel clean distclean help

help:
	@echo "make lab        install the packages and open JupyterLab on notebooks/"
	@echo "make test       install what the tests need, build, run every test"
	@echo "make build      rebuild the core into both environments after a C++ edit"
	@echo "make stubs      regenerate the typing stubs of slimtensor._C"
	@echo "make lint       ruff, ruff format, clang-format and the stub check (make test runs it)"
	@echo "make format     apply ruff format and clang-format to the whole tree"
	@echo "make bench      run the full benchmark suite into benchmarks/results/"
	@echo "make wheel      build the core wheel into dist/"
	@echo "make browser-check  run notebook 01 in headless Chromium, screenshot to docs/images/"

# --- system packages ------------------------------------------------------------------------------
# The build needs a C++17 compiler; AOTInductor models need SLEEF (Debian's libsleef3: no PyPI package
# ships it, and the core wheel bundles the copy it finds at build time). Installed with apt when we are
# root and they are missing; otherwise the exact command is printed.
APT_PACKAGES := $(if $(shell command -v c++),,g++) $(if $(shell ldconfig -p 2>/dev/null | grep -F libsleef.so.3),,libsleef3)

system-deps:
	@if [ -n "$(strip $(APT_PACKAGES))" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(APT_PACKAGES); \
	  elif ! command -v c++ >/dev/null; then \
	    echo "slimtensor needs a C++17 compiler: run 'sudo apt-get install g++' (Debian/Ubuntu) or 'xcode-select --install' (macOS)"; exit 1; \
	  else \
	    echo "note: without SLEEF, AOTInductor models compile to scalar kernels; install it: sudo apt-get install libsleef3"; \
	  fi; \
	fi

# --- environments ---------------------------------------------------------------------------------
$(LAB_VENV)/.stamp: requirements/lab.txt requirements/build.txt | system-deps
	$(PYTHON) -m venv $(LAB_VENV)
	$(LAB_VENV)/bin/python -m pip install $(PIP_FLAGS) -r requirements/lab.txt
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
	$(call build_cuda,$(LAB_VENV))

build-test: $(TEST_VENV)/.stamp
	$(TEST_VENV)/bin/python -m pip install $(PIP_FLAGS) $(BUILD_FLAGS) -e $(CORE)
	@if [ -d $(TEST_PLUGIN) ]; then $(TEST_VENV)/bin/python -m pip install $(PIP_FLAGS) --no-build-isolation \
	  -Cbuild-dir=build/hostdev-{wheel_tag} $(TEST_PLUGIN); fi
	$(call build_cuda,$(TEST_VENV))

build: build-test
	@if [ -d $(LAB_VENV) ]; then $(MAKE) --no-print-directory build-lab; fi

# --- the two README commands ----------------------------------------------------------------------
lab: build-lab
	$(LAB_VENV)/bin/python -m ipykernel install --user --name $(KERNEL_NAME) --display-name "Python (slimtensor)" >/dev/null
	$(LAB_VENV)/bin/jupytext --sync notebooks/*.py >/dev/null 2>&1 || true
	$(LAB_VENV)/bin/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root)

test: build-test
	$(TEST_VENV)/bin/python -m pytest

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
C_SOURCES = git ls-files -z '*.c' '*.cpp' '*.h' '*.cu' '*.cuh' '*.mm'

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
bench: build-test
	env -u OPENBLAS_CORETYPE $(TEST_VENV)/bin/python -m slimtensor.bench --out benchmarks/results/latest.json

wheel: $(TEST_VENV)/.stamp
	$(TEST_VENV)/bin/python -m pip wheel $(PIP_FLAGS) --no-build-isolation --no-deps -w dist $(CORE)

clean:
	rm -rf build dist

distclean: clean
	rm -rf $(LAB_VENV) $(TEST_VENV)

# --- see the pictures in a real browser (not part of make test) -----------------------------------
# Starts JupyterLab, opens notebook 01 in headless Chromium (Debian's chromium + chromium-driver, installed
# with apt when we are root; never a downloaded browser), runs it, and saves docs/images/browser_check.png.
.PHONY: browser-check
browser-check: build-lab
	@command -v chromedriver >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update -q && apt-get install -y -q chromium chromium-driver; \
	  else echo "make browser-check needs Chromium and its driver: run 'sudo apt-get install chromium chromium-driver' (Debian/Ubuntu)"; exit 1; fi; }
	$(LAB_VENV)/bin/python -m pip install $(PIP_FLAGS) selenium
	$(LAB_VENV)/bin/python tests/notebooks/browser_check.py --notebook notebooks/01_strides_and_views.ipynb --out docs/images/browser_check.png

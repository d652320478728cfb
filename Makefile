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
KERNEL_NAME := slimtensor
# No -q: installs show what they collect, builds show CMake and ninja's [n/N] lines (BUILD_LOG).
PIP_FLAGS   := --disable-pip-version-check --progress-bar on
BUILD_LOG   := -v -Cbuild.verbose=true
# Explicit builds only: nothing rebuilds at import time (no import-time rebuild races).
BUILD_FLAGS := $(BUILD_LOG) --no-build-isolation -Cbuild-dir=build/{wheel_tag} -Ccmake.define.CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS)
export CMAKE_BUILD_PARALLEL_LEVEL := $(JOBS)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: lab test build build-test build-lab build-compile system-deps stubs check-stubs lint format bench wheel clean distclean help

help:
	@echo "make lab        install the packages and open JupyterLab on notebooks/"
	@echo "make test       install what the tests need, build, run every test"
	@echo "make build      rebuild the core into both environments after a C++ edit"
	@echo "make stubs      regenerate the typing stubs of slimtensor._C"
	@echo "make lint       ruff, ruff format, clang-format and the stub check (make test runs it)"
	@echo "make format     apply ruff format and clang-format to the whole tree"
	@echo "make bench      run the full benchmark suite into benchmarks/results/"
	@echo "make wheel      build the core wheel into dist/"
	@echo "make browser-check  run every notebook in headless Chromium, screenshots to build/browser-check/"

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

$(COMPILE_VENV)/.stamp: requirements/compile.txt requirements/build.txt | system-deps
	$(PYTHON) -m venv $(COMPILE_VENV)
	$(COMPILE_VENV)/bin/python -m pip install $(PIP_FLAGS) -r requirements/compile.txt
	touch $@

$(TEST_VENV)/.stamp: requirements/test.txt requirements/build.txt | system-deps
	$(PYTHON) -m venv $(TEST_VENV)
	$(TEST_VENV)/bin/python -m pip install $(PIP_FLAGS) -r requirements/test.txt
	touch $@

# --- builds ---------------------------------------------------------------------------------------
build-lab: $(LAB_VENV)/.stamp
	$(LAB_VENV)/bin/python -m pip install $(PIP_FLAGS) $(BUILD_FLAGS) -e $(CORE)

build-compile: $(COMPILE_VENV)/.stamp
	$(COMPILE_VENV)/bin/python -m pip install $(PIP_FLAGS) $(BUILD_FLAGS) -e $(CORE)

build-test: $(TEST_VENV)/.stamp
	$(TEST_VENV)/bin/python -m pip install $(PIP_FLAGS) $(BUILD_FLAGS) -e $(CORE)
	@if [ -d $(TEST_PLUGIN) ]; then $(TEST_VENV)/bin/python -m pip install $(PIP_FLAGS) --no-build-isolation \
	  -Cbuild-dir=build/hostdev-{wheel_tag} $(TEST_PLUGIN); fi

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
# The AOTI model cases time the models the AOTI tests compiled (the newest folder of .cache/aoti-models/).
AOTI_MODELS = $(dir $(firstword $(shell ls -t .cache/aoti-models/*/pointwise.pt2 2>/dev/null)))
bench: build-test
	env -u OPENBLAS_CORETYPE $(if $(AOTI_MODELS),SLIMTENSOR_BENCH_AOTI_MODELS=$(AOTI_MODELS)) \
	  $(TEST_VENV)/bin/python -m slimtensor.bench --out benchmarks/results/latest.json

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

# garden: make venv | make run | make test
PYTHON ?= python3
TORCH ?= torch==2.13.0
# Where torch comes from. Empty: pip's default index, which on Linux serves the CUDA build (GBs; it
# runs on CPU too). For the CPU-only wheel: make venv TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=
VENV ?= .venv
PY := $(VENV)/bin/python
PLUGINS := $(sort $(dir $(wildcard plugins/*/pyproject.toml)))
RUN_ARGS ?= model=vit task=classify model.variant=tiny

# The Poplar SDK's stack (constraints-sdk.txt): torch 2.0.1 and transformers 4.29.2 in a second venv.
SDK_VENV ?= .venv-sdk
SDK_PY := $(SDK_VENV)/bin/python
SDK_PLUGINS := $(filter-out plugins/graph/,$(PLUGINS))
# What an IPU run imports, checked for Python 3.8 (the SDK's) by vermin
SDK_SOURCES := garden $(addsuffix garden_*,$(SDK_PLUGINS)) tests/fake_poptorch

.PHONY: venv run test test-fast durations registry coverage clean venv-sdk test-sdk check-py38

venv: $(VENV)/.installed

# Torch first and pinned, so that garden's "torch>=..." is already met and pip pulls no other build;
# then garden (with the test, benchmark and exported-runtime extras) and every plugin under plugins/
# in editable mode, at the versions of constraints.txt.
# Re-runs only when a pyproject or this file changes.
$(VENV)/.installed: pyproject.toml constraints.txt $(addsuffix pyproject.toml,$(PLUGINS)) Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) "$(TORCH)"
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[dev,bench,onnx,openvino]" $(addprefix -e ,$(PLUGINS))
	touch $@

run: venv
	$(PY) -m garden $(RUN_ARGS)

# The suite spreads over the CPU's cores (pytest-xdist): most tests wait on a `python -m garden`
# subprocess, so two workers on two cores finish in about half the time. TEST_WORKERS=0: one process.
TEST_WORKERS ?= auto
test: venv
	$(PY) -m pytest -q -n $(TEST_WORKERS) --durations=30

# Before every commit: all but the slow, torchrun and browser tests (pyproject's markers; slow is
# every test over 1 s in tests/durations.json, see conftest.py).
test-fast: venv
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not slow and not distributed and not browser"

# The whole suite, recording each test's seconds in tests/durations.json (which test-fast reads)
durations: venv
	$(PY) -m pytest -q -n $(TEST_WORKERS) --record-durations tests/durations.json

venv-sdk: $(SDK_VENV)/.installed

# torch 2.0.1 first (numpy<2 with it), then garden and the transformers plugins without their
# dev extras, at the versions of constraints-sdk.txt.
$(SDK_VENV)/.installed: pyproject.toml constraints-sdk.txt $(addsuffix pyproject.toml,$(SDK_PLUGINS)) Makefile
	test -x $(SDK_PY) || $(PYTHON) -m venv $(SDK_VENV)
	$(SDK_PY) -m pip install --quiet --disable-pip-version-check -c constraints-sdk.txt torch numpy
	$(SDK_PY) -m pip install --quiet --disable-pip-version-check -c constraints-sdk.txt pytest pytest-timeout vermin \
		-e . $(addprefix -e ,$(SDK_PLUGINS))
	touch $@

# The IPU tests and a smoke run of each seed transformer family on the SDK's stack.
test-sdk: venv-sdk check-py38
	GARDEN_SDK_SMOKE=1 $(SDK_PY) -m pytest -q -p no:cacheprovider tests/test_sdk_stack.py tests/test_fake_poptorch.py \
		tests/test_ipu_backend.py tests/test_ipu_config.py

check-py38: venv-sdk
	$(SDK_VENV)/bin/vermin -t=3.8- --violations --no-tips $(SDK_SOURCES)

registry: venv
	$(PY) -m garden registry build

# Every architecture of transformers' Auto mappings for garden's tasks, checked with no plugin
# (model=hf:...): hours of CPU, so niced and resumable (a rerun skips what coverage-results.jsonl
# holds); writes coverage.json and docs/coverage.md. COVERAGE_ARGS=--tasks asr for one task.
coverage: venv
	nice -n 19 $(PY) -m garden coverage $(COVERAGE_ARGS)

clean:
	rm -rf $(VENV) $(SDK_VENV) outputs multirun

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

.PHONY: venv run test registry clean

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

test: venv
	$(PY) -m pytest -q

registry: venv
	$(PY) -m garden registry build

clean:
	rm -rf $(VENV) outputs multirun

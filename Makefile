# The two README commands: `make figures` and `make test`. Each sets up .venv itself.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
export SMETRIC_ROOT := $(CURDIR)

.PHONY: figures test bench venv clean

venv: $(STAMP)

# (Re)install when the venv is missing or pyproject.toml changed since the last install.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

figures: $(STAMP)
	$(VENV)/bin/smetric reproduce

# Unit tests plus every notebook under nbval, in quick mode (small sizes, same code paths).
# Quick-mode figures go to build/, never over the committed full-run figures/; sweeps run serially.
test: $(STAMP)
	SMETRIC_QUICK=1 SMETRIC_JOBS=1 SMETRIC_FIGURES=$(CURDIR)/build/figures-quick $(PY) -m pytest tests notebooks --nbval-lax -p no:cacheprovider

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf build .pytest_cache

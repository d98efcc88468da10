# The commands that matter. Each does its own setup (scripts/bootstrap.sh is idempotent).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export LLAMA_CPP_LIB_PATH := $(CURDIR)/.cache/llama-build/bin
export PATH := $(CURDIR)/.cache/llama-build/bin:$(PATH)

.PHONY: setup test test-fast lint plan bench app

setup:
	./scripts/bootstrap.sh full

## make test: install everything (first run builds llama.cpp, ~6-10 min) and run the whole suite
test: setup
	$(PY) -m pytest -q -rs $(PYTEST_ARGS)

## make test-fast: core tests only, no heavy runtimes
test-fast:
	./scripts/bootstrap.sh core
	$(PY) -m pip install -q pytest hypothesis
	$(PY) -m pytest -q -m "not requires_mlx and not requires_llama_cpp and not requires_browser" $(PYTEST_ARGS)

lint: setup
	$(PY) -m ruff check planner calibration app tests

plan:
	./plan $(ARGS)

bench: setup
	$(PY) benchmarks/cli_startup.py

## make app: the web form with charts on http://localhost:8501 (same as `plan app`)
app:
	./scripts/bootstrap.sh core
	$(PY) -c "import streamlit, plotly" 2>/dev/null || $(PY) -m pip install -q -e '.[app]'
	env -u HF_HUB_OFFLINE $(VENV)/bin/streamlit run app/streamlit_app.py --server.headless true --server.address 127.0.0.1 \
	  --browser.gatherUsageStats false --client.toolbarMode minimal

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
	$(PY) -m pytest -q -rsx $(PYTEST_ARGS)

## make test-fast: core tests only, no heavy runtimes (installs the light extras: hub readers, pytest, hypothesis)
test-fast:
	./scripts/bootstrap.sh core
	$(PY) -c "import gguf, huggingface_hub, pytest, hypothesis" 2>/dev/null || $(PY) -m pip install -q -e '.[hub,test]'
	$(PY) -m pytest -q -m "not requires_mlx and not requires_llama_cpp and not requires_browser and not requires_scipy and not slow" $(PYTEST_ARGS)

## make lint: ruff (imports, complexity, bugbear, pyupgrade) on everything, mypy on the core; nothing heavy
lint:
	./scripts/bootstrap.sh core
	$(PY) -c "import ruff, mypy" 2>/dev/null || $(PY) -m pip install -q -e '.[lint]'
	$(PY) -m ruff check planner sources cli calibration app tests scripts benchmarks
	$(PY) -m mypy planner

plan:
	./plan $(ARGS)

## make bench [LLMFIT=/tmp/llmfit-venv/bin/llmfit]: plan's start-up side by side with llmfit (see the script)
bench:
	./scripts/bootstrap.sh core
	$(PY) benchmarks/cli_startup.py $(if $(LLMFIT),--llmfit $(LLMFIT))

## make app: the web form with charts on http://localhost:8501 (same as `plan app`)
app:
	./scripts/bootstrap.sh core
	$(PY) -c "import streamlit, plotly" 2>/dev/null || $(PY) -m pip install -q -e '.[app]'
	env -u HF_HUB_OFFLINE $(VENV)/bin/streamlit run app/streamlit_app.py --server.headless true --server.address 127.0.0.1 \
	  --browser.gatherUsageStats false --client.toolbarMode minimal

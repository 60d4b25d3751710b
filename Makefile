# FedCARE developer entry points. `make run` and `make test` install what they need first.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATA_DIR ?= $(or $(FEDCARE_DATA_DIR),../shared/datasets)
OUT ?= results/diabetes130-fedcare.json

# Offline-friendly: no telemetry, no update checks.
export FLWR_TELEMETRY_ENABLED := 0
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PREFECT_CLI_PROMPT := false
export MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR := false
export DO_NOT_TRACK := 1

.PHONY: install run test lint typecheck unit slow bench clean

$(STAMP): pyproject.toml constraints/py311-linux.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -c constraints/py311-linux.txt -e ".[dev]"
	@touch $(STAMP)

install: $(STAMP)

# The main job: FedCARE on Diabetes 130-US, 10 clients, 100 rounds, seed 0. Uses the data in
# DATA_DIR when it exists, otherwise downloads the public archive into ~/.cache/fedcare.
run: $(STAMP)
	@if [ -e "$(DATA_DIR)" ]; then data="$(DATA_DIR)"; \
	else data="$$($(BIN)/fedcare data fetch diabetes130)" || exit 1; fi; \
	$(BIN)/fedcare run --dataset diabetes130 --data-dir "$$data" --clients 10 --rounds 100 \
		--seed 0 --out "$(OUT)"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	FEDCARE_DATA_DIR="$(DATA_DIR)" $(BIN)/python -m pytest -m "not slow" -q

test: lint typecheck unit

slow: $(STAMP)
	FEDCARE_DATA_DIR="$(DATA_DIR)" $(BIN)/python -m pytest -m slow -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_min_norm.py --out docs/benchmarks/min_norm.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

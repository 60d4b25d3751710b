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

# `make run` passes these to `prefect deployment run` (e.g. RUN_PARAMS='-p rounds=5') and these
# to `fedcare stack` (e.g. STACK_ARGS='--prefect-port 4300 --mlflow-port 5300').
RUN_PARAMS ?=
STACK_ARGS ?=
export MLFLOW_DISABLE_TELEMETRY := true
export GX_ANALYTICS_ENABLED := false

.PHONY: install run run-direct stack-up stack-down stack-status test lint typecheck unit slow journey \
	bench bench-stage2 bench-dask bench-commands screenshot clean

$(STAMP): pyproject.toml constraints/py311-linux.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -c constraints/py311-linux.txt -e ".[dev]"
	@touch $(STAMP)

install: $(STAMP)

# The main job: bring the local stack up (Prefect server, worker, deployments, MLflow server) and
# run the `fedcare/full-experiment` deployment (Diabetes 130-US, 10 clients, 100 rounds, seed 0)
# on the data in DATA_DIR (downloaded into ~/.cache/fedcare when DATA_DIR does not exist), wait
# for it (`fedcare stack run`: Prefect's --watch, with a state poll beside it), and say where the
# UIs are (MLflow's: the experiment's runs in the UI's "Model training" mode, not its GenAI
# home). Exits non-zero if the flow run fails. The stack stays up for the UIs: `make stack-down`
# stops it.
MLFLOW_PAGE = import sys; from fedcare.tracking.store import experiment_page; \
	print(experiment_page(sys.argv[1], "diabetes130"))
run: $(STAMP)
	@if [ -e "$(DATA_DIR)" ]; then data="$$(realpath "$(DATA_DIR)")"; \
	else data="$$($(BIN)/fedcare data fetch diabetes130)" || exit 1; fi; \
	$(BIN)/fedcare stack up --data-dir "$$data" $(STACK_ARGS) || exit 1; \
	eval "$$($(BIN)/fedcare stack env $(STACK_ARGS))"; \
	$(BIN)/fedcare stack run fedcare/full-experiment $(STACK_ARGS) -p data_dir="$$data" \
		$(RUN_PARAMS); rc=$$?; \
	echo; echo "Prefect UI: $${PREFECT_API_URL%/api}"; \
	echo "MLflow UI:  $$($(BIN)/python -c '$(MLFLOW_PAGE)' "$$MLFLOW_TRACKING_URI" 2>/dev/null \
		|| echo "$$MLFLOW_TRACKING_URI")"; \
	echo "Stop the stack with: make stack-down"; \
	exit $$rc

# The same experiment in this process, without Prefect or MLflow (writes results JSON only).
run-direct: $(STAMP)
	@if [ -e "$(DATA_DIR)" ]; then data="$(DATA_DIR)"; \
	else data="$$($(BIN)/fedcare data fetch diabetes130)" || exit 1; fi; \
	$(BIN)/fedcare run --dataset diabetes130 --data-dir "$$data" --clients 10 --rounds 100 \
		--seed 0 --out "$(OUT)"

stack-up: $(STAMP)
	@data="$$(realpath "$(DATA_DIR)" 2>/dev/null || echo "$(DATA_DIR)")"; \
	$(BIN)/fedcare stack up --data-dir "$$data" $(STACK_ARGS)

stack-down:
	@if [ -x $(BIN)/fedcare ]; then $(BIN)/fedcare stack down $(STACK_ARGS); fi

stack-status: $(STAMP)
	$(BIN)/fedcare stack status $(STACK_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The unit and slow suites run on TEST_WORKERS pytest-xdist processes (2: CI's cores);
# TEST_WORKERS=0 runs them in this process. A module whose tests share an expensive
# module-scoped fixture marks itself xdist_group: its tests run on one worker, the fixture once.
TEST_WORKERS ?= 2
unit: $(STAMP)
	FEDCARE_DATA_DIR="$(DATA_DIR)" $(BIN)/python -m pytest -m "not slow" -q -n $(TEST_WORKERS) \
		--dist loadgroup

test: lint typecheck unit

slow: $(STAMP)
	FEDCARE_DATA_DIR="$(DATA_DIR)" $(BIN)/python -m pytest -m "slow and not journey" -q \
		-n $(TEST_WORKERS) --dist loadgroup --durations=15

# Every bash block of README.md, in order, on a fresh clone (FEDCARE_QUICK=1; tests/e2e/test_readme.py).
journey: $(STAMP)
	FEDCARE_DATA_DIR="$(DATA_DIR)" $(BIN)/python -m pytest -m journey -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_min_norm.py --out docs/benchmarks/min_norm.md
	$(BIN)/python benchmarks/bench_dropout.py --out docs/benchmarks/dropout.md
	$(BIN)/python benchmarks/bench_local_step.py --out docs/benchmarks/local_step.md

bench-stage2: $(STAMP)
	FEDCARE_DATA_DIR="$(DATA_DIR)" $(BIN)/python benchmarks/bench_stage2_parallel.py

# An experiment grid on a local Dask cluster with one worker, then two (docs/benchmarks/dask_grid.md).
bench-dask: $(STAMP)
	FEDCARE_DATA_DIR="$(DATA_DIR)" $(BIN)/python benchmarks/bench_dask_grid.py

# fedcare --help/--version, predict (1,000 rows) and site prepare (30,000 rows): median wall times
# (docs/BENCHMARKS.md, "Fast commands"); BASELINE=<another checkout> compares with it.
bench-commands: $(STAMP)
	FEDCARE_DATA_DIR="$(DATA_DIR)" $(BIN)/python benchmarks/bench_commands.py \
		--out docs/benchmarks/commands.md $(if $(BASELINE),--baseline "$(BASELINE)")

# Headless Chromium screenshot of the MLflow UI (needs the stack up and a finished run).
screenshot: $(STAMP)
	$(BIN)/python scripts/mlflow_screenshot.py --out docs/mlflow_ui.png --width 2000 --height 1100
	$(BIN)/python scripts/mlflow_screenshot.py --page compare --search test/ --width 2000 --height 1100 --out docs/mlflow_compare_metrics.png
	$(BIN)/python scripts/mlflow_screenshot.py --page table --width 2000 --height 1100 --out docs/mlflow_runs_table.png
	$(BIN)/python scripts/mlflow_screenshot.py --page registry --width 2000 --height 1100 --out docs/mlflow_registry.png
	$(BIN)/python scripts/mlflow_screenshot.py --page version --width 2000 --height 1100 --out docs/mlflow_model_version.png
	$(BIN)/python scripts/mlflow_screenshot.py --page card --width 1600 --height 1100 --out docs/mlflow_model_card.png

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

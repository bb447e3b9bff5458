# One entry point for people and CI. Every target installs what it needs into .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: plan test test-gpu lint bench golden clean install

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## plan: plan the bundled vLLM PR #50488 example (EAGLE K=16, 32 requests) and show its gap and fix
plan: $(STAMP)
	$(BIN)/cgplan plan configs/examples/pr50488-eagle-k16.yaml

## test: the CPU test suite (golden data from vLLM's own code, property tests, CLI tests)
test: $(STAMP)
	$(BIN)/python -m pytest -m "not gpu"

test-gpu: $(STAMP)
	$(BIN)/python -m pytest -m gpu

lint: $(STAMP)
	$(BIN)/ruff check cgplan tests scripts benchmarks
	$(BIN)/ruff format --check cgplan tests scripts benchmarks
	$(BIN)/mypy cgplan

## bench: plan-speed benchmark (cgplan vs vLLM's own code through the oracle when available)
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_plan.py --out benchmarks/results/plan-speed.json

## golden: re-record vLLM's answers for the corpus (needs the oracle venvs, see scripts/record_golden.py)
golden:
	$(PY) scripts/record_golden.py --venv-root $${ORACLE_VENVS:-.cache} tests/data/corpus/*.yaml

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

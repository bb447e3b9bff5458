# One entry point for people and CI. Every target installs what it needs into .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help plan test test-gpu lint bench golden oracle-venvs clean install gate-examples ci fuzz mutate

# EXTRAS=dev,ray adds Ray (what .ci/run installs: the Ray path of `capture` runs in CI, else skips)
EXTRAS ?= dev
$(STAMP): pyproject.toml constraints-dev.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[$(EXTRAS)]' -c constraints-dev.txt
	touch $(STAMP)

## help: list the targets (this text)
help:
	@awk '/^## / { sub(/^## /, ""); split($$0, a, ": "); if (a[2] != "") printf "  %-14s %s\n", a[1], substr($$0, length(a[1]) + 3); else printf "  %-14s %s\n", "", $$0 }' $(MAKEFILE_LIST)

## install: the editable install with the dev tools (pinned: constraints-dev.txt), in .venv
install: $(STAMP)

## plan: plan the bundled vllm#50488 example (EAGLE K=16, 32 requests) and show its gap and fix
plan: $(STAMP)
	$(BIN)/cgplan plan configs/examples/pr50488-eagle-k16.yaml

## test: the CPU test suite (golden data from vLLM's own code, property tests, CLI tests)
test: $(STAMP)
	$(BIN)/python -m pytest -m "not gpu and not fuzz"

## gate-examples: the project's own serving configs must pass the default CI gate;
## the vllm#50488 example must fail it (31-32 requests eager on Hopper)
GATED := configs/gpu/tiny-nospec.yaml configs/gpu/tiny-eagle-k16-max544.yaml configs/gpu/med-llama-mns256.yaml \
	configs/gpu/llama8b-mns256.yaml configs/gpu/llama8b-eagle-k3-mns64.yaml configs/examples/mtp-dsv3-k3.yaml
gate-examples: $(STAMP)
	mkdir -p .cache
	PYTHON=$(BIN)/python scripts/cgplan-gate --policy configs/gates/default.yaml \
		--junit .cache/gate-junit.xml --json .cache/gate-verdict.json $(GATED)
	PYTHON=$(BIN)/python scripts/cgplan-gate configs/examples/pr50488-eagle-k16.yaml >/dev/null; test $$? -eq 1

## ci: what CI runs (.ci/run): lint, test, gate-examples
ci: lint test gate-examples

## test-gpu: the GPU tests (needs a CUDA GPU and the gpu extra)
test-gpu: $(STAMP)
	$(BIN)/python -m pytest -m gpu

## lint: ruff check, ruff format --check (cgplan, tests, scripts, benchmarks), mypy --strict (cgplan, tests),
## the layers (which library and which cgplan layer each file may import; the core stdlib only and pure)
lint: $(STAMP)
	$(BIN)/ruff check cgplan tests scripts benchmarks
	$(BIN)/ruff format --check cgplan tests scripts benchmarks
	$(BIN)/mypy cgplan tests
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/project/test_layers.py tests/project/test_import_boundaries.py

## bench: plan-speed benchmark (cgplan vs vLLM's own code through the oracle, paired; set
## ORACLE_PYTHON=.cache/venv-0.33.0/bin/python (make oracle-venvs), else that side is "not measured")
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_plan.py --out benchmarks/results/plan-speed.json
	$(BIN)/python benchmarks/bench_optimize.py --out benchmarks/results/optimize.json
	$(BIN)/python benchmarks/bench_hooks.py --out benchmarks/results/hooks.json

## oracle-venvs: one CPU-only vLLM venv per supported release in .cache/venv-X (git-ignored; ~2 GB each)
ORACLE_VENVS ?= .cache
VLLM_VERSIONS := $(shell $(PY) -c "import sys; sys.path.insert(0, '.'); from cgplan.core.vllm.releases import SUPPORTED_VERSIONS as v; print(*v)")
oracle-venvs:
	@for v in $(VLLM_VERSIONS); do \
		test -x $(ORACLE_VENVS)/venv-$$v/bin/python || scripts/oracle/setup-venv.sh $$v $(ORACLE_VENVS)/venv-$$v || exit 1; \
	done

## golden: re-record vLLM's answers for the corpus and its `vllm serve` flags with vLLM's own code
## (scripts/oracle/, scripts/record_golden.py)
golden: oracle-venvs
	$(PY) scripts/record_golden.py --venv-root $(ORACLE_VENVS) tests/data/corpus/*.yaml
	$(PY) scripts/record_golden.py --venv-root $(ORACLE_VENVS) --out-dir tests/data/oracle-deploy \
		tests/data/corpus-deploy/*.yaml
	for v in $(VLLM_VERSIONS); do \
		$(ORACLE_VENVS)/venv-$$v/bin/python scripts/oracle/serve_flags.py > tests/data/oracle-serve-flags/$$v.json || exit 1; \
	done

## clean: remove .venv and the test caches
clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

## fuzz: the full fuzz run (32,000 inputs over every file kind: configs, reports, policies, --set strings,
## side files, logs, trust) through the CLI in-process, one in 100 also as its own process, and the fleet
## and streams kinds (fleet folders, output streams) each as its own process (docs/fuzzing.md);
## no traceback, exit 0/1/2 with one located error line, bounded time and memory per input.
## Writes benchmarks/results/fuzz.json (FUZZ_SEED=N replays a run; FUZZ_JOBS=N runs N processes).
FUZZ_JOBS ?= 1
fuzz: $(STAMP)
	@seed=$${FUZZ_SEED:-$$($(BIN)/python -c 'import random; print(random.randrange(2**32))')}; \
	echo "FUZZ_SEED=$$seed FUZZ_JOBS=$(FUZZ_JOBS)"; pids=""; \
	for i in $$(seq 0 $$(($(FUZZ_JOBS) - 1))); do \
		FUZZ_SEED=$$seed FUZZ_JOBS=$(FUZZ_JOBS) FUZZ_SHARD=$$i/$(FUZZ_JOBS) \
			$(BIN)/python -m pytest -m fuzz tests/fuzz -p no:cacheprovider -q & pids="$$pids $$!"; \
	done; rc=0; for p in $$pids; do wait $$p || rc=1; done; exit $$rc

## mutate: seeded AST mutants of the rule modules, the fix search (gaps), the gate and the log parser, each
## run against the tests that cover it in private tree copies (docs/mutation.md); writes
## benchmarks/results/mutation.json (MUTATE_SEED=N, MUTATE_PER_MODULE=N, MUTATE_JOBS=N)
MUTATE_SEED ?= 35
MUTATE_PER_MODULE ?= 6
MUTATE_JOBS ?= 2
mutate: $(STAMP)
	$(BIN)/python scripts/mutate.py --seed $(MUTATE_SEED) --per-module $(MUTATE_PER_MODULE) --jobs $(MUTATE_JOBS)

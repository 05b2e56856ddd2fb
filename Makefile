# craps-streams: `make run` (the floor, live) and `make test` (everything CI runs).
SHELL := /bin/bash
PYTHON ?= python3
TABLES ?= 8
HOURS ?= 2
SEED ?= 1

.PHONY: install run test test-unit bench replay-demo

install:
	@$(PYTHON) -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v 'Running pip as the' || true

# A simulated floor settled by the rules core, printing the floor's settlement summary.
run: install
	@mkdir -p out
	craps-streams simulate --tables $(TABLES) --hours $(HOURS) --seed $(SEED) --bad-rate 0.01 \
	  | craps-streams replay - --only settlements,alerts -o out/settlements.jsonl
	@echo "settlements and alerts: out/settlements.jsonl"

test: install
	$(PYTHON) -m pytest -q

test-unit: install
	$(PYTHON) -m pytest -q -m 'not kafka and not slow'

bench: install
	$(PYTHON) benchmarks/core_replay.py

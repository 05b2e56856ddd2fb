# craps-streams: `make run` (the floor, live) and `make test` (everything CI runs).
SHELL := /bin/bash
PYTHON ?= python3
TABLES ?= 8
HOURS ?= 2
SEED ?= 1

.PHONY: install run test test-unit bench kafka-up kafka-down replay-demo

install:
	$(PYTHON) -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[test]'
	infra/floor/fetch-assets.sh

# The main job: Kafka, a worker, the floor view, Prometheus and a simulated floor fed live (infra/run-floor.sh).
run: install
	bash infra/run-floor.sh

# Offline: a simulated floor settled by the rules core, printing the settlement summary.
replay-demo: install
	@mkdir -p out
	craps-streams simulate --tables $(TABLES) --hours $(HOURS) --seed $(SEED) --bad-rate 0.01 \
	  | craps-streams replay - --only settlements,alerts -o out/settlements.jsonl
	@echo "settlements and alerts: out/settlements.jsonl"

kafka-up:
	@infra/kafka/kafka.sh fetch
	@infra/kafka/kafka.sh status >/dev/null 2>&1 || infra/kafka/kafka.sh up

kafka-down:
	@infra/kafka/kafka.sh stop

# Everything CI runs: unit, property, codec, rules and the pipeline tests on the real broker.
test: install kafka-up
	$(PYTHON) -m pytest -q

test-unit: install
	$(PYTHON) -m pytest -q -m 'not kafka and not slow'

bench: install
	$(PYTHON) benchmarks/core_replay.py

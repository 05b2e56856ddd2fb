# craps-streams: `make run` (the floor, live) and `make test` (everything CI runs).
SHELL := /bin/bash
PYTHON ?= python3
TABLES ?= 8
HOURS ?= 2
SEED ?= 1
# Kafka nodes for run, kafka-up and kafka-down: 1, or 3 for a local cluster (docs/operating/cluster.md).
NODES ?= 1

.PHONY: install run test test-unit explore bench kafka-up kafka-down replay-demo faults

install:
	$(PYTHON) -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[test]'
	PYTHON=$(PYTHON) bash native/build.sh
	infra/floor/fetch-assets.sh

# The main job: Kafka, a worker, the floor view, Prometheus and a simulated floor fed live (infra/run-floor.sh).
# infra/setup.sh installs what a fresh Debian machine lacks (Java, Maven, Prometheus, the jars, Chart.js).
run:
	@bash infra/setup.sh run
	NODES=$(NODES) bash infra/run-floor.sh

# Offline: a simulated floor settled by the rules core, printing the settlement summary.
replay-demo: install
	@mkdir -p out
	craps-streams simulate --tables $(TABLES) --hours $(HOURS) --seed $(SEED) --bad-rate 0.01 \
	  | craps-streams replay - --only settlements,alerts -o out/settlements.jsonl
	@echo "settlements and alerts: out/settlements.jsonl"

kafka-up:
	@infra/kafka/kafka.sh fetch
	@infra/kafka/kafka.sh status --nodes $(NODES) >/dev/null 2>&1 || infra/kafka/kafka.sh up --nodes $(NODES)

kafka-down:
	@infra/kafka/kafka.sh stop --nodes $(NODES)

# Everything CI runs: unit, property, codec, rules and the pipeline tests on the real broker,
# which infra/test.sh starts if needed and stops again (about 10 minutes on 2 cores).
test:
	@bash infra/setup.sh test
	bash infra/test.sh

test-unit: install
	$(PYTHON) -m pytest -q -m 'not kafka and not slow'

# The property tests with random seeds and SCALE times CI's examples (tests/exploration.py): what
# it finds is pinned as an @example. Not part of CI, which is derandomized.
SCALE ?= 20
explore: install
	HYPOTHESIS_PROFILE=explore CRAPS_EXPLORE_SCALE=$(SCALE) $(PYTHON) -m pytest -q -m 'not kafka and not slow' \
	  tests/rules tests/app tests/codec tests/odds tests/surveillance

bench: install
	$(PYTHON) benchmarks/core_replay.py

# The cluster fault drills, each on a three-node cluster of its own (about 3 minutes each; not CI,
# which runs the busiest leader's kill -9 in tests/faults/test_cluster.py): docs/reliability/cluster.md.
DRILLS ?= leader controller rolling frozen disk
faults:
	@bash infra/setup.sh run
	$(PYTHON) -m tests.faults.drills $(DRILLS)
